"""EHRR economics simulation (seed ``000_33cbc8800e6eb5c6.txt`` §V): what economics-aware routing
buys, measured on a seeded world that is fixed before any policy runs and identical for all.

Oracle agent (:func:`run_agent`): the queries are one stream per (strategy, seed) with one
:class:`~toolroute.stats.StatsBook`, so online statistics (eq. 8) learn as they go. For each
required group of a query it routes the query text (n candidates), then calls, in the order
shown, every not-yet-tried candidate that satisfies the group until one succeeds. A call first
draws the server's post-accept failure (p_i; ``server_failed=True``), then the tool's success
(r_ij), so it succeeds with probability (1 − p_i) r_ij. If a call failed and the group is still
unmet after the presented candidates, it re-routes once (same text, updated statistics) and
tries the satisfying candidates not tried yet; a route that shows no satisfying tool is not
retried (no call, so nothing the router reads has changed). Every attempt pays p_ij, costs the
agent G_i + the call's latency, and records an Outcome with the call's latency alone (the
router adds G_i itself in eqs. 2 and 6), also on failure. The world is in
:mod:`toolroute.bench.world`.

Counting, per query, then averaged over the stream: ``success_rate`` (every group met),
``groups_met`` (share of the groups met), ``cost_usd`` (Σ prices of attempts), ``invalid_calls``
= ``invalid_route_calls`` (distinct candidates presented during the query that never matched
any of its groups, so were never called: shown, never useful) + ``invalid_tool_calls``
(failed attempts), ``tool_calls``,
``latency_s`` (Σ of G_i + call latency over attempts; routing itself is not counted),
``tokens`` (Σ over route calls of the cl100k tokens of each presented candidate's
``{"name", "description", "input_schema"}`` JSON, counted by ``toktok-rs``). Over seeds: mean
and the half-width of a Student-t 95 % interval; :meth:`Simulation.paired` gives the per-seed
paired difference of two strategies.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from toolroute.bench.world import World, call_outcome
from toolroute.catalog.loader import Query
from toolroute.catalog.models import Catalog, ToolKey
from toolroute.embed.base import Embedder, Matrix, SpanEmbedder
from toolroute.errors import ConfigError
from toolroute.present.tokens import CountFn, TokenCounter, tool_json
from toolroute.route.strategy import resolve_strategy
from toolroute.router import Candidate, Router
from toolroute.stats import StatsBook

__all__ = [
    "METRICS",
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
    "write_simulation_outputs",
]

Floats = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]
Tier = Literal["low", "high"]
Progress = Callable[[str, int, int], None]
Stat = dict[str, float | None]
"""``{"mean": float, "ci95": float | None}``; ci95 is None with a single seed."""

METRICS = (
    "success_rate", "cost_usd", "invalid_calls", "latency_s", "tokens",
    "invalid_route_calls", "invalid_tool_calls", "tool_calls", "groups_met",
)  # fmt: skip
"""Per-query means reported for each strategy (the first five are the issue's table)."""

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


# -- the oracle agent ---------------------------------------------------------------------------


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

    def by_strategy(self) -> dict[str, list[AgentRun]]:
        out: dict[str, list[AgentRun]] = {}
        for r in self.runs:
            out.setdefault(r.strategy, []).append(r)
        return out

    @property
    def summary(self) -> dict[str, dict[str, Stat]]:
        return {
            name: {m: ci95([r.means()[m] for r in runs]) for m in METRICS}
            for name, runs in self.by_strategy().items()
        }

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
        return "\n".join(lines) + "\n"

    @property
    def series(self) -> dict[str, dict[str, list[float]]]:
        """Per strategy, over the query stream and averaged over seeds: the running success
        rate and the cumulative cost (USD)."""
        out: dict[str, dict[str, list[float]]] = {}
        for name, runs in self.by_strategy().items():
            ok = np.array([[q.success for q in r.queries] for r in runs], dtype=np.float64)
            usd = np.array([[q.cost_usd for q in r.queries] for r in runs], dtype=np.float64)
            steps = np.arange(1, ok.shape[1] + 1)
            out[name] = {
                "running_success": (np.cumsum(ok, axis=1) / steps).mean(axis=0).tolist(),
                "cumulative_cost_usd": np.cumsum(usd, axis=1).mean(axis=0).tolist(),
            }
        return out


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
) -> Simulation:
    """Run every strategy over the query stream in each seed's world (seeds ``0 … seeds−1``, or
    the given seeds). Strategies route through ``router.with_catalog(world catalog)``: the same
    index, re-priced with the world's declared prices; nothing is re-indexed or stored."""
    for s in strategies:
        resolve_strategy(s)  # fail before any work on a typo
    if n < 1:
        raise ConfigError(f"n must be at least 1, got {n}")
    seed_list = list(range(seeds)) if isinstance(seeds, int) else list(seeds)
    if not seed_list or not strategies or not queries:
        raise ConfigError("simulate needs at least one seed, one strategy and one query")
    count = SchemaTokenCounter()
    inner = router.embedder
    memo = _MemoSpanEmbedder(inner) if isinstance(inner, SpanEmbedder) else _MemoEmbedder(inner)
    runs: list[AgentRun] = []
    for seed in seed_list:
        world = World.draw(router.catalog, seed)  # fixed before any strategy routes
        catalog = world.catalog(router.catalog)
        seen = router.with_catalog(catalog, embedder=memo)  # same index, the world's prices
        runs.extend(
            run_agent(seen, world, catalog, queries, s, n=n, tokens=count, progress=progress)
            for s in strategies
        )
    return Simulation(tuple(runs))


def simulate(
    router: Router,
    queries: Sequence[Query],
    strategies: Sequence[str],
    seeds: int | Sequence[int] = 10,
    n: int = 3,
    progress: Progress | None = None,
) -> dict[str, dict[str, Stat]]:
    """Per strategy, the mean and 95 % half-width over seeds of every :data:`METRICS` entry
    (``run_simulation(...).series`` gives the per-query series)."""
    return run_simulation(router, queries, strategies, seeds, n, progress).summary


# -- output -------------------------------------------------------------------------------------

_COLUMNS = (
    ("success_rate", "success", 3),
    ("cost_usd", "cost USD/query", 4),
    ("invalid_calls", "invalid calls", 2),
    ("latency_s", "call latency s", 2),
    ("tokens", "tokens", 0),
)


def markdown_table(result: Mapping[str, Mapping[str, Stat]], title: str = "") -> str:
    """One row per strategy: mean ± 95 % half-width of the issue's five metrics."""

    def cell(s: Stat, digits: int) -> str:
        mean, half = s["mean"], s["ci95"]
        assert mean is not None
        return f"{mean:.{digits}f}" + ("" if half is None else f" ± {half:.{digits}f}")

    lines = [f"### {title}", ""] if title else []
    lines.append("| strategy | " + " | ".join(h for _, h, _ in _COLUMNS) + " |")
    lines.append("|---|" + "---:|" * len(_COLUMNS))
    for name, r in result.items():
        lines.append(f"| {name} | " + " | ".join(cell(r[m], d) for m, _, d in _COLUMNS) + " |")
    return "\n".join(lines) + "\n"


def write_simulation_outputs(
    result: Mapping[str, Mapping[str, Stat]],
    series: Mapping[str, Mapping[str, Sequence[float]]],
    out_dir: str | Path,
    title: str = "EHRR economics simulation",
) -> list[Path]:
    """Write simulate.json (``{"summary", "series"}``), simulate.md and simulate.png (running
    success and cumulative cost over the stream, mean over seeds) into ``out_dir``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    js, md, png = out / "simulate.json", out / "simulate.md", out / "simulate.png"
    payload: dict[str, Any] = {"summary": result, "series": series}
    js.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    md.write_text(markdown_table(result, title), encoding="utf-8")

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
