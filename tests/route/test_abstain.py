"""Abstention ("no tool fits", route/abstain.py) through the Router, the bench runner, the
gateway core and the CLI, with a deterministic embedder and a hand-set model over its cosines;
and the shipped model's file."""

from __future__ import annotations

import json
from dataclasses import replace
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
from toolroute.route.operation import request_verbs, server_does, server_names
from toolroute.route.strategy import RouteParams
from toolroute.router import Router
from toolroute.settings import ToolrouteSettings

FAR = "pay my electricity bill before friday"  # no word of it is in any tool's text
NEAR = "what time is it in Tokyo"


HAND_SET = tuple(f for f in FEATURES if f != "oos_gap")  # every signal that needs no requests


def _model(threshold: float = 0.5, embedder: str = HashingEmbedder.model_id) -> AbstainModel:
    """p rises with the top five tools' word coverage alone: p 0.12 when they hold none of
    the request's words, 0.5 at a fifth of them (hashed cosines are noisy at this size)."""
    weights = tuple(10.0 if f == "lex_cov5" else 0.0 for f in HAND_SET)
    return AbstainModel(
        features=HAND_SET,
        mean=(0.0,) * len(HAND_SET),
        scale=(1.0,) * len(HAND_SET),
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
        assert set(verdict.explain()["signals"]) == set(HAND_SET)
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


def test_an_answer_strict_would_refuse_goes_out_with_a_caution(
    tmp_path: Path, catalog_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _model(threshold=0.0)  # default never refuses, strict below p 0.2
    with _router(tmp_path, abstain_model=model) as r:
        notes: dict[str, Any] = {}
        assert r.route(FAR, k=2, notes=notes)
        verdict = notes["abstain"]
        assert verdict.fits and verdict.doubtful and verdict.explain()["doubtful"]
        found = GatewayCore(r, settings=ToolrouteSettings(k=3)).find(FAR, 3)
        assert found["candidates"] and found["doubtful_fit"] is True
        assert "request_capability" in found["hint"] and found["p_fits"] < 0.2
        assert "no_tool_fits" not in found
        # a request the top tools' words cover is answered plainly
        notes = {}
        assert r.route(NEAR, k=2, notes=notes) and not notes["abstain"].doubtful
        assert "doubtful_fit" not in GatewayCore(r, settings=ToolrouteSettings(k=3)).find(NEAR, 3)
    with _router(tmp_path, abstain_model=model, abstain="strict") as r:
        notes = {}
        assert r.route(NEAR, k=2, notes=notes) and not notes["abstain"].doubtful
    # the CLI says it on stderr and keeps the table; --explain names it
    import toolroute.router

    monkeypatch.setattr(toolroute.router, "OnnxEmbedder", HashingEmbedder)
    monkeypatch.setattr(abstain, "default_model", lambda: model)
    base = ["route", "--catalog", str(catalog_file), "--store", str(tmp_path / "s")]
    res = CliRunner().invoke(cli.main, [*base, FAR])
    assert res.exit_code == 0 and "doubtful fit" in res.stderr and res.stdout
    res = CliRunner().invoke(cli.main, [*base, FAR, "--explain"])
    assert res.exit_code == 0 and "a doubtful fit" in res.stdout


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
        core = GatewayCore(r, settings=ToolrouteSettings(k=3))
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
    bad.write_text(json.dumps({**_model().to_dict(), "features": ["nope"] * len(FEATURES)}))
    with pytest.raises(ConfigError, match="features"):
        load_model(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        load_model(tmp_path / "missing.json")
    good = tmp_path / "good.json"
    good.write_text(json.dumps(_model().to_dict()))
    assert load_model(good) == _model()
    # oos_gap needs the requests it compares with: named, readable, a matrix
    reads_gap = {**_model().to_dict(), "features": ["cos1", "oos_gap"], "mean": [0.0, 0.0]}
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


def test_route_says_no_tool_fits_and_explain_shows_the_check(
    tmp_path: Path, catalog_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolroute.router

    monkeypatch.setattr(toolroute.router, "OnnxEmbedder", HashingEmbedder)
    monkeypatch.setattr(abstain, "default_model", lambda: _model())
    store = str(tmp_path / "s")
    base = ["route", "--catalog", str(catalog_file), "--store", store]
    res = CliRunner().invoke(cli.main, [*base, FAR, "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout) == []
    assert "no tool fits" in res.stderr and "nearest servers" in res.stderr
    # as a table: the refusal on stderr, and no empty table on stdout
    res = CliRunner().invoke(cli.main, [*base, FAR])
    assert res.exit_code == 0 and res.stdout == "" and "no tool fits" in res.stderr
    res = CliRunner().invoke(cli.main, [*base, NEAR, "--explain"])
    assert res.exit_code == 0 and "abstention (default): p(fits)" in res.stdout
    assert "a tool fits" in res.stdout and "cos1" in res.stdout
    res = CliRunner().invoke(cli.main, [*base, FAR, "--abstain", "off", "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)


def test_request_verbs_are_the_operations_asked_unless_information_is_asked() -> None:
    assert request_verbs("Push my local commits to the origin remote.") == ("push",)
    assert request_verbs("Please book a table for two, then pay the deposit") == ("book", "pay")
    # asking for information is served by reading: nothing to check
    assert request_verbs("What is the weather in Oslo?") == ()
    assert request_verbs("I want to buy running shoes, can you find the cheapest?") == ()
    # a statement, a noun or a gerund opens no imperative
    assert request_verbs("My recipe says 350F") == ()
    assert request_verbs("Planning a trip to Yosemite") == ()
    assert request_verbs("Information about tides in Lisbon") == ()
    # known words that are never a verb's base form open nothing; unknown ones may be verbs
    assert request_verbs("Specifically, durable boots in size 9") == ()
    assert request_verbs("I bought shares yesterday") == ()
    assert request_verbs("Rebase my branch onto main, then upvote the PR") == ("rebase", "upvote")
    # a run of letters no verb is that long opens nothing (nor is it embedded as a verb)
    assert request_verbs("x" * 10_000 + " the file") == ()
    # a dot or colon inside a token ends no clause
    assert request_verbs("When does example.org expire? Renew it at 10:30") == ("renew",)


def test_a_server_does_the_operations_its_tools_name_or_describe(tmp_path: Path) -> None:
    with _router(tmp_path, abstain="off") as r:
        ix = r.built
        fs, time_server = ix.server_ids.index("fs"), ix.server_ids.index("time")
        assert server_does(ix, fs, "write") and server_does(ix, fs, "writes")
        assert server_does(ix, fs, "save")  # write_file's action class (create)
        assert not server_does(ix, fs, "push") and not server_does(ix, time_server, "write")
        assert server_does(ix, time_server, "converting")

        def sig(text: str) -> dict[str, float]:
            return signals(ix, r.query_context(text), r.scores(text, "default"))

        pushed = sig("push the file to the origin remote")
        assert pushed["op_server"] == 0.0 and pushed["op_top"] == 0.0
        assert sig("write a file with these notes")["op_server"] == 1.0
        assert sig("what is in this directory")["op_server"] == 0.5
        # names alone: write_file names "write", and "save" only by its action class
        assert server_names(ix, fs, "write") and not server_names(ix, fs, "save")
        assert sig("write a file with these notes")["op_named"] == 1.0
        assert pushed["op_named"] == 0.0 and pushed["op_named_top"] == 0.0

        def verb_sim(text: str) -> float:
            ctx = replace(r.query_context(text), embed=r.embedder.embed)
            return signals(ix, ctx, r.scores(text, "default"), features=("verb_sim",))["verb_sim"]

        # the request's verb against the verbs of the top servers' tool names
        assert verb_sim("write a file with these notes") == pytest.approx(1.0, abs=1e-5)
        assert verb_sim("push the file to the origin remote") < 0.9
        assert verb_sim("what is in this directory") == 1.0  # information: nothing to check


def test_oos_gap_is_how_much_closer_known_out_of_scope_requests_are_than_the_best_tool(
    tmp_path: Path,
) -> None:
    with _router(tmp_path, abstain="off") as r:
        ix = r.built
        known = np.asarray(r.embedder.embed([FAR, "book a haircut", "order a pizza"]))

        def gap(text: str) -> float:
            ctx = r.query_context(text)
            return signals(ix, ctx, r.scores(text, "default"), known)["oos_gap"]

        assert gap(FAR) > gap("read the contents of a file")
        ctx = r.query_context(FAR)
        sig = signals(ix, ctx, r.scores(FAR, "default"), known)
        sims = np.sort(known @ ctx.vector)
        assert sig["oos_gap"] == pytest.approx(float(sims.mean()) - sig["cos1"], abs=1e-5)
        assert signals(ix, ctx, r.scores(FAR, "default"))["oos_gap"] == 0.0  # no requests


def test_the_check_reads_the_strategy_s_cosines_only_for_its_own_vector(tmp_path: Path) -> None:
    from toolroute.route.stage import multi

    with _router(tmp_path, abstain="off") as r:
        ix = r.built
        ctx = r.query_context(NEAR)
        scores = r.scores(NEAR, "default")
        multi(ix, ctx, RouteParams())  # the stage keeps its cosines, keyed by the vector
        kept_vector, kept = ctx.memo["dense"]
        assert kept_vector is ctx.vector and np.allclose(kept, ix.tool_vectors @ ctx.vector)
        marked = np.zeros(ix.size, dtype=np.float32)
        marked[0] = 0.5
        ctx.memo["dense"] = (ctx.vector, marked)  # read, not recomputed
        assert signals(ix, ctx, scores, features=("cos1",))["cos1"] == pytest.approx(0.5)
        # a sub-query's cosines (another vector) are not taken for the request's
        ctx.memo["dense"] = (ctx.vector.copy(), marked)
        fresh = float((ix.tool_vectors @ ctx.vector).max())
        assert signals(ix, ctx, scores, features=("cos1",))["cos1"] == pytest.approx(fresh)


def test_posting_lists_are_ascending(tmp_path: Path) -> None:
    with _router(tmp_path, abstain="off") as r:
        lex = r.built.tool_lexical
        for word in ("file", "time", "the", "weather", "a"):
            docs = lex.postings(word)
            assert docs.size and bool(np.all(np.diff(docs) > 0))
