"""Abstention ("no tool fits", route/abstain.py) through the Router, the bench runner, the
gateway core and the CLI, with a deterministic embedder and a hand-set model over its cosines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.conftest import SMALL_CATALOG, HashingEmbedder
from tests.helpers.abstain import FAR, HAND_SET, NEAR, hand_model, small_router
from toolroute import cli
from toolroute.bench.runner import bench
from toolroute.catalog.loader import Query
from toolroute.gateway.find import Finder
from toolroute.gateway.shared import Shared
from toolroute.route import abstain
from toolroute.settings import ToolrouteSettings


def test_a_request_no_tool_serves_gets_no_tools_and_a_verdict_naming_the_nearest_servers(
    tmp_path: Path,
) -> None:
    with small_router(tmp_path, abstain_model=hand_model()) as r:
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
    with small_router(tmp_path, abstain_model=hand_model(threshold=1.0)) as r:  # refuses everything
        assert r.route("pay my bill with get_current_time", k=1)[0].tool == "get_current_time"
        assert r.route("read my horoscope", k=1) == []


def test_abstention_off_and_strategies_that_do_not_abstain_always_rank(tmp_path: Path) -> None:
    with small_router(tmp_path, abstain_model=hand_model(), abstain="off") as r:
        assert r.route(FAR, k=2)
    with small_router(tmp_path, abstain_model=hand_model()) as r:
        assert r.route(FAR, k=2, strategy="adaptive")  # default's ranking, without abstention
        assert r.route(FAR, k=2, strategy="hybrid")


def test_strict_refuses_what_default_still_answers(tmp_path: Path) -> None:
    model = hand_model(threshold=0.0)  # default never refuses, strict below p 0.2
    with small_router(tmp_path, abstain_model=model) as r:
        assert r.route(FAR, k=2)
    with small_router(tmp_path, abstain_model=model, abstain="strict") as r:
        assert r.route(FAR, k=2) == []


def test_an_answer_strict_would_refuse_goes_out_with_a_caution(
    tmp_path: Path, catalog_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = hand_model(threshold=0.0)  # default never refuses, strict below p 0.2
    with small_router(tmp_path, abstain_model=model) as r:
        notes: dict[str, Any] = {}
        assert r.route(FAR, k=2, notes=notes)
        verdict = notes["abstain"]
        assert verdict.fits and verdict.doubtful and verdict.explain()["doubtful"]
        found = Finder(Shared(r, settings=ToolrouteSettings(k=3))).find(FAR, 3)
        assert found["candidates"] and found["doubtful_fit"] is True
        assert "request_capability" in found["hint"] and found["p_fits"] < 0.2
        assert "no_tool_fits" not in found
        # a request the top tools' words cover is answered plainly
        notes = {}
        assert r.route(NEAR, k=2, notes=notes) and not notes["abstain"].doubtful
        assert "doubtful_fit" not in Finder(Shared(r, settings=ToolrouteSettings(k=3))).find(
            NEAR, 3
        )
    with small_router(tmp_path, abstain_model=model, abstain="strict") as r:
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
    model = hand_model(threshold=1.0, embedder="other/model")
    with small_router(tmp_path, abstain_model=model) as r:
        notes: dict[str, Any] = {}
        assert r.route(FAR, k=2, notes=notes)
        assert "abstain" not in notes


def test_without_a_model_the_shipped_one_of_the_index_embedder_is_applied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the default embedder's model does not fit this index; another shipped one (plain
    # MiniLM's, for who selects it) does, and is the one applied
    fitted = hand_model(threshold=1.0)
    monkeypatch.setattr(abstain, "default_model", lambda: hand_model(embedder="other/model"))
    monkeypatch.setattr(
        abstain, "shipped_model", lambda e: fitted if e == fitted.embedder else None
    )
    with small_router(tmp_path) as r:
        notes: dict[str, Any] = {}
        assert not r.route(FAR, k=2, notes=notes)
        assert notes["abstain"].threshold == 1.0
    monkeypatch.setattr(abstain, "shipped_model", lambda e: None)
    with small_router(tmp_path) as r:
        notes = {}
        assert r.route(FAR, k=2, notes=notes) and "abstain" not in notes


def test_bench_reports_the_false_positive_rate_beside_recall(tmp_path: Path) -> None:
    queries = [
        Query("in", NEAR, (frozenset({("time", "get_current_time")}),), "simple"),
        Query("out1", FAR, (), "simple"),
        Query("out2", "book a haircut for saturday morning", (), "simple"),
    ]
    with small_router(tmp_path, abstain_model=hand_model()) as r:
        res = bench(r, queries, ["default", "hybrid"])
    assert res["hybrid"]["fp_rate"] == 1.0 and res["default"]["fp_rate"] == 0.0
    assert res["default"]["out_of_scope"] == 2 and res["default"]["queries"] == 1
    assert res["default"]["recall@1"] == res["hybrid"]["recall@1"] == 1.0


def test_find_tools_answers_no_tool_fits_with_the_nearest_servers(tmp_path: Path) -> None:
    with small_router(tmp_path, abstain_model=hand_model()) as r:
        finder = Finder(Shared(r, settings=ToolrouteSettings(k=3)))
        found = finder.find(FAR, 3)
        assert found["candidates"] == [] and found["no_tool_fits"] is True
        assert found["nearest_servers"] and "rephrase" in found["hint"]
        assert "no_tool_fits" not in finder.find(NEAR, 3)


def test_route_says_no_tool_fits_and_explain_shows_the_check(
    tmp_path: Path, catalog_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolroute.router

    monkeypatch.setattr(toolroute.router, "OnnxEmbedder", HashingEmbedder)
    monkeypatch.setattr(abstain, "default_model", lambda: hand_model())
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
