"""The adaptive strategy: capabilities, vendor posteriors, value knob, usage memory."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import SMALL_CATALOG, HashingEmbedder
from toolroute import Router
from toolroute.learn.memory import MemoryParams, UsageMemory, decay, match_kernel, memory_boost
from toolroute.route.adaptive import server_means, tool_posterior, vendor_value
from toolroute.route.capability import components, group_pool, schema_keys
from toolroute.stats import Outcome, StatsBook

pytestmark = pytest.mark.usefixtures("research_variants")


def _market(tmp_path: Path) -> Path:
    """The small catalog plus two more vendors of the time server (same tools, priced)."""
    data = json.loads(json.dumps(SMALL_CATALOG))
    time_srv = data["servers"][0]
    for vendor, price in (("acme", 0.001), ("zeta", 0.002)):
        copy = json.loads(json.dumps(time_srv))
        copy["id"], copy["name"] = f"time@{vendor}", f"Time ({vendor})"
        for t in copy["tools"]:
            t["price"] = price
        data["servers"].append(copy)
    p = tmp_path / "market.json"
    p.write_text(json.dumps(data))
    return p


def _keys(cands: list[object]) -> list[tuple[str, str]]:
    return [(c.server, c.tool) for c in cands]  # type: ignore[attr-defined]


def test_vendor_copies_with_the_same_name_and_schema_are_one_capability(tmp_path: Path) -> None:
    with Router(_market(tmp_path), store=tmp_path / "s", embedder=HashingEmbedder()) as r:
        ix = r.built
        keys = schema_keys(ix.tools)
        rows = np.arange(ix.size)
        labels = group_pool(rows, keys.key, ix.tool_vectors, ix.server_of, cosine=1.5)
        of = {k: int(labels[j]) for j, k in enumerate(ix.keys)}
        assert of[("time", "convert_time")] == of[("time@acme", "convert_time")]
        assert of[("time@zeta", "convert_time")] == of[("time", "convert_time")]
        assert of[("time", "convert_time")] != of[("time", "get_current_time")]
        assert of[("fs", "read_file")] != of[("fs", "write_file")]


def test_two_tools_of_one_server_are_never_one_capability() -> None:
    v = np.ones((2, 4), dtype=np.float32) / 2.0  # identical vectors
    labels = group_pool(np.arange(2), np.array([0, 1]), v, np.array([0, 0]), cosine=0.8)
    assert labels.tolist() == [0, 1]


def test_components_close_links_transitively() -> None:
    adj = np.zeros((4, 4), dtype=bool)
    adj[0, 1] = adj[1, 0] = adj[1, 2] = adj[2, 1] = True
    assert components(adj).tolist() == [0, 0, 0, 3]


def test_pooled_means_shrink_a_server_toward_the_market() -> None:
    counts = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    mu = server_means(counts, 0.5, 4.0)
    assert mu.tolist() == pytest.approx([0.5, 12 / 14, 2 / 14])
    ab = tool_posterior(np.array([[1.0, 0.0]]), np.array([0.5]), 4.0)
    assert ab.tolist() == [[3.0, 2.0]]
    assert vendor_value(np.array([0.05]), np.array([0.8]), np.array([0.01]))[0] == pytest.approx(
        0.03
    )


def test_the_capability_shows_its_best_two_vendors_and_learns_the_reliable_one(
    tmp_path: Path,
) -> None:
    with Router(_market(tmp_path), store=tmp_path / "s", embedder=HashingEmbedder()) as r:
        book = StatsBook(r.built.catalog, seed=1)
        first = _keys(r.route("convert a time between timezones", k=2, strategy="adaptive",
                              stats=book))  # fmt: skip
        assert [t for _, t in first] == ["convert_time", "convert_time"]
        assert first[0][0] != first[1][0]  # primary and fallback are two vendors
        for _ in range(15):
            book.record(Outcome("time@acme", "convert_time", False, 0.5))
            book.record(Outcome("time@zeta", "convert_time", True, 0.5))
        tops = [
            _keys(
                r.route("convert a time between timezones", k=1, strategy="adaptive", stats=book)
            )[0]  # fmt: skip
            for _ in range(20)
        ]
        assert tops.count(("time@zeta", "convert_time")) >= 18


def test_a_small_value_of_success_prefers_the_cheaper_vendor(tmp_path: Path) -> None:
    from dataclasses import replace

    from toolroute.route.strategy import RouteParams

    params = RouteParams()
    cheap = replace(params, adaptive=replace(params.adaptive, value_usd=0.0))
    with Router(
        _market(tmp_path), store=tmp_path / "s", embedder=HashingEmbedder(), params=cheap
    ) as r:
        top = _keys(r.route("convert a time between timezones", k=3, strategy="adaptive"))
        assert top[0] == ("time", "convert_time")  # the unpriced vendor (price 0)
        assert top[1] == ("time@acme", "convert_time")


def test_memory_formulas() -> None:
    assert match_kernel(np.array([1.0, 0.75, 0.5]), 0.75).tolist() == [1.0, 0.0, 0.0]
    assert decay(np.array([0.0, 10.0]), 10.0).tolist() == [1.0, 0.5]
    assert memory_boost(1.0, 0.3) == pytest.approx(0.15)
    assert memory_boost(-1.0, 0.3) == pytest.approx(-0.15)


def test_memory_is_bounded_and_drops_the_least_recently_used() -> None:
    m = UsageMemory(MemoryParams(capacity=2), clock=lambda: 0.0)
    v = np.ones(3) / np.sqrt(3)
    m.add("", "q1", v, ("a", "x"), True, at=1.0)
    m.add("", "q2", v, ("a", "y"), True, at=2.0)
    m.add("", "q1", v, ("a", "x"), True, at=3.0)  # used again: now the most recent
    m.add("", "q3", v, ("a", "z"), True, at=4.0)
    assert {(r.query, r.tool) for r in m.rows()} == {("q1", "x"), ("q3", "z")}


def test_a_paraphrase_ranks_the_tool_the_agent_keeps_using_first(tmp_path: Path) -> None:
    store = tmp_path / "s"
    with Router(SMALL_CATALOG_FILE(tmp_path), store=store, embedder=HashingEmbedder()) as r:
        before = _keys(r.route("what time is it now", k=2, strategy="adaptive"))
        assert before[0] == ("time", "get_current_time")
        for _ in range(3):
            r.remember_use("what time is it", "time", "convert_time", True, client="ci")
        assert _keys(r.route("what time is it now", k=1, strategy="adaptive", client="ci"))[0] == (
            "time",
            "convert_time",
        )
        # another client never sees the effect
        assert _keys(r.route("what time is it now", k=2, strategy="adaptive", client="ops")) == (
            before
        )
    with Router(SMALL_CATALOG_FILE(tmp_path), store=store, embedder=HashingEmbedder()) as r:
        assert _keys(r.route("what time is it now", k=1, strategy="adaptive", client="ci"))[0] == (
            "time",
            "convert_time",
        )  # the memory is in the store: it survives a restart
        assert r.forget_uses("ci") == 1
        assert _keys(r.route("what time is it now", k=2, strategy="adaptive", client="ci")) == (
            before
        )


def SMALL_CATALOG_FILE(tmp_path: Path) -> Path:  # noqa: N802 -- reads as the constant it writes
    p = tmp_path / "small.json"
    p.write_text(json.dumps(SMALL_CATALOG))
    return p


def test_memory_clear_command_forgets_one_clients_rows(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from toolroute.cli import main

    store = tmp_path / "s"
    with Router(SMALL_CATALOG_FILE(tmp_path), store=store, embedder=HashingEmbedder()) as r:
        r.remember_use("what time is it", "time", "convert_time", True, client="ci")
        r.remember_use("read my notes", "fs", "read_file", False, client="ops")
    runner = CliRunner()
    shown = runner.invoke(main, ["memory", "show", "--store", str(store), "--json"])
    assert json.loads(shown.output) == {
        "ci": {"rows": 1, "successes": 1.0, "failures": 0.0},
        "ops": {"rows": 1, "successes": 0.0, "failures": 1.0},
    }
    cleared = runner.invoke(main, ["memory", "clear", "--store", str(store), "--client", "ci"])
    assert cleared.exit_code == 0 and cleared.output.strip() == "cleared 1 rows"
    left = runner.invoke(main, ["memory", "show", "--store", str(store), "--json"])
    assert list(json.loads(left.output)) == ["ops"]


def test_value_usd_is_read_per_server_and_tool_from_toolroute_toml(tmp_path: Path) -> None:
    from toolroute.config import load_config

    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {"t": {"command": "x"}}}))
    (tmp_path / "toolroute.toml").write_text(
        "[toolroute]\nvalue_usd = 0.02\n[servers.t]\nvalue_usd = 0.3\nask_cost = 0.0\n"
        '[tools."t__get"]\nvalue_usd = 0.5\n'
    )
    cfg = load_config(tmp_path / "mcp.json")
    assert cfg.settings.value_usd == 0.02
    assert dict(cfg.values) == {"t": 0.3, "t__get": 0.5}
    assert cfg.server_meta["t"] == {"ask_cost": 0.0}  # what becomes the catalog's Server


def test_adaptive_2_shows_the_primary_and_fallback_of_a_clear_capability(tmp_path: Path) -> None:
    with Router(_market(tmp_path), store=tmp_path / "s", embedder=HashingEmbedder()) as r:
        shown = _keys(r.route("convert a time between timezones", k=5, strategy="adaptive-2"))
        assert len(shown) == 2
        assert {t for _, t in shown} == {"convert_time"} and shown[0][0] != shown[1][0]


def test_cold_adaptive_ranks_a_catalog_of_distinct_tools_as_its_base_does(
    tmp_path: Path,
) -> None:
    with Router(
        SMALL_CATALOG_FILE(tmp_path), store=tmp_path / "s", embedder=HashingEmbedder()
    ) as r:
        for q in ("what time is it", "read the notes file", "weather alerts in Texas"):
            assert _keys(r.route(q, k=7, strategy="adaptive")) == _keys(
                r.route(q, k=7, strategy="steps")
            )


def test_an_abandoned_answer_lets_the_next_capability_up_for_that_client(tmp_path: Path) -> None:
    store = tmp_path / "s"
    with Router(SMALL_CATALOG_FILE(tmp_path), store=store, embedder=HashingEmbedder()) as r:
        first = _keys(r.route("what time is it now", k=1, strategy="adaptive", client="ci"))
        r.remember_skip("what time is it now", first, client="ci")
        again = _keys(r.route("what time is it now", k=1, strategy="adaptive", client="ci"))
        assert again != first
        assert _keys(r.route("what time is it now", k=1, strategy="adaptive")) == first
    with Router(SMALL_CATALOG_FILE(tmp_path), store=store, embedder=HashingEmbedder()) as r:
        assert r.store.load_memory()[0].skips == 1.0


def test_adaptive_lean_shows_two_vendors_cheapest_first(tmp_path: Path) -> None:
    from toolroute.route.strategy import STRATEGIES

    assert "adaptive-lean" in STRATEGIES
    with Router(_market(tmp_path), store=tmp_path / "s", embedder=HashingEmbedder()) as r:
        shown = _keys(r.route("convert a time between timezones", k=5, strategy="adaptive-lean"))
        assert shown == [("time", "convert_time"), ("time@acme", "convert_time")]


def test_remembering_a_use_reuses_the_vector_its_route_made(tmp_path: Path) -> None:
    embedder = HashingEmbedder()
    with Router(SMALL_CATALOG_FILE(tmp_path), store=tmp_path / "s", embedder=embedder) as r:
        r.route("what time is it now", k=2, strategy="adaptive")
        embedder.calls.clear()
        for _ in range(3):  # find_tools, then three calls: the model does not run again
            r.remember_use("what time is it now", "time", "convert_time", True, client="ci")
        r.remember_skip("what time is it now", [("time", "get_current_time")], client="ci")
        assert embedder.calls == []
        r.remember_use("a need never routed", "time", "convert_time", True, client="ci")
        assert embedder.calls == ["a need never routed"]


def test_with_a_reservation_value_no_vendor_worth_less_than_its_price_is_shown(
    tmp_path: Path,
) -> None:
    from dataclasses import replace

    from toolroute.route.strategy import RouteParams

    params = RouteParams()
    budget = replace(params, adaptive=replace(params.adaptive, value_usd=0.001, reserve=True))
    with Router(
        _market(tmp_path), store=tmp_path / "s", embedder=HashingEmbedder(), params=budget
    ) as r:
        shown = _keys(r.route("convert a time between timezones", k=5, strategy="adaptive"))
        # V q = 0.001 × ~0.8 is below both priced vendors' 0.001 and 0.002: only the free one
        assert shown and shown[0] == ("time", "convert_time")
        assert not {s for s, _ in shown} & {"time@acme", "time@zeta"}
        open_ = replace(budget, adaptive=replace(budget.adaptive, reserve=False))
        r.params = open_
        shown = _keys(r.route("convert a time between timezones", k=5, strategy="adaptive"))
        assert {s for s, _ in shown} & {"time@acme", "time@zeta"}
