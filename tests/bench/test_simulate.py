"""The EHRR economics simulation (seed 000 §V): world, common random numbers, end to end on the
small catalog (the agents' counting rules: tests/bench/test_agent.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import SMALL_CATALOG, HashingEmbedder
from toolroute import Router, load_queries
from toolroute.bench.agent import ORACLE_ROUTER
from toolroute.bench.simulate import run_simulation, simulate
from toolroute.bench.simulation import METRICS, REGRET, ci95
from toolroute.bench.simulation_report import markdown_table, write_simulation_outputs
from toolroute.bench.world import World, WorldParams, call_outcome, price_tier
from toolroute.catalog import Catalog, Query, Server, Tool, catalog_from_dict
from toolroute.errors import ConfigError

SMALL = catalog_from_dict(SMALL_CATALOG)


def _big_catalog(servers: int = 200, tools: int = 10) -> Catalog:
    """Every other server is a web-search one (high tier), the rest local file tools."""
    out = []
    for i in range(servers):
        web = i % 2 == 0
        desc = "Performs a web search and returns results" if web else "Reads a local file"
        sid = f"s{i}"
        ts = tuple(Tool(sid, f"t{j}", desc) for j in range(tools))
        out.append(Server(sid, f"Server {i}", "", ts))
    return Catalog(servers=tuple(out))


# -- the world ---------------------------------------------------------------------------------


def test_world_is_the_same_for_a_seed_and_differs_across_seeds() -> None:
    a, b, c = World.draw(SMALL, 7), World.draw(SMALL, 7), World.draw(SMALL, 8)
    for field in ("price", "success", "fail_prob", "latency_s", "connect_s", "ask_cost"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
        assert not np.array_equal(getattr(a, field), getattr(c, field)), field


def test_world_arrays_are_read_only() -> None:
    w = World.draw(SMALL, 1)
    with pytest.raises(ValueError):
        w.price[0] = 1.0


def test_world_catalog_declares_prices_and_hides_behaviour() -> None:
    data = json.loads(json.dumps(SMALL_CATALOG))
    data["servers"][0]["failure_rate"] = 0.5
    data["servers"][0]["tools"][0].update(success_rate=0.9, latency_s=3.0, price=9.0)
    base = catalog_from_dict(data)
    w = World.draw(base, 3)
    seen = w.catalog(base)
    tools = list(seen.tools())
    assert [t.price for t in tools] == pytest.approx(w.price.tolist())
    assert all(t.success_rate is None and t.latency_s is None for t in tools)
    for i, s in enumerate(seen.servers):
        assert s.failure_rate is None
        assert s.connect_latency_s == pytest.approx(w.connect_s[i])
        assert s.ask_cost == pytest.approx(np.mean([t.price for t in s.tools]))
    assert [t.key for t in tools] == [t.key for t in base.tools()]


def test_world_catalog_refuses_another_catalog() -> None:
    with pytest.raises(ConfigError):
        World.draw(SMALL, 0).catalog(_big_catalog(2, 2))


def test_world_follows_the_documented_distributions() -> None:
    w = World.draw(_big_catalog(), 11)
    p = WorldParams()
    high = w.high_tier
    assert high.sum() == 1000
    assert w.price[high].mean() == pytest.approx(0.0225, abs=0.0005)
    assert w.price[high].std() == pytest.approx(0.005, abs=0.0005)
    assert (w.price >= 0).all()
    assert w.price[~high].min() >= 0 and w.price[~high].max() <= 0.0025
    assert w.fragile.sum() == 400  # exactly 20 % of 2000 tools
    assert ((w.success[w.fragile] >= 0.1) & (w.success[w.fragile] <= 0.5)).all()
    assert w.success[~w.fragile].mean() == pytest.approx(0.8, abs=0.02)  # Beta(8, 2)
    assert w.flaky.sum() == 30  # exactly 15 % of 200 servers
    assert ((w.fail_prob[w.flaky] >= 0.2) & (w.fail_prob[w.flaky] <= 0.5)).all()
    assert w.fail_prob[~w.flaky].mean() == pytest.approx(1 / 13, abs=0.03)  # Beta(1, 12)
    assert np.median(w.latency_s[high]) == pytest.approx(p.latency_median_high_s, rel=0.1)
    assert np.median(w.latency_s[~high]) == pytest.approx(p.latency_median_low_s, rel=0.1)
    assert ((w.connect_s >= 0.05) & (w.connect_s <= 0.6)).all()


@pytest.mark.parametrize(
    ("name", "description", "server", "tier"),
    [
        ("duckduckgo_web_search", "Performs a web search", "DuckDuckGo", "high"),
        ("bing_search", "使用必应搜索指定的关键词", "Bing_CN_MCP", "high"),
        ("fetch_webpage", "根据提供的ID获取对应网页的内容", "Bing", "high"),
        ("geocode_address", "Convert an address to coordinates", "OSM", "high"),
        ("get_route_directions", "Route directions between two points", "Maps", "high"),
        ("summarise", "Summarise text using the OpenAI API", "Helper", "high"),
        ("ground", "Grounding with Google Search", "Gemini tools", "high"),
        ("fetch", "Fetches a URL from the internet", "Fetch", "high"),
        ("search_files", "Recursively search for files matching a pattern", "Filesystem", "low"),
        ("generate_bar_chart", "Generate a bar chart", "Chart", "low"),
        ("valorant-meta-maps", "Valorant map meta data", "OP.GG", "low"),
        ("read_sheet", "Read a Google Sheets range", "Google Sheets", "low"),
        ("get-ifanr-news", "包含最新的科技产品、互联网动态等前沿科技资讯", "Trends", "low"),
        ("give_feedback", "Tell us how Claude worked for you", "Desktop", "low"),
    ],
)
def test_price_tier_follows_the_declared_function(
    name: str, description: str, server: str, tier: str
) -> None:
    assert price_tier(Tool("s", name, description), server) == tier


# -- common random numbers ---------------------------------------------------------------------


def test_a_call_draws_the_same_luck_whoever_makes_it_and_whenever() -> None:
    w = World.draw(_big_catalog(20, 5), 5)
    keys = list(w.keys)
    first = [call_outcome(w, 3, 1, k) for k in keys]
    again = [call_outcome(w, 3, 1, k) for k in reversed(keys)][::-1]
    assert first == again
    other_group = [call_outcome(w, 3, 2, k) for k in keys]
    other_attempt = [call_outcome(w, 3, 1, k, attempt=1) for k in keys]
    assert [c.latency_s for c in first] != [c.latency_s for c in other_group]
    assert [c.latency_s for c in first] != [c.latency_s for c in other_attempt]


def test_call_success_rate_is_one_minus_fail_times_success() -> None:
    w = World.draw(_big_catalog(4, 2), 2)
    key = w.keys[3]
    j, i = 3, int(w.server_of[3])
    calls = [call_outcome(w, q, 0, key) for q in range(20000)]
    expected = (1 - w.fail_prob[i]) * w.success[j]
    assert np.mean([c.success for c in calls]) == pytest.approx(expected, abs=0.015)
    assert np.mean([c.server_failed for c in calls]) == pytest.approx(w.fail_prob[i], abs=0.015)
    assert not any(c.success and c.server_failed for c in calls)
    assert all(c.price == w.price[j] and c.latency_s > w.connect_s[i] for c in calls)


# -- end to end on the small catalog -----------------------------------------------------------


def _router(tmp_path: Path, catalog_file: Path) -> Router:
    return Router(catalog_file, store=tmp_path / "store", embedder=HashingEmbedder())


def test_simulate_reports_every_metric_with_an_interval(
    tmp_path: Path, catalog_file: Path, queries_file: Path
) -> None:
    seen: list[tuple[str, int, int]] = []
    with _router(tmp_path, catalog_file) as r:
        qs = load_queries(queries_file, r.catalog)
        res = simulate(r, qs, ["cascade", "ehrr"], seeds=3, progress=lambda *a: seen.append(a))
    assert list(res) == ["cascade", "ehrr", ORACLE_ROUTER]
    for row in res.values():
        assert set(row) == {*METRICS, *REGRET}
        assert 0.0 <= (row["success_rate"]["mean"] or 0.0) <= 1.0
        assert all(row[m]["mean"] is not None and row[m]["mean"] >= 0 for m in METRICS)
        assert all(s["ci95"] is not None and s["ci95"] >= 0 for s in row.values())
        assert (row["tokens"]["mean"] or 0) > 0
    assert res[ORACLE_ROUTER]["regret_success"] == {"mean": 0.0, "ci95": 0.0}
    assert len(seen) == 3 * 3 * len(qs) and seen[0] == ("cascade seed 0", 1, 3)


def test_the_world_does_not_depend_on_which_strategies_run(
    tmp_path: Path, catalog_file: Path, queries_file: Path
) -> None:
    with _router(tmp_path, catalog_file) as r:
        qs = load_queries(queries_file, r.catalog)
        both = run_simulation(r, qs, ["cascade", "ehrr"], seeds=[5, 6]).summary
        alone = run_simulation(r, qs, ["ehrr"], seeds=[5, 6]).summary
    assert alone["ehrr"] == both["ehrr"]


def test_simulation_leaves_the_store_catalog_as_it_was(
    tmp_path: Path, catalog_file: Path, queries_file: Path
) -> None:
    with _router(tmp_path, catalog_file) as r:
        r.index()
        qs = load_queries(queries_file, r.catalog)
        simulate(r, qs, ["ehrr"], seeds=1)
    with _router(tmp_path, catalog_file) as r:
        rep = r.index()
    assert (rep.added, rep.updated, rep.removed, rep.embedded) == (0, 0, 0, 0)


def test_paired_difference_matches_seeds(
    tmp_path: Path, catalog_file: Path, queries_file: Path
) -> None:
    with _router(tmp_path, catalog_file) as r:
        qs = load_queries(queries_file, r.catalog)
        run = run_simulation(r, qs, ["cascade", "ehrr"], seeds=3)
    by = run.by_strategy()
    diffs = [
        e.means()["cost_usd"] - c.means()["cost_usd"]
        for e, c in zip(by["ehrr"], by["cascade"], strict=True)
    ]
    assert run.paired("cost_usd", "ehrr", "cascade") == ci95(diffs)
    assert run.paired("tokens", "ehrr", "ehrr") == {"mean": 0.0, "ci95": 0.0}
    with pytest.raises(ConfigError):
        run.paired("cost", "ehrr", "cascade")
    with pytest.raises(ConfigError):
        run.paired("cost_usd", "ehrr", "flat")


def test_unknown_strategy_fails_before_any_work(tmp_path: Path, catalog_file: Path) -> None:
    with _router(tmp_path, catalog_file) as r, pytest.raises(ConfigError, match="unknown"):
        simulate(r, [Query("q", "x", (frozenset({("time", "convert_time")}),), "s")], ["nope"])


def test_outputs_are_a_table_a_json_and_a_plot(
    tmp_path: Path, catalog_file: Path, queries_file: Path
) -> None:
    with _router(tmp_path, catalog_file) as r:
        qs = load_queries(queries_file, r.catalog)
        run = run_simulation(r, qs, ["cascade", "ehrr"], seeds=2)
    series = run.series
    assert set(series["ehrr"]) == {"running_success", "cumulative_cost_usd"}
    assert len(series["ehrr"]["running_success"]) == len(qs)
    cum = series["ehrr"]["cumulative_cost_usd"]
    assert cum == sorted(cum)
    paths = write_simulation_outputs(run.summary, series, tmp_path / "out")
    assert [p.name for p in paths] == ["simulate.json", "simulate.md", "simulate.png"]
    data = json.loads(paths[0].read_text())
    assert data["summary"]["ehrr"]["cost_usd"] == run.summary["ehrr"]["cost_usd"]
    md = markdown_table(run.summary)
    assert md.count("\n") == 5 and "| ehrr |" in md and " ± " in md and "success regret" in md
    assert paths[2].stat().st_size > 1000
