"""The simulation's agents (bench/agent.py) on a hand-made world: the whole-request agent's
counting rules, the per-step agent of issue 12 (seed 000 Alg. 1), the oracle router of the
regret, and the schema tokens they count."""

from __future__ import annotations

import importlib
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from toolroute.bench.agent import (
    OracleRoutes,
    QueryResult,
    SchemaTokenCounter,
    run_agent,
    run_step_agent,
)
from toolroute.bench.world import World, WorldParams, call_outcome
from toolroute.catalog import Catalog, Query, Server, Tool
from toolroute.catalog.models import ToolKey
from toolroute.errors import ConfigError, ToolrouteError
from toolroute.router import Candidate
from toolroute.stats import StatsBook

KEYS = [("a", "x"), ("a", "y"), ("b", "z"), ("b", "w")]
TEN = SchemaTokenCounter(count=lambda texts: [10] * len(texts))


def _catalog() -> Catalog:
    return Catalog(
        servers=(
            Server("a", "A", "", (Tool("a", "x", "x"), Tool("a", "y", "y"))),
            Server("b", "B", "", (Tool("b", "z", "z"), Tool("b", "w", "w"))),
        )
    )


def _world(
    success: Sequence[float],
    price: Sequence[float] = (0.001, 0.002, 0.01, 0.02),
    fail: Sequence[float] = (0.0, 0.0),
) -> World:
    """Four tools on two servers, with these hidden success rates, prices and server failure
    rates."""
    return World(
        seed=0,
        params=WorldParams(),
        keys=tuple(KEYS),
        server_ids=("a", "b"),
        server_of=np.array([0, 0, 1, 1]),
        high_tier=np.zeros(4, dtype=bool),
        price=np.asarray(price, dtype=np.float64),
        success=np.asarray(success, dtype=np.float64),
        fragile=np.zeros(4, dtype=bool),
        latency_s=np.full(4, 0.5),
        fail_prob=np.asarray(fail, dtype=np.float64),
        flaky=np.zeros(2, dtype=bool),
        connect_s=np.array([0.1, 0.2]),
        ask_cost=np.array([0.0015, 0.015]),
        capability=np.arange(4),
    )


class Steps:
    """Shows the scripted candidates, one list per route call (the last repeats)."""

    def __init__(self, *shows: list[ToolKey]) -> None:
        self.shows = list(shows)
        self.texts: list[str] = []
        self.books: set[int] = set()

    def __call__(
        self, text: str, group: frozenset[ToolKey], k: int, book: StatsBook
    ) -> list[Candidate]:
        self.texts.append(text)
        self.books.add(id(book))
        show = self.shows[min(len(self.texts), len(self.shows)) - 1]
        return [Candidate(s, t, 1.0, "d", {}) for s, t in show][:k]


def _step(route: Steps, world: World, *groups: set[ToolKey], attempts: int = 2) -> QueryResult:
    q = Query("q", "do both", tuple(frozenset(g) for g in groups), "complex")
    texts = [tuple(f"step {i}" for i in range(len(groups)))]
    run = run_step_agent(route, "s", world, _catalog(), [q], texts, attempts=attempts, tokens=TEN)
    return run.queries[0]


def test_each_step_routes_its_own_text() -> None:
    route = Steps([KEYS[0], KEYS[2]])
    r = _step(route, _world([1, 1, 1, 1]), {KEYS[0]}, {KEYS[2]})
    assert r.success and route.texts == ["step 0", "step 1"] and r.tool_calls == 2
    assert r.invalid_route_calls == 0  # both shown tools serve a step of this query


def test_a_step_gives_up_after_its_attempts() -> None:
    route = Steps([KEYS[0], KEYS[1], KEYS[2]])
    r = _step(route, _world([0, 0, 1, 1]), {KEYS[0], KEYS[1], KEYS[2]}, attempts=2)
    assert not r.success and r.tool_calls == 2 and r.invalid_tool_calls == 2
    assert r.route_calls == 1 and r.cost_usd == pytest.approx(0.003)
    once = _step(Steps([KEYS[0], KEYS[1]]), _world([0, 1, 1, 1]), {KEYS[0], KEYS[1]}, attempts=1)
    assert not once.success and once.tool_calls == 1


def test_after_a_failure_with_attempts_left_the_step_routes_again() -> None:
    route = Steps([KEYS[0], KEYS[2]], [KEYS[1], KEYS[0]])
    r = _step(route, _world([0, 1, 1, 1]), {KEYS[0], KEYS[1]})
    assert r.success and r.route_calls == 2 and r.tool_calls == 2
    assert r.invalid_route_calls == 1  # ("b", "z") serves no step
    assert r.tokens == 40


def test_steps_are_independent_of_each_others_outcome() -> None:
    r = _step(Steps([KEYS[0], KEYS[2]]), _world([0, 1, 1, 1]), {KEYS[0]}, {KEYS[2]})
    assert not r.success and r.groups_met == pytest.approx(0.5) and r.tool_calls == 2


def test_one_book_learns_over_the_stream_and_plans_must_fit_the_queries() -> None:
    route = Steps([KEYS[0]])
    qs = [Query(str(i), "q", (frozenset({KEYS[0]}),), "s") for i in range(3)]
    w = _world([1, 1, 1, 1])
    run = run_step_agent(route, "s", w, _catalog(), qs, [("t",)] * 3, tokens=TEN)
    assert len(route.books) == 1 and run.means()["success_rate"] == 1.0
    with pytest.raises(ConfigError, match="plan"):
        run_step_agent(route, "s", w, _catalog(), qs, [("t", "u")] * 3, tokens=TEN)
    with pytest.raises(ConfigError, match="attempts"):
        run_step_agent(route, "s", w, _catalog(), qs, [("t",)] * 3, attempts=0, tokens=TEN)


def test_the_oracle_router_shows_the_steps_tools_by_true_success_then_price() -> None:
    w = _world([0.5, 0.9, 0.9, 0.2], price=[0.001, 0.005, 0.002, 0.0])
    oracle = OracleRoutes(w, _catalog())
    book = StatsBook(_catalog())
    shown = oracle("ignored", frozenset(KEYS), 3, book)
    assert [(c.server, c.tool) for c in shown] == [KEYS[2], KEYS[1], KEYS[0]]
    assert [c.score for c in shown] == pytest.approx([0.9, 0.9, 0.5])
    assert oracle("x", frozenset({KEYS[3]}), 3, book)[0].tool == "w"


# -- the agent's counting rules, on a hand-made world ------------------------------------------


def _cand(key: tuple[str, str]) -> Candidate:
    return Candidate(key[0], key[1], 1.0, "d", {})


class Scripted:
    """A router that shows the scripted candidates, one list per route call (last repeats)."""

    def __init__(self, *shows: list[tuple[str, str]]) -> None:
        self.shows = list(shows)
        self.calls: list[tuple[str, int, str, StatsBook | None]] = []

    def route(
        self, query: str, k: int = 5, strategy: str = "default", *, stats: StatsBook | None = None
    ) -> list[Candidate]:
        self.calls.append((query, k, strategy, stats))
        show = self.shows[min(len(self.calls), len(self.shows)) - 1]
        return [_cand(key) for key in show]


def _run(router: Scripted, world: World, *groups: set[tuple[str, str]]) -> QueryResult:
    q = Query("q", "do it", tuple(frozenset(g) for g in groups), "complex")
    run = run_agent(router, world, _catalog(), [q], "ehrr", n=3, tokens=TEN)
    return run.queries[0]


def test_a_shown_candidate_outside_the_group_is_an_invalid_route_call() -> None:
    router = Scripted([KEYS[2], KEYS[0], KEYS[3]])
    r = _run(router, _world([1, 1, 1, 1]), {KEYS[0]})
    assert r.success and r.route_calls == 1 and r.tool_calls == 1
    assert (r.invalid_route_calls, r.invalid_tool_calls, r.invalid_calls) == (2, 0, 2)
    assert r.cost_usd == pytest.approx(0.001)
    assert r.tokens == 30
    assert router.calls[0][:3] == ("do it", 3, "ehrr")


def test_after_a_failure_the_agent_tries_the_next_satisfying_candidate() -> None:
    router = Scripted([KEYS[0], KEYS[1], KEYS[2]])
    r = _run(router, _world([0, 1, 1, 1]), {KEYS[0], KEYS[1]})
    assert r.success and r.route_calls == 1 and r.tool_calls == 2
    assert (r.invalid_route_calls, r.invalid_tool_calls) == (1, 1)
    assert r.cost_usd == pytest.approx(0.003)


def test_after_all_failures_it_reroutes_once_and_tries_only_new_candidates() -> None:
    router = Scripted([KEYS[0], KEYS[2]], [KEYS[0], KEYS[1]])
    r = _run(router, _world([0, 0, 1, 1]), {KEYS[0], KEYS[1]})
    assert not r.success
    assert r.route_calls == 2 and r.tool_calls == 2  # x is not called twice
    assert (r.invalid_route_calls, r.invalid_tool_calls) == (1, 2)
    assert r.tokens == 40


def test_a_reroute_can_succeed() -> None:
    router = Scripted([KEYS[0]], [KEYS[1], KEYS[0]])
    r = _run(router, _world([0, 1, 1, 1]), {KEYS[0], KEYS[1]})
    assert r.success and r.route_calls == 2 and r.tool_calls == 2


def test_no_satisfying_candidate_means_no_call_and_no_reroute() -> None:
    router = Scripted([KEYS[2], KEYS[3]])
    r = _run(router, _world([1, 1, 1, 1]), {KEYS[0]})
    assert not r.success
    assert (r.route_calls, r.tool_calls, r.cost_usd, r.latency_s) == (1, 0, 0.0, 0.0)
    assert r.invalid_route_calls == 2


def test_a_query_succeeds_only_when_every_group_is_met() -> None:
    router = Scripted([KEYS[0], KEYS[2]])
    r = _run(router, _world([1, 1, 1, 1]), {KEYS[0]}, {KEYS[2]}, {KEYS[1]})
    assert not r.success and r.route_calls == 3 and r.tool_calls == 2
    assert r.groups_met == pytest.approx(2 / 3)
    # Both presented tools met a group of this query: none was shown in vain.
    assert r.invalid_route_calls == 0
    ok = _run(Scripted([KEYS[0], KEYS[2]]), _world([1, 1, 1, 1]), {KEYS[0]}, {KEYS[2]})
    assert ok.success and ok.cost_usd == pytest.approx(0.011)


def test_a_server_failure_is_a_failed_call_recorded_as_post_accept() -> None:
    w = _world([1, 1, 1, 1], fail=[1.0, 0.0])
    c = call_outcome(w, 0, 0, KEYS[0])
    assert c.server_failed and not c.success
    assert c.outcome().server_failed and c.latency_s > 0.1
    router = Scripted([KEYS[0], KEYS[2]])
    r = _run(router, w, {KEYS[0], KEYS[2]})
    assert r.success and r.invalid_tool_calls == 1
    book = router.calls[0][3]
    assert book is not None
    assert book.server("a").fail_prob > 0 and book.server("b").fail_prob == 0


def test_the_agent_learns_in_one_book_over_the_stream() -> None:
    router = Scripted([KEYS[0]])
    w = _world([0, 1, 1, 1])
    qs = [Query(str(i), "q", (frozenset({KEYS[0]}),), "simple") for i in range(3)]
    run = run_agent(router, w, _catalog(), qs, "ehrr", tokens=TEN)
    books = {id(c[3]) for c in router.calls}
    assert len(books) == 1
    book = router.calls[0][3]
    assert book is not None and book.tool(KEYS[0]).calls == 3
    assert run.means()["success_rate"] == 0.0


def test_strategies_shown_the_same_candidates_get_identical_results() -> None:
    w = World.draw(_catalog(), 4)
    qs = [Query(str(i), "q", (frozenset({KEYS[0], KEYS[1]}),), "simple") for i in range(30)]
    a = run_agent(Scripted([KEYS[0], KEYS[1]]), w, w.catalog(_catalog()), qs, "cascade", tokens=TEN)
    b = run_agent(Scripted([KEYS[0], KEYS[1]]), w, w.catalog(_catalog()), qs, "ehrr", tokens=TEN)
    assert a.queries == b.queries


# -- token counting ----------------------------------------------------------------------------


def test_schema_tokens_are_counted_with_cl100k() -> None:
    toktok = importlib.import_module("toktok")
    c = Candidate("fs", "read_file", 1.0, "Read a file", {"type": "object"})
    text = SchemaTokenCounter.text(c)
    assert json.loads(text) == {
        "name": "read_file",
        "description": "Read a file",
        "input_schema": {"type": "object"},
    }
    counter = SchemaTokenCounter()
    assert counter([c, c]) == 2 * toktok.batch_count([text], "cl100k_base")[0] > 0


def test_a_missing_tokenizer_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.import_module

    def fake(name: str, package: str | None = None) -> Any:
        if name == "toktok":
            raise ImportError(name)
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", fake)
    with pytest.raises(ToolrouteError, match="toktok-rs"):
        SchemaTokenCounter()([_cand(KEYS[0])])
