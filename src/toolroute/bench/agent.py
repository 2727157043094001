"""The simulated agents of the economics study of *Clearing MCP Navigation Fog with
Economics-Aware Hierarchical Tool Routing* (EHRR): what a strategy's routing costs an agent in a
:class:`~toolroute.bench.world.World`.

Both agents run the queries as one stream per (strategy, seed) with one
:class:`~toolroute.stats.StatsBook`, so online statistics (eq. 8) learn as they go, and both
know which candidates satisfy a step (they stand for an agent that reads tool descriptions
well). A call first draws the server's post-accept failure (p_i; ``server_failed=True``), then
the tool's success (r_ij), so it succeeds with probability (1 − p_i) r_ij. Every attempt pays
p_ij, costs the agent G_i + the call's latency, and records an Outcome with the call's latency
alone (the router adds G_i itself in eqs. 2 and 6), also on failure.

Whole-request agent (:func:`run_agent`, ``planner="whole"``): for each required group it routes
the query text (n candidates), then calls, in the order shown, every not-yet-tried candidate
that satisfies the group until one succeeds. If a call failed and the group is still unmet after
the presented candidates, it re-routes once (same text, updated statistics) and tries the
satisfying candidates not tried yet; a route that shows no satisfying tool is not retried.
``invalid_route_calls`` = distinct candidates presented during the query that were never called.

Per-step agent (:func:`run_step_agent`, EHRR Alg. 1): for each required group it routes the
step's own text from a planner (:mod:`toolroute.bench.planner`), sees n candidates, calls the
satisfying ones in the order shown, and gives up on the step after ``attempts`` calls (default
2, an agent that does not retry forever). When the shown candidates are used up after a failure
and attempts remain, it routes the step again (updated statistics). Steps are independent of
each other's outcome. ``invalid_route_calls`` = distinct candidates presented during the query
that satisfy none of its groups (shown, never usable). The same agent run with
:class:`OracleRoutes` (a router that knows the hidden figures) gives the regret baseline.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from toolroute.bench.world import World, call_outcome, perturb
from toolroute.catalog.loader import Query
from toolroute.catalog.models import Catalog, ToolKey
from toolroute.errors import ConfigError
from toolroute.present.tokens import CountFn, TokenCounter, tool_json
from toolroute.router import Candidate
from toolroute.stats import StatsBook

__all__ = [
    "ORACLE_ROUTER",
    "AgentRun",
    "OracleRoutes",
    "QueryResult",
    "Routes",
    "SchemaTokenCounter",
    "StepRoutes",
    "run_agent",
    "run_step_agent",
    "strategy_routes",
]

Progress = Callable[[str, int, int], None]

# -- token counting -----------------------------------------------------------------------------


class SchemaTokenCounter:
    """cl100k tokens of presented candidates' ``{"name", "description", "input_schema"}`` JSON
    (:func:`toolroute.present.tokens.tool_json`), counted by :class:`TokenCounter`."""

    def __init__(self, count: CountFn | None = None, encoding: str = "cl100k_base") -> None:
        self._tokens = TokenCounter(count, encoding)

    @staticmethod
    def text(c: Candidate) -> str:
        return tool_json(c.tool, c.description, c.input_schema)

    def __call__(self, candidates: Sequence[Candidate]) -> int:
        return sum(self._tokens.many([self.text(c) for c in candidates]))


# -- the whole-request agent ------------------------------------------------------------------


class Routes(Protocol):
    """What the agent needs of a router (``Router`` is one)."""

    def route(
        self, query: str, k: int = 5, strategy: str = "default", *, stats: StatsBook | None = None
    ) -> list[Candidate]: ...


@dataclass(frozen=True, slots=True)
class QueryResult:
    """What one query of the stream cost a strategy."""

    success: bool
    groups_met: float
    """Share of the query's groups met (success counts only when it is 1)."""
    cost_usd: float
    invalid_route_calls: int
    invalid_tool_calls: int
    tool_calls: int
    route_calls: int
    latency_s: float
    tokens: int
    cost_posted_usd: float | None = None
    """Cost under EHRR Theorem 1's payment rule: each call pays the server's posted price τ_i
    when the strategy posted one (EHRR), else the tool's own price; None: not tracked (the
    whole-request agent)."""

    @property
    def invalid_calls(self) -> int:
        return self.invalid_route_calls + self.invalid_tool_calls


@dataclass(frozen=True, slots=True)
class AgentRun:
    """One strategy's pass over the query stream in one world."""

    strategy: str
    seed: int
    queries: tuple[QueryResult, ...]

    def means(self) -> dict[str, float]:
        q = self.queries
        return {
            "success_rate": sum(r.success for r in q) / len(q),
            "cost_usd": sum(r.cost_usd for r in q) / len(q),
            "invalid_calls": sum(r.invalid_calls for r in q) / len(q),
            "invalid_route_calls": sum(r.invalid_route_calls for r in q) / len(q),
            "invalid_tool_calls": sum(r.invalid_tool_calls for r in q) / len(q),
            "tool_calls": sum(r.tool_calls for r in q) / len(q),
            "latency_s": sum(r.latency_s for r in q) / len(q),
            "tokens": sum(r.tokens for r in q) / len(q),
            "groups_met": sum(r.groups_met for r in q) / len(q),
            "cost_posted_usd": sum(
                r.cost_usd if r.cost_posted_usd is None else r.cost_posted_usd for r in q
            )
            / len(q),
        }


def run_agent(
    router: Routes,
    world: World,
    catalog: Catalog,
    queries: Sequence[Query],
    strategy: str,
    *,
    n: int = 3,
    tokens: SchemaTokenCounter | None = None,
    progress: Progress | None = None,
) -> AgentRun:
    """The oracle agent over the whole stream (module docstring), with a fresh StatsBook of
    ``catalog`` (the world's catalog) seeded with the world's seed."""
    count = tokens if tokens is not None else SchemaTokenCounter()
    book = StatsBook(catalog, seed=world.seed)
    position = {key: j for j, key in enumerate(world.keys)}
    label = f"{strategy} seed {world.seed}"
    out: list[QueryResult] = []
    for qi, q in enumerate(queries):
        met = 0
        cost = latency = 0.0
        inv_tool = calls = routes = toks = 0
        presented: set[ToolKey] = set()
        useful: set[ToolKey] = set()
        for gi, group in enumerate(q.groups):
            tried: dict[ToolKey, int] = {}
            done = failed = False
            for _ in range(2):  # the first route, then at most one re-route after a failure
                shown = router.route(q.text, k=n, strategy=strategy, stats=book)
                routes += 1
                toks += count(shown)
                presented.update((c.server, c.tool) for c in shown)
                for c in shown:
                    key = (c.server, c.tool)
                    if key not in group or key in tried:
                        continue
                    call = call_outcome(world, qi, gi, key, tried.get(key, 0), tool=position[key])
                    tried[key] = tried.get(key, 0) + 1
                    useful.add(key)
                    book.record(call.outcome())
                    calls += 1
                    cost += call.price
                    latency += call.latency_s
                    if call.success:
                        done = True
                        break
                    failed = True
                    inv_tool += 1
                if done or not failed:
                    break
            met += done
        out.append(
            QueryResult(
                success=met == len(q.groups),
                groups_met=met / len(q.groups) if q.groups else 1.0,
                cost_usd=cost,
                invalid_route_calls=len(presented - useful),
                invalid_tool_calls=inv_tool,
                tool_calls=calls,
                route_calls=routes,
                latency_s=latency,
                tokens=toks,
            )
        )
        if progress is not None:
            progress(label, qi + 1, len(queries))
    return AgentRun(strategy, world.seed, tuple(out))


# -- the per-step agent -------------------------------------------------------------------------


class _EventClock:
    """The usage memory's clock in a simulation: one tick per remembered call, so its decay
    counts uses, not wall time."""

    def __init__(self) -> None:
        self.ticks = 0.0

    def __call__(self) -> float:
        self.ticks += 1.0
        return self.ticks


class StepRoutes(Protocol):
    """What the per-step agent needs of a router: candidates for one step's text. ``group`` is
    what the step needs; only :class:`OracleRoutes` may read it."""

    def __call__(
        self, text: str, group: frozenset[ToolKey], k: int, book: StatsBook
    ) -> list[Candidate]: ...


class StrategyRoutes:
    """Route step texts with ``strategy``, reading the agent's statistics; a router that keeps
    a usage memory (``remember_use``) hears which tool the agent called after each text."""

    def __init__(self, router: Routes, strategy: str) -> None:
        self._router = router
        self._strategy = strategy

        self.posted: dict[ToolKey, float] = {}
        """Posted price τ_i of each shown candidate's server on its last route (EHRR only)."""

    def __call__(
        self, text: str, group: frozenset[ToolKey], k: int, book: StatsBook
    ) -> list[Candidate]:
        explain = getattr(self._router, "explain", None)
        if explain is None:
            return self._router.route(text, k=k, strategy=self._strategy, stats=book)
        out = []
        for c, detail in explain(text, k, self._strategy, stats=book):
            if "posted_price" in detail:
                self.posted[(c.server, c.tool)] = float(detail["posted_price"])
            out.append(c)
        return out

    def remember(self, text: str, key: ToolKey, success: bool, book: StatsBook) -> None:
        remember = getattr(self._router, "remember_use", None)
        if remember is not None:
            remember(text, key[0], key[1], success, stats=book)

    def skip(self, text: str, shown: list[ToolKey], book: StatsBook) -> None:
        """The agent called none of ``shown`` for ``text`` (nothing there could do it)."""
        remember = getattr(self._router, "remember_skip", None)
        if remember is not None:
            remember(text, shown, stats=book)


def strategy_routes(router: Routes, strategy: str) -> StepRoutes:
    """Route step texts with ``strategy``, reading the agent's statistics."""
    return StrategyRoutes(router, strategy)


ORACLE_ROUTER = "oracle-router"
"""Name of the regret baseline's runs."""


class OracleRoutes:
    """A router that knows the hidden figures and what the step needs: it shows the step's
    satisfying tools by true attempt success (1 − p_i) r_ij, best first, the cheaper first on a
    tie. No policy can do better on success within the same attempts, so its success and cost
    are the reference of the regret."""

    def __init__(self, world: World, catalog: Catalog) -> None:
        self._world = world
        self._position = {key: j for j, key in enumerate(world.keys)}
        self._tools = {t.key: t for t in catalog.tools()}
        self._quality = world.attempt_success

    def __call__(
        self, text: str, group: frozenset[ToolKey], k: int, book: StatsBook
    ) -> list[Candidate]:
        rows = sorted(
            (self._position[key] for key in group),
            key=lambda j: (-self._quality[j], self._world.price[j], j),
        )[:k]
        out = []
        for j in rows:
            t = self._tools[self._world.keys[j]]
            out.append(
                Candidate(
                    t.server, t.name, float(self._quality[j]), t.description, dict(t.input_schema)
                )
            )
        return out


def run_step_agent(
    route: StepRoutes,
    name: str,
    world: World,
    catalog: Catalog,
    queries: Sequence[Query],
    steps: Sequence[Sequence[str]],
    *,
    n: int = 3,
    attempts: int = 2,
    tokens: SchemaTokenCounter | None = None,
    progress: Progress | None = None,
    noise: float = 0.0,
) -> AgentRun:
    """The per-step agent over the whole stream (module docstring): ``steps[q][g]`` is the
    text the planner wrote for group ``g`` of query ``q``.

    ``noise`` > 0 is the noisy agent: on each call, with that probability, it calls a shown
    tool that cannot do the step (or, when every shown tool can, the right one with bad
    arguments): a failed, paid attempt, remembered as a failure. After a route that shows
    nothing usable it rewords the step (:func:`~toolroute.bench.world.perturb`) and routes
    again while attempts remain. Its draws come from a generator seeded by the world's seed
    and the stream position (not by the strategy); a strategy that shows different candidates
    consumes them in a different order, so the noise is common in rate, not call by call."""
    if attempts < 1:
        raise ConfigError(f"attempts must be at least 1, got {attempts}")
    if len(steps) != len(queries) or any(
        len(s) != len(q.groups) for s, q in zip(steps, queries, strict=False)
    ):
        raise ConfigError("the plan must give one step text per group of every query")
    count = tokens if tokens is not None else SchemaTokenCounter()
    book = StatsBook(catalog, seed=world.seed)
    book.memory.clock = _EventClock()
    position = {key: j for j, key in enumerate(world.keys)}
    label = f"{name} seed {world.seed}"
    remember = getattr(route, "remember", None)
    skip = getattr(route, "skip", None)
    posted: dict[ToolKey, float] = getattr(route, "posted", {})
    out: list[QueryResult] = []
    for qi, (q, texts) in enumerate(zip(queries, steps, strict=True)):
        noisy = np.random.default_rng([world.seed, qi, 104_729])
        met = 0
        cost = latency = paid = 0.0
        inv_tool = calls = routes = toks = 0
        presented: set[ToolKey] = set()
        for gi, (group, text) in enumerate(zip(q.groups, texts, strict=True)):
            tried: set[ToolKey] = set()
            left, done = attempts, False
            for retry in range(attempts):  # a step never routes more often than it may call
                shown = route(text, group, n, book)
                routes += 1
                toks += count(shown)
                presented.update((c.server, c.tool) for c in shown)
                failed = False
                for c in shown:
                    key = (c.server, c.tool)
                    if noise > 0 and noisy.random() < noise:  # a wrong tool or bad arguments
                        wrong = [
                            (d.server, d.tool) for d in shown if (d.server, d.tool) not in group
                        ]
                        bad = wrong[int(noisy.integers(len(wrong)))] if wrong else key
                        price = float(world.price[position[bad]])
                        left -= 1
                        calls += 1
                        cost += price
                        paid += posted.get(bad, price)
                        inv_tool += 1
                        failed = True
                        if remember is not None:
                            remember(text, bad, False, book)
                        if left == 0:
                            break
                        if bad != key:
                            continue
                    if key not in group or key in tried:
                        continue
                    call = call_outcome(world, qi, gi, key, 0, tool=position[key])
                    tried.add(key)
                    left -= 1
                    book.record(call.outcome())
                    if remember is not None:
                        remember(text, key, call.success, book)
                    calls += 1
                    cost += call.price
                    paid += posted.get(key, call.price)
                    latency += call.latency_s
                    if call.success:
                        done = True
                        break
                    failed = True
                    inv_tool += 1
                    if left == 0:
                        break
                usable = any((c.server, c.tool) in group for c in shown)
                if not usable and skip is not None and shown:  # an abandoned answer
                    skip(text, [(c.server, c.tool) for c in shown], book)
                if noise > 0 and not usable and not done and left > 0:
                    text = perturb(text, f"reword-{retry}", share=1.0)  # a miss: say it again
                    continue
                if done or left == 0 or not failed:
                    break
            met += done
        out.append(
            QueryResult(
                success=met == len(q.groups),
                groups_met=met / len(q.groups) if q.groups else 1.0,
                cost_usd=cost,
                cost_posted_usd=paid,
                invalid_route_calls=len(presented - q.relevant),
                invalid_tool_calls=inv_tool,
                tool_calls=calls,
                route_calls=routes,
                latency_s=latency,
                tokens=toks,
            )
        )
        if progress is not None:
            progress(label, qi + 1, len(queries))
    return AgentRun(name, world.seed, tuple(out))
