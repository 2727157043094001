"""Per-query ranking metrics and paired bootstrap intervals between two strategies.

A difference between two strategies on one query set is only worth reporting with its
uncertainty: both rank the same queries, so the interval resamples *queries* (the pairing is
per query) and recomputes the mean difference, ``rounds`` times with a fixed seed (numpy's
``default_rng``). A 95 % interval that excludes 0 is a real difference on that set; one that
straddles 0 is noise at this set's size.

The keep-rule is written here once (:func:`keep_verdict`): an idea is kept only if it loses on
no set beyond noise and gains beyond noise on at least one set it was not developed on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from toolroute.bench.metrics import query_metrics
from toolroute.catalog.models import ToolKey

__all__ = [
    "REPORT_METRICS",
    "Interval",
    "keep_verdict",
    "mean_metrics",
    "paired_bootstrap",
    "per_query_metrics",
]

REPORT_METRICS = ("recall@1", "recall@5", "recall@10", "mrr", "ndcg@10", "full@10")
"""The metrics every per-set table shows."""

Ranker = Callable[[str], Sequence[ToolKey]]
"""A query's text → its ranked tool keys (at least the top 10)."""


@dataclass(frozen=True, slots=True)
class Interval:
    """Mean of (candidate − baseline) over queries and its paired bootstrap interval."""

    diff: float
    low: float
    high: float

    @property
    def verdict(self) -> str:
        """``gain`` / ``loss`` when the interval excludes 0, else ``tie``."""
        if self.low > 0:
            return "gain"
        if self.high < 0:
            return "loss"
        return "tie"

    def __str__(self) -> str:
        return f"{self.diff:+.3f} [{self.low:+.3f}, {self.high:+.3f}]"


def per_query_metrics(
    rank: Ranker, queries: Sequence[tuple[str, Sequence[frozenset[ToolKey]]]]
) -> dict[str, npt.NDArray[np.float64]]:
    """Every :data:`REPORT_METRICS` per query (one array per metric, in query order)."""
    rows = [query_metrics(list(rank(text))[:10], groups) for text, groups in queries]
    return {m: np.array([r[m] for r in rows], dtype=np.float64) for m in REPORT_METRICS}


def mean_metrics(per_query: Mapping[str, npt.NDArray[np.float64]]) -> dict[str, float]:
    return {m: float(v.mean()) if v.size else 0.0 for m, v in per_query.items()}


def paired_bootstrap(
    candidate: npt.NDArray[np.float64],
    baseline: npt.NDArray[np.float64],
    *,
    rounds: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> Interval:
    """Mean per-query difference and its percentile interval over ``rounds`` resamples of
    the queries (the same resample for both strategies: paired)."""
    a = np.asarray(candidate, dtype=np.float64)
    b = np.asarray(baseline, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError("paired metrics need one value per query for both strategies")
    d = a - b
    if d.size == 0:
        return Interval(0.0, 0.0, 0.0)
    rng = np.random.default_rng(seed)
    means = np.empty(rounds)
    # resample in blocks of rounds so memory stays at rounds × block
    block = max(1, 2_000_000 // max(1, d.size))
    for start in range(0, rounds, block):
        stop = min(rounds, start + block)
        idx = rng.integers(0, d.size, size=(stop - start, d.size))
        means[start:stop] = d[idx].mean(axis=1)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return Interval(float(d.mean()), float(low), float(high))


def keep_verdict(
    intervals: Mapping[str, Sequence[Interval]], developed_on: Sequence[str]
) -> tuple[bool, str]:
    """The keep-rule over ``{set: [interval per guarded metric]}``: kept when no set shows a
    loss beyond noise on any metric and some set not in ``developed_on`` shows a gain. Returns
    (kept, the reason naming the deciding set)."""
    for name, ivs in intervals.items():
        if any(iv.verdict == "loss" for iv in ivs):
            return False, f"loses on {name}"
    fresh = [
        name
        for name, ivs in intervals.items()
        if name not in developed_on and any(iv.verdict == "gain" for iv in ivs)
    ]
    if fresh:
        return True, f"gains on {', '.join(fresh)}"
    return False, "no gain beyond noise on a set it was not developed on"
