"""Abstention ("no tool fits", route/abstain.py) through the Router, the bench runner, the
gateway core and the CLI, with a deterministic embedder and a hand-set model over its cosines;
and the shipped model's file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from tests.conftest import SMALL_CATALOG, HashingEmbedder
from toolroute import cli
from toolroute.bench.runner import bench
from toolroute.catalog import catalog_from_dict
from toolroute.catalog.loader import Query
from toolroute.errors import ConfigError
from toolroute.gateway.core import GatewayCore
from toolroute.route import abstain
from toolroute.route.abstain import FEATURES, AbstainModel, default_model, load_model, signals
from toolroute.route.strategy import RouteParams
from toolroute.router import Router

FAR = "pay my electricity bill before friday"  # no word of it is in any tool's text
NEAR = "what time is it in Tokyo"


def _model(threshold: float = 0.5, embedder: str = HashingEmbedder.model_id) -> AbstainModel:
    """p rises with the top five tools' word coverage alone: p 0.12 when they hold none of
    the request's words, 0.5 at a fifth of them (hashed cosines are noisy at this size)."""
    weights = tuple(10.0 if f == "lex_cov5" else 0.0 for f in FEATURES)
    return AbstainModel(
        features=FEATURES,
        mean=(0.0,) * len(FEATURES),
        scale=(1.0,) * len(FEATURES),
        weights=weights,
        bias=-2.0,
        thresholds={"default": threshold, "strict": min(1.0, threshold + 0.2)},
        embedder=embedder,
    )


def _router(tmp_path: Path, **params: Any) -> Router:
    r = Router(
        catalog_from_dict(SMALL_CATALOG),
        store=tmp_path / "store",
        embedder=HashingEmbedder(),
        params=RouteParams(**params),
    )
    r.index()
    return r


def test_a_request_no_tool_serves_gets_no_tools_and_a_verdict_naming_the_nearest_servers(
    tmp_path: Path,
) -> None:
    with _router(tmp_path, abstain_model=_model()) as r:
        notes: dict[str, Any] = {}
        assert r.route(FAR, k=3, notes=notes) == []
        verdict = notes["abstain"]
        assert not verdict.fits and verdict.probability < verdict.threshold
        answer = verdict.to_dict()
        assert answer["no_tool_fits"] is True and answer["hint"]
        assert set(answer["nearest_servers"]) <= {s["id"] for s in SMALL_CATALOG["servers"]}
        assert answer["nearest_servers"]
        assert set(verdict.explain()["signals"]) == set(FEATURES)
        # a request a tool serves is ranked as before, with the check in the notes
        notes = {}
        top = r.route(NEAR, k=3, notes=notes)
        assert (top[0].server, top[0].tool) == ("time", "get_current_time")
        assert notes["abstain"].fits


def test_a_request_naming_a_tool_is_never_refused(tmp_path: Path) -> None:
    with _router(tmp_path, abstain_model=_model(threshold=1.0)) as r:  # refuses everything
        assert r.route("pay my bill with get_current_time", k=1)[0].tool == "get_current_time"
        assert r.route("read my horoscope", k=1) == []


def test_abstention_off_and_strategies_that_do_not_abstain_always_rank(tmp_path: Path) -> None:
    with _router(tmp_path, abstain_model=_model(), abstain="off") as r:
        assert r.route(FAR, k=2)
    with _router(tmp_path, abstain_model=_model()) as r:
        assert r.route(FAR, k=2, strategy="adaptive")  # default's ranking, without abstention
        assert r.route(FAR, k=2, strategy="hybrid")


def test_strict_refuses_what_default_still_answers(tmp_path: Path) -> None:
    model = _model(threshold=0.0)  # default never refuses, strict below p 0.2
    with _router(tmp_path, abstain_model=model) as r:
        assert r.route(FAR, k=2)
    with _router(tmp_path, abstain_model=model, abstain="strict") as r:
        assert r.route(FAR, k=2) == []


def test_a_model_fitted_on_another_embedder_is_not_applied(tmp_path: Path) -> None:
    with _router(tmp_path, abstain_model=_model(threshold=1.0, embedder="other/model")) as r:
        notes: dict[str, Any] = {}
        assert r.route(FAR, k=2, notes=notes)
        assert "abstain" not in notes


def test_coverage_signals_fall_when_the_request_holds_words_no_tool_has(tmp_path: Path) -> None:
    with _router(tmp_path, abstain="off") as r:
        ix = r.built

        def sig(text: str) -> dict[str, float]:
            ctx = r.query_context(text)
            return signals(ix, ctx, r.scores(text, "default"))

        served, far = sig("read the contents of a file"), sig(FAR)
        assert served["lex_cov1"] == pytest.approx(1.0) and served["vocab_cov"] == 1.0
        assert far["lex_cov5"] == 0.0 and far["vocab_cov"] == 0.0
        assert served["cos1"] > far["cos1"]
        assert served["action_ok"] == 1.0  # "read" asked, read_file first
        # the leading verb against the top tools' names: "read" names read_file; no tool's
        # name buys; a question has no leading verb
        assert served["verb_named"] == 1.0 and served["verb_ok"] == 1.0
        assert sig("please buy the file from the directory")["verb_named"] == 0.0
        assert sig("what is in this directory")["verb_named"] == 0.5


def test_bench_reports_the_false_positive_rate_beside_recall(tmp_path: Path) -> None:
    queries = [
        Query("in", NEAR, (frozenset({("time", "get_current_time")}),), "simple"),
        Query("out1", FAR, (), "simple"),
        Query("out2", "book a haircut for saturday morning", (), "simple"),
    ]
    with _router(tmp_path, abstain_model=_model()) as r:
        res = bench(r, queries, ["default", "hybrid"])
    assert res["hybrid"]["fp_rate"] == 1.0 and res["default"]["fp_rate"] == 0.0
    assert res["default"]["out_of_scope"] == 2 and res["default"]["queries"] == 1
    assert res["default"]["recall@1"] == res["hybrid"]["recall@1"] == 1.0


def test_find_tools_answers_no_tool_fits_with_the_nearest_servers(tmp_path: Path) -> None:
    with _router(tmp_path, abstain_model=_model()) as r:
        core = GatewayCore(r, k=3)
        found = core.find(FAR, 3)
        assert found["candidates"] == [] and found["no_tool_fits"] is True
        assert found["nearest_servers"] and "rephrase" in found["hint"]
        assert "no_tool_fits" not in core.find(NEAR, 3)


def test_the_shipped_model_loads_and_is_fitted_on_the_default_embedder() -> None:
    from toolroute.embed.onnx import DEFAULT_MODEL_ID

    model = default_model()
    assert set(model.features) <= set(FEATURES) and model.embedder == DEFAULT_MODEL_ID
    assert 0.0 <= model.thresholds["default"] <= model.thresholds["strict"] <= 1.0
    assert len(model.trained_on) >= 5
    x = np.array(model.mean)  # the training data's mean request
    assert 0.0 < model.probability(x) < 1.0


def test_an_unusable_model_file_is_one_config_error(tmp_path: Path) -> None:
    bad = tmp_path / "m.json"
    bad.write_text(json.dumps({"features": ["cos1"], "mean": [0.0]}))
    with pytest.raises(ConfigError, match="not an abstention model"):
        load_model(bad)
    bad.write_text(json.dumps({**_model().to_dict(), "features": ["nope"] * len(FEATURES)}))
    with pytest.raises(ConfigError, match="features"):
        load_model(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        load_model(tmp_path / "missing.json")
    good = tmp_path / "good.json"
    good.write_text(json.dumps(_model().to_dict()))
    assert load_model(good) == _model()


def test_route_says_no_tool_fits_and_explain_shows_the_check(
    tmp_path: Path, catalog_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolroute.embed.onnx

    monkeypatch.setattr(toolroute.embed.onnx, "OnnxEmbedder", HashingEmbedder)
    monkeypatch.setattr(abstain, "default_model", lambda: _model())
    store = str(tmp_path / "s")
    base = ["route", "--catalog", str(catalog_file), "--store", store]
    res = CliRunner().invoke(cli.main, [*base, FAR, "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout) == []
    assert "no tool fits" in res.stderr and "nearest servers" in res.stderr
    res = CliRunner().invoke(cli.main, [*base, NEAR, "--explain"])
    assert res.exit_code == 0 and "abstention (default): p(fits)" in res.stdout
    assert "a tool fits" in res.stdout and "cos1" in res.stdout
    res = CliRunner().invoke(cli.main, [*base, FAR, "--abstain", "off", "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)
