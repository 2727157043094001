from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from tests.conftest import HashingEmbedder
from toolroute import Router
from toolroute.route import strategy as st
from toolroute.route.fusion import (
    FEATURES,
    FEATURES_V3,
    FusionModel,
    candidate_features,
    default_ranks,
    fused_scores,
    load_model,
    position_features,
    third_model,
)


def _v3(weights: dict[str, float], pool: int = 30) -> FusionModel:
    n = len(FEATURES_V3)
    coef = np.array([weights.get(f, 0.0) for f in FEATURES_V3])
    return FusionModel(np.zeros(n), np.ones(n), coef, 0.0, pool=pool, features=FEATURES_V3)


def test_position_features_hold_ranks_top_five_flags_and_within_pool_z_scores() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, len(FEATURES)))
    steps_rank = np.arange(1, 9)
    x[:, FEATURES.index("steps_rank")] = 1.0 / np.log2(steps_rank + 1.0)
    ranks = np.array([3.0, 1, 2, 9, 4, 5, 6, 12])
    out = position_features(x, ranks)
    names = FEATURES_V3[len(FEATURES) :]
    assert out.shape == (8, len(names))
    col = dict(zip(names, out.T, strict=True))
    assert np.argmax(col["default_rank"]) == 1 and np.argmin(col["default_rank"]) == 7
    assert list(col["default_top5"]) == [1, 1, 1, 0, 1, 1, 0, 0]
    assert list(col["steps_top5"]) == [1, 1, 1, 1, 1, 0, 0, 0]
    z = col["dense_z"]
    assert abs(z.mean()) < 1e-9 and abs(z.std() - 1.0) < 1e-9
    # a z-score does not move when the whole pool's scores shift and stretch
    shifted = x.copy()
    shifted[:, FEATURES.index("dense")] = 3.0 * x[:, FEATURES.index("dense")] + 7.0
    assert np.allclose(position_features(shifted, ranks)[:, names.index("dense_z")], z)


def test_default_ranks_are_the_pooled_tools_places_in_defaults_order(
    tmp_path: Path, catalog_file: Path
) -> None:
    with Router(catalog_file, store=tmp_path / "s", embedder=HashingEmbedder()) as r:
        ix = r.built
        q = replace(r.query_context("read a file and list a directory", "intent-spans"))
        q = replace(q, embed=r.embedder.embed)
        rows, _, s = candidate_features(ix, q, r.params)
        got = default_ranks(ix, q, r.params, s, rows)
        d = np.asarray(st.resolve_strategy("default").score(ix, q, r.params), dtype=np.float64)
        order = [int(j) for j in np.argsort(-d, kind="stable") if np.isfinite(d[j])]
        for j, rank in zip(rows, got, strict=True):
            assert rank == order.index(int(j)) + 1


def test_a_v3_model_weighing_only_defaults_rank_keeps_defaults_order_on_its_pool(
    tmp_path: Path, catalog_file: Path
) -> None:
    m = _v3({"default_rank": 1.0})
    path = tmp_path / "m.json"
    path.write_text(json.dumps(m.to_json()))
    back = load_model(path)
    assert back.features == FEATURES_V3 and back.version == 3
    with Router(catalog_file, store=tmp_path / "s", embedder=HashingEmbedder()) as r:
        ix = r.built
        q = replace(r.query_context("write text to a file", "intent-spans"), embed=r.embedder.embed)
        out = fused_scores(ix, q, r.params, back)
        d = np.asarray(st.resolve_strategy("default").score(ix, q, r.params))
        top = [int(j) for j in np.argsort(-d, kind="stable")[:5]]
        assert [int(j) for j in np.argsort(-out, kind="stable")[:5]] == top
        # the opposite weight turns the pool upside down: the model, not steps, orders it
        flipped = fused_scores(ix, q, r.params, _v3({"default_rank": -1.0}))
        assert int(np.argmax(flipped)) != top[0]


def test_an_anchor_pulls_the_pool_toward_defaults_order_and_survives_the_file(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(6, len(FEATURES_V3)))
    dense, rank = FEATURES_V3.index("dense"), FEATURES_V3.index("default_rank")
    x[:, dense] = np.arange(6.0)  # the logit's order: last row first
    x[:, rank] = 1.0 / np.log2(np.arange(1, 7) + 1.0)  # default's order: first row first
    free = _v3({"dense": 1.0})
    assert int(np.argmax(free.pool_scores(x))) == 5
    held = replace(free, anchor=10.0)
    assert int(np.argmax(held.pool_scores(x))) == 0
    half = replace(free, anchor=1.0).pool_scores(x)
    z = (x[:, dense] - x[:, dense].mean()) / x[:, dense].std()
    r = (x[:, rank] - x[:, rank].mean()) / x[:, rank].std()
    assert np.allclose(half, z + r)
    path = tmp_path / "m.json"
    path.write_text(json.dumps(held.to_json()))
    assert load_model(path).anchor == 10.0


def test_the_shipped_v3_model_is_anchored_and_routes_the_small_catalog(
    tmp_path: Path, catalog_file: Path
) -> None:
    m = third_model()
    assert m.features == FEATURES_V3 and m.anchor > 0 and np.any(m.coef != 0)
    assert dict(m.provenance)["script"] == "benchmarks/train_fusion_v3.py"
    with Router(catalog_file, store=tmp_path / "s", embedder=HashingEmbedder()) as r:
        got = r.route("what is the current time in a timezone", k=1, strategy="fusion3")
        assert got[0].tool == "get_current_time"
