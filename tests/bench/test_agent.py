"""The per-step agent of issue 12 (seed 000 Alg. 1) and the oracle router of the regret."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from toolroute.bench.agent import (
    OracleRoutes,
    QueryResult,
    SchemaTokenCounter,
    run_step_agent,
)
from toolroute.bench.world import World, WorldParams
from toolroute.catalog import Catalog, Query, Server, Tool
from toolroute.catalog.models import ToolKey
from toolroute.errors import ConfigError
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


def _world(success: Sequence[float], price: Sequence[float] = (0.001, 0.002, 0.01, 0.02)) -> World:
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
        fail_prob=np.zeros(2),
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
