"""What a simulation measured (:mod:`toolroute.bench.simulate`): every
(strategy, seed) run of the agent, summarised per strategy as mean ± 95 % half-width over seeds,
paired against a baseline over the same worlds, as series over the query stream and as learning
curves.

Counting, per query, then averaged over the stream: ``success_rate`` (every group met),
``groups_met`` (share of the groups met), ``cost_usd`` (Σ prices of attempts),
``cost_posted_usd`` (per-step agent: the same under EHRR Theorem 1's payment rule, each call
paying the posted price τ_i of its server where the strategy posted one), ``invalid_calls``
= ``invalid_route_calls`` (candidates shown and never usable, as each agent defines it) +
``invalid_tool_calls`` (failed attempts), ``tool_calls``,
``latency_s`` (Σ of G_i + call latency over attempts; routing itself is not counted),
``tokens`` (Σ over route calls of the cl100k tokens of each presented candidate's
``{"name", "description", "input_schema"}`` JSON, counted by ``toktok-rs``). Over seeds: mean
and the half-width of a Student-t 95 % interval (:func:`ci95`); :meth:`Simulation.paired` gives
the per-seed paired difference of two strategies.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from toolroute.bench.agent import ORACLE_ROUTER, AgentRun
from toolroute.errors import ConfigError

__all__ = ["METRICS", "REGRET", "Simulation", "Stat", "ci95", "stat_text"]

Stat = dict[str, float | None]
"""``{"mean": float, "ci95": float | None}``; ci95 is None with a single seed."""

METRICS = (
    "success_rate", "cost_usd", "invalid_calls", "latency_s", "tokens",
    "invalid_route_calls", "invalid_tool_calls", "tool_calls", "groups_met", "cost_posted_usd",
)  # fmt: skip
"""Per-query means reported for each strategy (the first five are the summary table's)."""
REGRET = ("regret_success", "regret_cost_usd")
"""Added to every strategy's summary when the oracle router ran (per-step agent)."""

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


def stat_text(stat: Stat, digits: int, *, sign: bool = False) -> str:
    """``mean ± half-width`` with ``digits`` decimals (the mean alone from one seed); ``sign``
    writes a positive mean's ``+`` (a difference)."""
    mean, half = stat["mean"] or 0.0, stat["ci95"]
    text = f"{mean:+.{digits}f}" if sign else f"{mean:.{digits}f}"
    return text + ("" if half is None else f" ± {half:.{digits}f}")


def _head(title: str, columns: Sequence[str]) -> list[str]:
    """A markdown table's title and header, a row per strategy to follow."""
    return [
        title,
        "",
        "| strategy | " + " | ".join(columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]


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
        lines = _head(
            f"Paired difference vs `{baseline}` (mean ± 95 % half-width over seeds)", METRICS
        )
        for name in names:
            cells = [stat_text(self.paired(m, name, baseline), 4, sign=True) for m in METRICS]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        summary = self.summary
        ratio = ("success_rate", "cost_usd", "cost_posted_usd", "invalid_calls", "latency_s",
                 "tokens")  # fmt: skip
        lines += [
            "",
            *_head(f"Ratio of means vs `{baseline}` (strategy mean / baseline mean)", ratio),
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
