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

Counting, per query, then averaged over the stream: ``success_rate`` (every group met),
``groups_met`` (share of the groups met), ``cost_usd`` (Σ prices of attempts),
``cost_posted_usd`` (per-step agent: the same under EHRR Theorem 1's payment rule, each call
paying the posted price τ_i of its server where the strategy posted one), ``invalid_calls``
= ``invalid_route_calls`` (candidates shown and never usable, as each agent defines it) +
``invalid_tool_calls`` (failed attempts), ``tool_calls``,
``latency_s`` (Σ of G_i + call latency over attempts; routing itself is not counted),
``tokens`` (Σ over route calls of the cl100k tokens of each presented candidate's
``{"name", "description", "input_schema"}`` JSON, counted by ``toktok-rs``). Over seeds: mean
and the half-width of a Student-t 95 % interval; :meth:`Simulation.paired` gives the per-seed
paired difference of two strategies.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np

from toolroute.bench.agent import (
    ORACLE_ROUTER,
    AgentRun,
    OracleRoutes,
    QueryResult,
    Routes,
    SchemaTokenCounter,
    run_agent,
    run_step_agent,
    strategy_routes,
)
from toolroute.bench.planner import PLANNERS, Planner, plan_steps
from toolroute.bench.world import Market, PriceQuality, World, WorldParams
from toolroute.catalog.loader import Query
from toolroute.embed.base import Embedder, Matrix, SpanEmbedder
from toolroute.errors import ConfigError
from toolroute.extra import require
from toolroute.route.strategy import CascadeParams, resolve_strategy
from toolroute.router import Router

__all__ = [
    "METRICS",
    "REGRET",
    "AgentRun",
    "QueryResult",
    "Routes",
    "SchemaTokenCounter",
    "Simulation",
    "ci95",
    "markdown_table",
    "run_agent",
    "run_simulation",
    "simulate",
    "task_stream",
    "write_simulation_outputs",
]

Progress = Callable[[str, int, int], None]
Stat = dict[str, float | None]
"""``{"mean": float, "ci95": float | None}``; ci95 is None with a single seed."""

METRICS = (
    "success_rate", "cost_usd", "invalid_calls", "latency_s", "tokens",
    "invalid_route_calls", "invalid_tool_calls", "tool_calls", "groups_met", "cost_posted_usd",
)  # fmt: skip
"""Per-query means reported for each strategy (the first five are the summary table's)."""
REGRET = ("regret_success", "regret_cost_usd")
"""Added to every strategy's summary when the oracle router ran (per-step agent)."""

# -- aggregation --------------------------------------------------------------------------------

_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip
"""Two-sided 95 % Student-t quantiles t_{0.975, df} for df = 1 … 30."""
_T975_LARGE = ((40, 2.021), (60, 2.000), (120, 1.980), (1000, 1.962))


def _t975(df: int) -> float:
    if df < 1:
        raise ConfigError(f"a t quantile needs df >= 1, got {df}")
    if df <= len(_T975):
        return _T975[df - 1]
    quantile = _T975[-1]
    for at, t in _T975_LARGE:  # the next lower tabulated df: a slightly wider, safe interval
        if df >= at:
            quantile = t
    return quantile


def ci95(values: Sequence[float]) -> Stat:
    """Mean and half-width t_{0.975, m−1} · s / √m of the 95 % interval over m seeds (s with
    ddof = 1); the half-width is None for a single value."""
    if not values:
        raise ConfigError("no values to summarise")
    arr = np.asarray(values, dtype=np.float64)
    mean = float(arr.mean())
    if arr.size < 2:
        return {"mean": mean, "ci95": None}
    half = _t975(arr.size - 1) * float(arr.std(ddof=1)) / math.sqrt(arr.size)
    return {"mean": mean, "ci95": half}


@dataclass(frozen=True, slots=True)
class Simulation:
    """Every (strategy, seed) run; ``summary`` is what :func:`simulate` returns."""

    runs: tuple[AgentRun, ...]
    setting: dict[str, Any] = field(default_factory=dict)
    """How the world and the agent were set (providers, planner, attempts, n, prices)."""
    window: tuple[int, int] | None = None
    """Tasks A … B−1 of the stream are what the summary and paired figures count."""

    def by_strategy(self, *, whole: bool = False) -> dict[str, list[AgentRun]]:
        """Runs per strategy, cut to :attr:`window` unless ``whole``."""
        out: dict[str, list[AgentRun]] = {}
        for r in self.runs:
            if self.window is not None and not whole:
                a, b = self.window
                if not r.queries[a:b]:
                    raise ConfigError(f"window {a}:{b} holds no task of the stream")
                r = AgentRun(r.strategy, r.seed, r.queries[a:b])
            out.setdefault(r.strategy, []).append(r)
        return out

    @property
    def summary(self) -> dict[str, dict[str, Stat]]:
        runs = self.by_strategy()
        out = {
            name: {m: ci95([r.means()[m] for r in rs]) for m in METRICS}
            for name, rs in runs.items()
        }
        if ORACLE_ROUTER in runs:
            for name in runs:
                out[name]["regret_success"] = self.paired("success_rate", ORACLE_ROUTER, name)
                out[name]["regret_cost_usd"] = self.paired("cost_usd", name, ORACLE_ROUTER)
        return out

    def paired(self, metric: str, strategy: str, baseline: str) -> Stat:
        """Mean and 95 % half-width of the per-seed difference strategy − baseline in
        ``metric``: both met the same worlds and luck, so the pairing removes their noise."""
        if metric not in METRICS:
            raise ConfigError(f"unknown metric {metric!r}; choose from: {', '.join(METRICS)}")
        runs = self.by_strategy()
        if strategy not in runs or baseline not in runs:
            raise ConfigError(f"both {strategy!r} and {baseline!r} must have been simulated")
        base = {r.seed: r.means()[metric] for r in runs[baseline]}
        return ci95([r.means()[metric] - base[r.seed] for r in runs[strategy]])

    def paired_table(self, baseline: str) -> str:
        """Markdown: every other strategy minus ``baseline``, per metric, paired over seeds."""
        names = [n for n in self.by_strategy() if n != baseline]
        lines = [
            f"Paired difference vs `{baseline}` (mean ± 95 % half-width over seeds)",
            "",
            "| strategy | " + " | ".join(METRICS) + " |",
            "|---|" + "---:|" * len(METRICS),
        ]
        for name in names:
            cells = []
            for m in METRICS:
                d = self.paired(m, name, baseline)
                mean, half = d["mean"] or 0.0, d["ci95"]
                cells.append(f"{mean:+.4f}" + ("" if half is None else f" ± {half:.4f}"))
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        summary = self.summary
        ratio = ("success_rate", "cost_usd", "cost_posted_usd", "invalid_calls", "latency_s",
                 "tokens")  # fmt: skip
        lines += [
            "",
            f"Ratio of means vs `{baseline}` (strategy mean / baseline mean)",
            "",
            "| strategy | " + " | ".join(ratio) + " |",
            "|---|" + "---:|" * len(ratio),
        ]
        for name in names:
            cells = []
            for m in ratio:
                a, b = summary[name][m]["mean"], summary[baseline][m]["mean"]
                cells.append("n/a" if not b or a is None else f"{a / b:.3f}")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        return "\n".join(lines) + "\n"

    @property
    def series(self) -> dict[str, dict[str, list[float]]]:
        """Per strategy, over the query stream and averaged over seeds: the running success
        rate and the cumulative cost (USD)."""
        out: dict[str, dict[str, list[float]]] = {}
        for name, runs in self.by_strategy(whole=True).items():
            ok = np.array([[q.success for q in r.queries] for r in runs], dtype=np.float64)
            usd = np.array([[q.cost_usd for q in r.queries] for r in runs], dtype=np.float64)
            steps = np.arange(1, ok.shape[1] + 1)
            out[name] = {
                "running_success": (np.cumsum(ok, axis=1) / steps).mean(axis=0).tolist(),
                "cumulative_cost_usd": np.cumsum(usd, axis=1).mean(axis=0).tolist(),
            }
        return out

    def curves(self, bins: int = 20) -> dict[str, dict[str, list[float]]]:
        """Learning curves per strategy over the whole stream, in ``bins`` equal blocks of
        tasks (mean over seeds): success rate, USD per successful task (block cost / block
        successes) and invalid calls per task, with ``tasks`` the block ends."""
        out: dict[str, dict[str, list[float]]] = {}
        for name, runs in self.by_strategy(whole=True).items():
            total = len(runs[0].queries)
            edges = np.linspace(0, total, min(bins, total) + 1).astype(int)
            ok = np.array([[q.success for q in r.queries] for r in runs], dtype=np.float64)
            usd = np.array([[q.cost_usd for q in r.queries] for r in runs], dtype=np.float64)
            bad = np.array([[q.invalid_calls for q in r.queries] for r in runs], dtype=np.float64)
            succ, per, inv = [], [], []
            for a, b in zip(edges[:-1], edges[1:], strict=True):
                wins = ok[:, a:b].sum()
                succ.append(float(ok[:, a:b].mean()))
                per.append(float(usd[:, a:b].sum() / wins) if wins else float("nan"))
                inv.append(float(bad[:, a:b].mean()))
            out[name] = {
                "tasks": [float(b) for b in edges[1:]],
                "success_rate": succ,
                "usd_per_success": per,
                "invalid_calls": inv,
            }
        return out


Stream = Literal["once", "zipf", "sessions"]
STREAMS: tuple[Stream, ...] = get_args(Stream)


def task_stream(count: int, stream: Stream, seed: int, tasks: int | None = None) -> list[int]:
    """The order in which the agent meets the ``count`` tasks, drawn from ``seed`` alone:

    once       each task once, in file order (``tasks`` may cut it)
    zipf       ``tasks`` draws with P(rank k) ∝ 1/k over a seeded ranking of the tasks:
               the same jobs recur, a few very often (real agents' workloads)
    sessions   sessions of Geometric(1/5) tasks, each session drawing from 3 tasks
               picked by the Zipf law: bursts of related, repeated work
    """
    if count < 1:
        raise ConfigError("a stream needs at least one task")
    if stream not in STREAMS:
        raise ConfigError(f"unknown stream {stream!r}; choose from: {', '.join(STREAMS)}")
    if stream == "once":
        return list(range(count if tasks is None else min(tasks, count)))
    n = tasks if tasks is not None else 2000
    if n < 1:
        raise ConfigError(f"tasks must be at least 1, got {n}")
    rng = np.random.default_rng([seed, 7_919])  # its own stream: the world's draws never move
    ranking = rng.permutation(count)
    weights = 1.0 / np.arange(1, count + 1)
    weights /= weights.sum()
    if stream == "zipf":
        return [int(ranking[k]) for k in rng.choice(count, size=n, p=weights)]
    out: list[int] = []
    while len(out) < n:
        pool = ranking[rng.choice(count, size=min(3, count), replace=False, p=weights)]
        length = int(rng.geometric(0.2))
        out.extend(int(pool[i]) for i in rng.integers(len(pool), size=length))
    return out[:n]


class _MemoEmbedder:
    """Remembers each call's vectors: every (seed, strategy) routes the same query texts."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self._memo: dict[tuple[str, ...], Matrix] = {}

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

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


# -- output -------------------------------------------------------------------------------------

_COLUMNS = (
    ("success_rate", "success", 3),
    ("cost_usd", "cost USD/query", 4),
    ("invalid_calls", "invalid calls", 2),
    ("latency_s", "call latency s", 2),
    ("tokens", "tokens", 0),
)

_REGRET_COLUMNS = (
    ("regret_success", "success regret", 3),
    ("regret_cost_usd", "cost regret USD", 4),
)

_POSTED_COLUMN = ("cost_posted_usd", "cost USD/query at τ", 4)
"""Theorem 1's payment rule (EHRR pays its posted price τ_i per call; a strategy posting no
price pays the tool's): tracked by the per-step agent, so shown beside its regret."""


def markdown_table(result: Mapping[str, Mapping[str, Stat]], title: str = "") -> str:
    """One row per strategy: mean ± 95 % half-width of the five summary metrics; with the
    per-step agent (regret known) also the cost under Theorem 1's payment rule."""

    def cell(s: Stat, digits: int) -> str:
        mean, half = s["mean"], s["ci95"]
        assert mean is not None
        return f"{mean:.{digits}f}" + ("" if half is None else f" ± {half:.{digits}f}")

    lines = [f"### {title}", ""] if title else []
    columns: tuple[tuple[str, str, int], ...] = _COLUMNS
    if result and all(m in r for r in result.values() for m in REGRET):
        columns = (*_COLUMNS[:2], _POSTED_COLUMN, *_COLUMNS[2:], *_REGRET_COLUMNS)
    lines.append("| strategy | " + " | ".join(h for _, h, _ in columns) + " |")
    lines.append("|---|" + "---:|" * len(columns))
    for name, r in result.items():
        lines.append(f"| {name} | " + " | ".join(cell(r[m], d) for m, _, d in columns) + " |")
    return "\n".join(lines) + "\n"


def write_simulation_outputs(
    result: Mapping[str, Mapping[str, Stat]],
    series: Mapping[str, Mapping[str, Sequence[float]]],
    out_dir: str | Path,
    title: str = "EHRR economics simulation",
    setting: Mapping[str, Any] | None = None,
) -> list[Path]:
    """Write simulate.json (``{"summary", "series"}``), simulate.md and simulate.png (running
    success and cumulative cost over the stream, mean over seeds) into ``out_dir``."""
    require("matplotlib", "plot", "plotting").use("Agg")
    plt = require("matplotlib.pyplot", "plot", "plotting")

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    js, md, png = out / "simulate.json", out / "simulate.md", out / "simulate.png"
    payload: dict[str, Any] = {"summary": result, "series": series}
    if setting:
        payload["setting"] = dict(setting)
    js.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    about = ""
    if setting:
        about = "Setting: " + ", ".join(f"{k} = {v}" for k, v in setting.items()) + "\n\n"
    md.write_text(markdown_table(result, title) + ("\n" + about if about else ""), encoding="utf-8")

    fig, (left, right) = plt.subplots(1, 2, figsize=(11.0, 4.2))
    for name, s in series.items():
        xs = range(1, len(s["running_success"]) + 1)
        left.plot(xs, s["running_success"], label=name)
        right.plot(xs, s["cumulative_cost_usd"], label=name)
    left.set(xlabel="query in stream", ylabel="running success rate")
    left.set_ylim(bottom=0)
    right.set(xlabel="query in stream", ylabel="cumulative cost (USD)")
    for ax in (left, right):
        ax.grid(alpha=0.3)
    left.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)
    return [js, md, png]


def write_learning_outputs(sim: Simulation, out_dir: str | Path, bins: int = 20) -> list[Path]:
    """Write curves.json and learning.png (success, USD per successful task and invalid calls
    against tasks seen, one figure) and pareto.png (success against cost per query, mean ±
    95 % over seeds, per strategy) into ``out_dir``."""
    require("matplotlib", "plot", "plotting").use("Agg")
    plt = require("matplotlib.pyplot", "plot", "plotting")

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    curves = sim.curves(bins)
    js, learning, pareto = out / "curves.json", out / "learning.png", out / "pareto.png"
    js.write_text(json.dumps(curves, indent=2) + "\n", encoding="utf-8")
    fig, axes = plt.subplots(1, 3, figsize=(15.0, 4.2))
    panels = (
        ("success_rate", "success rate"),
        ("usd_per_success", "USD per successful task"),
        ("invalid_calls", "invalid calls per task"),
    )
    for ax, (metric, label) in zip(axes, panels, strict=True):
        for name, c in curves.items():
            ax.plot(c["tasks"], c[metric], marker=".", label=name)
        ax.set(xlabel="tasks seen", ylabel=label)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle("Learning curves (mean over seeds, per block of tasks)")
    fig.tight_layout()
    fig.savefig(learning, dpi=120)
    plt.close(fig)

    summary = sim.summary
    fig, ax = plt.subplots(figsize=(7.0, 5.0))
    for name, r in summary.items():
        x, y = r["cost_usd"], r["success_rate"]
        ax.errorbar(
            x["mean"] or 0.0,
            y["mean"] or 0.0,
            xerr=x["ci95"] or 0.0,
            yerr=y["ci95"] or 0.0,
            fmt="o",
            capsize=3,
        )
        ax.annotate(name, (x["mean"] or 0.0, y["mean"] or 0.0), fontsize=7,
                    xytext=(4, 4), textcoords="offset points")  # fmt: skip
    ax.set(xlabel="cost USD per task", ylabel="success rate", title="Success against cost")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(pareto, dpi=120)
    plt.close(fig)
    return [js, learning, pareto]
