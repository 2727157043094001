from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import HashingEmbedder, tool
from toolroute import Router
from toolroute.errors import ConfigError
from toolroute.index.fields import FIELDS, field_index, stem_text
from toolroute.route.fusion import (
    FEATURES,
    FusionModel,
    candidate_features,
    default_model,
    fused_scores,
    load_model,
)

pytestmark = pytest.mark.usefixtures("research_variants")


def _model(weights: dict[str, float], pool: int = 30) -> FusionModel:
    n = len(FEATURES)
    coef = np.array([weights.get(f, 0.0) for f in FEATURES])
    return FusionModel(np.zeros(n), np.ones(n), coef, 0.0, pool=pool)


def test_a_model_file_round_trips_and_a_foreign_feature_list_is_refused(tmp_path: Path) -> None:
    m = _model({"dense": 1.5, "bm25_name": -0.25})
    path = tmp_path / "m.json"
    path.write_text(json.dumps(m.to_json()))
    back = load_model(path)
    assert np.allclose(back.coef, m.coef) and back.pool == m.pool
    data = m.to_json()
    data["features"] = data["features"][:-1]
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="features"):
        load_model(path)
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="cannot read"):
        load_model(path)


def test_the_shipped_model_loads_and_weighs_every_feature() -> None:
    m = default_model()
    assert m.coef.shape == (len(FEATURES),) and np.any(m.coef != 0)
    assert dict(m.provenance)["script"] == "benchmarks/train_fusion.py"


def test_fusion_ranks_its_pool_by_the_model_and_the_rest_below(
    tmp_path: Path, catalog_file: Path
) -> None:
    with Router(catalog_file, store=tmp_path / "s", embedder=HashingEmbedder()) as r:
        ix = r.built
        q = replace(
            r.query_context("write text to a file", "intent-spans"),
            embed=r.embedder.embed,
        )
        rows, x, steps = candidate_features(ix, q, r.params, pool=2)
        assert x.shape == (len(rows), len(FEATURES))
        # a model that only reads the name field's BM25 orders the pool by it
        m = _model({"bm25_name": 1.0}, pool=2)
        out = fused_scores(ix, q, r.params, m)
        col = x[:, FEATURES.index("bm25_name")]
        assert ix.tools[int(rows[np.argmax(col)])].name == "write_file"
        assert int(np.argmax(out)) == int(rows[np.argmax(col)])


def test_tools_outside_the_pool_rank_below_it_in_steps_order(tmp_path: Path) -> None:
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta"]
    tools = [
        tool(f"tool_{i}", f"{words[i % 8]} {words[(i // 8) % 8]} record number {i}")
        for i in range(64)
    ]
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"servers": [{"id": "s", "name": "S", "tools": tools}]}))
    with Router(path, store=tmp_path / "s", embedder=HashingEmbedder()) as r:
        ix = r.built
        q = replace(r.query_context("alpha gamma record", "intent-spans"), embed=r.embedder.embed)
        rows, _, steps = candidate_features(ix, q, r.params, pool=2)
        out = fused_scores(ix, q, r.params, _model({"dense": 1.0}, pool=2))
        outside = np.setdiff1d(np.arange(ix.size), rows)
        assert outside.size and out[outside].max() < out[rows].min()
        by_fused = outside[np.argsort(-out[outside], kind="stable")]
        assert np.all(np.diff(steps[by_fused]) <= 1e-6)  # steps' order (float32 ties aside)


def test_fusion_strategy_routes_the_small_catalog(tmp_path: Path, catalog_file: Path) -> None:
    with Router(catalog_file, store=tmp_path / "s", embedder=HashingEmbedder()) as r:
        assert r.route("what is the current time in a timezone", k=1, strategy="fusion")[
            0
        ].tool == ("get_current_time")


def test_stemmed_field_matches_word_forms_the_plain_tokenizer_does_not(
    tmp_path: Path, catalog_file: Path
) -> None:
    assert stem_text("Searching files") == "search file"
    with Router(catalog_file, store=tmp_path / "s", embedder=HashingEmbedder()) as r:
        ix = r.built
        s = field_index(ix).scores("listing directories")
        assert set(s) == set(FIELDS)
        row = [t.name for t in ix.tools].index("list_directory")
        assert int(np.argmax(s["stemmed"])) == row
        assert ix.tool_lexical.scores("listing directories")[row] == 0.0


def test_bm25s_tokenizer_keeps_identifiers_whole_and_drops_stopwords() -> None:
    from toolroute.index.fields import StopwordLexical

    assert StopwordLexical.tokens("Get the weather with get_weather in a city") == [
        "get",
        "weather",
        "get_weather",
        "city",
    ]
    lex = StopwordLexical(["the weather of a city", "the stock price", "a file on a disk"])
    s = lex.scores("what is the weather")
    assert s[0] > 0 and s[1] == s[2] == 0
    assert not lex.scores("what is the").any()  # stopwords only: no evidence
