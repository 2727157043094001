"""The abstention model (route/abstain_model.py): the shipped one, boosted trees, and what a
user's own model file may not be."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.helpers.abstain import hand_model
from toolroute.errors import ConfigError
from toolroute.route.abstain_model import default_model, load_model
from toolroute.route.abstain_signals import FEATURES


def test_the_shipped_model_loads_and_is_fitted_on_the_default_embedder() -> None:
    from toolroute.embed.onnx import DEFAULT_MODEL_ID

    model = default_model()
    assert set(model.features) <= set(FEATURES) and model.embedder == DEFAULT_MODEL_ID
    assert 0.0 <= model.thresholds["default"] <= model.thresholds["strict"] <= 1.0
    assert len(model.trained_on) >= 5
    # boosted trees: a request every signal calls served fits, one none does does not
    assert model.trees and all(t.leaf[0] is False for t in model.trees)
    served = {"cos1": 0.8, "flat1": 0.8, "server1": 0.6, "oos_gap": -0.5, "chat_gap": -0.5}
    stranger = {"cos1": 0.15, "flat1": 0.15, "server1": 0.1, "oos_gap": 0.3, "chat_gap": 0.2}
    ones = {f: 1.0 for f in model.features}
    p_served = model.probability(np.array([served.get(f, ones[f]) for f in model.features]))
    zeros = {f: 0.0 for f in model.features}
    p_stranger = model.probability(np.array([stranger.get(f, zeros[f]) for f in model.features]))
    assert p_stranger < model.thresholds["default"] < p_served
    # the out-of-scope requests oos_gap reads ship beside it, as unit vectors of the model
    assert "oos_gap" in model.features and model.requests is not None
    assert model.requests.shape[0] >= 100 and model.requests.shape[1] == 384
    assert np.allclose(np.linalg.norm(model.requests, axis=1), 1.0, atol=1e-3)


def test_plain_minilm_keeps_its_own_shipped_model() -> None:
    from toolroute.embed.onnx import DEFAULT_MODEL_ID, MINILM_MODEL_ID
    from toolroute.route.abstain_model import shipped_model

    minilm = shipped_model(MINILM_MODEL_ID)
    assert minilm is not None and minilm.embedder == MINILM_MODEL_ID
    assert minilm.trees and minilm.requests is not None and minilm.requests.shape[1] == 384
    assert shipped_model(DEFAULT_MODEL_ID) is default_model()
    assert shipped_model("some/other-model") is None


def _stump(feature: int, at: float, low: float, high: float) -> dict[str, list[Any]]:
    return {
        "feature": [feature, 0, 0],
        "threshold": [at, 0.0, 0.0],
        "left": [1, 0, 0],
        "right": [2, 0, 0],
        "value": [0.0, low, high],
        "leaf": [False, True, True],
        "missing_left": [True, False, False],
    }


def test_a_tree_model_adds_its_leaves_to_the_bias(tmp_path: Path) -> None:
    raw = {
        "format": 3,
        "features": ["cos1", "lex_cov5"],
        "bias": -1.0,
        "trees": [_stump(0, 0.5, -1.0, 2.0), _stump(1, 0.2, 0.0, 0.5)],
        "thresholds": {"default": 0.5, "strict": 0.6},
    }
    path = tmp_path / "m.json"
    path.write_text(json.dumps(raw))
    model = load_model(path)
    sigmoid = lambda z: 1.0 / (1.0 + np.exp(-z))  # noqa: E731
    assert model.probability(np.array([0.9, 0.1])) == pytest.approx(sigmoid(-1.0 + 2.0 + 0.0))
    assert model.probability(np.array([0.1, 0.9])) == pytest.approx(sigmoid(-1.0 - 1.0 + 0.5))
    # a missing signal goes where the split says
    assert model.probability(np.array([np.nan, 0.9])) == pytest.approx(sigmoid(-1.5))
    # it writes back what it read
    assert load_model(path).to_dict() == model.to_dict() and model.to_dict()["format"] == 3
    # nodes that point backwards or past the end, or split on a feature it lacks
    for broken in ({"left": [0, 0, 0]}, {"right": [9, 0, 0]}, {"feature": [5, 0, 0]}):
        bad = {**raw, "trees": [{**_stump(0, 0.5, -1.0, 2.0), **broken}]}
        path.write_text(json.dumps(bad))
        with pytest.raises(ConfigError, match="not an abstention model"):
            load_model(path)


def test_an_unusable_model_file_is_one_config_error(tmp_path: Path) -> None:
    bad = tmp_path / "m.json"
    bad.write_text(json.dumps({"features": ["cos1"], "mean": [0.0]}))
    with pytest.raises(ConfigError, match="not an abstention model"):
        load_model(bad)
    bad.write_text(json.dumps({**hand_model().to_dict(), "features": ["nope"] * len(FEATURES)}))
    with pytest.raises(ConfigError, match="features"):
        load_model(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        load_model(tmp_path / "missing.json")
    good = tmp_path / "good.json"
    good.write_text(json.dumps(hand_model().to_dict()))
    assert load_model(good) == hand_model()
    # oos_gap needs the requests it compares with: named, readable, a matrix
    reads_gap = {**hand_model().to_dict(), "features": ["cos1", "oos_gap"], "mean": [0.0, 0.0]}
    reads_gap |= {"scale": [1.0, 1.0], "weights": [1.0, 1.0]}
    bad.write_text(json.dumps(reads_gap))
    with pytest.raises(ConfigError, match="names no requests file"):
        load_model(bad)
    bad.write_text(json.dumps({**reads_gap, "requests": "r.npy"}))
    with pytest.raises(ConfigError, match="cannot read its requests"):
        load_model(bad)
    np.save(tmp_path / "r.npy", np.zeros(3))
    with pytest.raises(ConfigError, match="not a matrix"):
        load_model(bad)
    np.save(tmp_path / "r.npy", np.array([[3.0, 4.0]], dtype=np.float16))
    model = load_model(bad)
    assert model.requests is not None and np.allclose(model.requests, [[0.6, 0.8]], atol=1e-3)
