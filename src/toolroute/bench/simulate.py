"""The economics simulation of §V of *Clearing MCP Navigation Fog with Economics-Aware
Hierarchical Tool Routing* (EHRR): what economics-aware routing buys, measured on a seeded world
that is fixed before any policy runs and identical for all.

Per seed, one :class:`~toolroute.bench.world.World` is drawn over the catalog, or over a
:class:`~toolroute.bench.world.Market` of ``providers`` vendors per server (1: the catalog
itself). Every strategy then runs the query stream with an agent of
:mod:`toolroute.bench.agent`: the whole-request agent (``planner="whole"``) or the per-step
agent with a planner's step texts (:mod:`toolroute.bench.planner`) and ``attempts`` calls per
step. With the per-step agent, the same agent also runs with the oracle router that knows the
hidden figures (:data:`~toolroute.bench.agent.ORACLE_ROUTER`), and every strategy's summary
gains its regret: ``regret_success`` (oracle − strategy success rate) and ``regret_cost_usd``
(strategy − oracle cost per query), per seed, then mean ± 95 %.

What it measures and how it is summarised: :mod:`toolroute.bench.simulation`; the order of the
tasks: :mod:`toolroute.bench.task_stream`; the tables and plots it writes:
:mod:`toolroute.bench.simulation_report`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from toolroute.bench.agent import (
    ORACLE_ROUTER,
    AgentRun,
    OracleRoutes,
    SchemaTokenCounter,
    run_agent,
    run_step_agent,
    strategy_routes,
)
from toolroute.bench.planner import PLANNERS, Planner, plan_steps
from toolroute.bench.simulation import Simulation, Stat
from toolroute.bench.task_stream import Stream, task_stream
from toolroute.bench.world import Market, PriceQuality, World, WorldParams
from toolroute.catalog.loader import Query
from toolroute.embed.base import Embedder, Matrix, SpanEmbedder, Wrapper
from toolroute.errors import ConfigError
from toolroute.route.strategy import CascadeParams, resolve_strategy
from toolroute.router import Router

__all__ = ["run_simulation", "simulate"]

Progress = Callable[[str, int, int], None]


class _MemoEmbedder(Wrapper):
    """Remembers each call's vectors: every (seed, strategy) routes the same query texts."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self._memo: dict[tuple[str, ...], Matrix] = {}

    def embed(self, texts: Sequence[str]) -> Matrix:
        key = tuple(texts)
        if key not in self._memo:
            self._memo[key] = self.inner.embed(texts)
        return self._memo[key]


class _MemoSpanEmbedder(_MemoEmbedder):
    def __init__(self, inner: SpanEmbedder) -> None:
        super().__init__(inner)
        self._span_inner = inner
        self._spans: dict[tuple[str, tuple[tuple[int, int], ...]], Matrix] = {}

    def embed_spans(self, text: str, spans: Sequence[tuple[int, int]]) -> Matrix:
        key = (text, tuple(spans))
        if key not in self._spans:
            self._spans[key] = self._span_inner.embed_spans(text, spans)
        return self._spans[key]


def run_simulation(
    router: Router,
    queries: Sequence[Query],
    strategies: Sequence[str],
    seeds: int | Sequence[int] = 10,
    n: int = 3,
    progress: Progress | None = None,
    *,
    providers: int = 3,
    planner: Planner = "oracle",
    attempts: int = 2,
    price_quality: PriceQuality = "independent",
    stream: Stream = "once",
    tasks: int | None = None,
    window: tuple[int, int] | None = None,
    noise: float = 0.0,
    servers_k: int | None = None,
    vendor_correlation: float = 0.0,
    outage: tuple[int, int] | None = None,
) -> Simulation:
    """Run every strategy over the query stream in each seed's world (seeds ``0 … seeds−1``, or
    the given seeds). ``providers`` > 1 routes over a :class:`Market` of the router's catalog,
    indexed once in a sibling store ``<store>/market-<providers>`` (its embeddings cached
    there); otherwise strategies route through ``router.with_catalog(world catalog)``: the same
    index, re-priced with the world's declared prices. ``planner="whole"`` is the whole-request
    agent; any other planner runs the per-step agent with ``attempts`` calls per step, and the
    oracle router beside the strategies.

    ``stream`` orders the tasks (:func:`task_stream`: ``once`` is a single pass), drawn
    per seed before any policy runs; ``window`` = (A, B) reports tasks A … B−1 of it (every
    task is still run, so strategies learn from the whole prefix); ``noise`` is the noisy
    agent's error rate (per-step agent only). ``servers_k`` sets the server shortlist of
    ``cascade`` and EHRR; None scales it with the vendor count (5 × providers, the same
    share of the market as 5 of the catalog's servers). ``vendor_correlation`` (ρ) and ``outage``
    (tasks A … B−1, one vendor down) harden the world (:mod:`toolroute.bench.world`)."""
    if not 0.0 <= noise < 1.0:
        raise ConfigError(f"noise must be in [0, 1), got {noise}")
    for s in strategies:
        resolve_strategy(s)  # fail before any work on a typo
    if n < 1:
        raise ConfigError(f"n must be at least 1, got {n}")
    if attempts < 1:
        raise ConfigError(f"attempts must be at least 1, got {attempts}")
    if planner not in PLANNERS:
        raise ConfigError(f"unknown planner {planner!r}; choose from: {', '.join(PLANNERS)}")
    seed_list = list(range(seeds)) if isinstance(seeds, int) else list(seeds)
    if not seed_list or not strategies or not queries:
        raise ConfigError("simulate needs at least one seed, one strategy and one query")
    market = Market.build(router.catalog, providers)
    k = servers_k if servers_k is not None else 5 * providers
    if k != router.params.cascade.servers_k:
        params_k = replace(router.params, cascade=CascadeParams(servers_k=k))
        router = copy.copy(router)
        router.params = params_k
    params = WorldParams(
        price_quality=price_quality, vendor_correlation=vendor_correlation, outage=outage
    )
    count = SchemaTokenCounter()
    inner = router.embedder
    memo = _MemoSpanEmbedder(inner) if isinstance(inner, SpanEmbedder) else _MemoEmbedder(inner)
    steps = plan_steps(queries, router.catalog, planner, embed=memo.embed, llm=router.params.llm)
    base = router
    opened: Router | None = None
    if providers > 1:
        opened = base = Router(
            market.catalog,
            store=router.store.directory / f"market-{providers}",
            embedder=router.embedder,
            documents=router.documents,
            questions=router.questions,
            params=router.params,
        )
    market_queries = market.queries(queries)
    runs: list[AgentRun] = []
    correlation: list[float] = []
    down: list[str | None] = []  # per seed, the vendor the outage took down
    try:
        for seed in seed_list:
            world = World.draw(market.catalog, seed, params, market)  # fixed before any policy
            rho = world.price_quality_correlation()
            if rho is not None:
                correlation.append(rho)
            catalog = world.catalog(market.catalog)
            seen = base.with_catalog(catalog, embedder=memo)  # same index, the world's prices
            order = task_stream(len(queries), stream, seed, tasks)  # fixed before any policy
            seed_queries = [market_queries[i] for i in order]
            seed_steps = [steps[i] for i in order]
            if outage is not None:
                if outage[0] >= len(order):
                    raise ConfigError(f"outage {outage[0]}:{outage[1]} starts after the stream")
                down.append(world.down_vendor)
            for s in strategies:
                if planner == "whole":
                    run = run_agent(
                        seen, world, catalog, seed_queries, s, n=n, tokens=count,
                        progress=progress,
                    )  # fmt: skip
                else:
                    run = run_step_agent(
                        strategy_routes(seen, s), s, world, catalog, seed_queries, seed_steps,
                        n=n, attempts=attempts, tokens=count, progress=progress, noise=noise,
                    )  # fmt: skip
                runs.append(run)
            if planner != "whole":
                runs.append(
                    run_step_agent(
                        OracleRoutes(world, catalog),
                        ORACLE_ROUTER,
                        world,
                        catalog,
                        seed_queries,
                        seed_steps,
                        n=n,
                        attempts=attempts,
                        tokens=count,
                        progress=progress,
                        noise=noise,
                    )  # fmt: skip
                )
    finally:
        if opened is not None:
            opened.close()
    setting: dict[str, Any] = {
        "providers": providers,
        "planner": planner,
        "attempts": attempts if planner != "whole" else None,
        "n": n,
        "price_quality": price_quality,
        "seeds": seed_list,
        "price_quality_spearman": float(np.mean(correlation)) if correlation else None,
    }
    if stream != "once" or tasks is not None or window is not None or noise:
        setting.update(stream=stream, tasks=tasks, window=window, noise=noise)
    if k != 5:
        setting["servers_k"] = k
    if vendor_correlation:
        setting["vendor_correlation"] = vendor_correlation
    if outage is not None:
        setting.update(outage=outage, outage_vendor=down)
    return Simulation(tuple(runs), setting, window)


def simulate(
    router: Router,
    queries: Sequence[Query],
    strategies: Sequence[str],
    seeds: int | Sequence[int] = 10,
    n: int = 3,
    progress: Progress | None = None,
    **options: Any,
) -> dict[str, dict[str, Stat]]:
    """Per strategy, the mean and 95 % half-width over seeds of every :data:`METRICS` entry
    (``run_simulation(...).series`` gives the per-query series; ``options`` are its
    keyword-only settings)."""
    return run_simulation(router, queries, strategies, seeds, n, progress, **options).summary
