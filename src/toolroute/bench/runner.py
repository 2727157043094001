"""Run strategies over a queries file and aggregate ranking metrics and routing latency."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from toolroute.bench.metrics import RANK_METRICS, query_metrics
from toolroute.catalog.loader import Query
from toolroute.route.strategy import resolve_strategy
from toolroute.router import Router, top_k

__all__ = ["bench"]

Progress = Callable[[str, int, int], None]


def bench(
    router: Router,
    queries: Sequence[Query],
    strategies: Sequence[str],
    *,
    progress: Progress | None = None,
) -> dict[str, dict[str, Any]]:
    """One result per strategy: the means of :data:`RANK_METRICS`, latency p50/p95 in ms
    (warm, query embedding included), the query count, and the same metrics per complexity."""
    for s in strategies:
        resolve_strategy(s)  # fail before any work on a typo
    ix = router.built
    results: dict[str, dict[str, Any]] = {}
    for name in strategies:
        router.route(queries[0].text, k=10, strategy=name)  # warm-up: caches, lazy init
        per_query: list[dict[str, float]] = []
        latencies: list[float] = []
        for i, q in enumerate(queries):
            t0 = time.perf_counter()
            order = top_k(router.scores(q.text, name), 10)
            latencies.append((time.perf_counter() - t0) * 1000.0)
            per_query.append(query_metrics([ix.keys[j] for j in order], q.groups))
            if progress is not None:
                progress(name, i + 1, len(queries))
        row: dict[str, Any] = _mean(per_query)
        row["latency_ms"] = {
            "p50": round(float(np.percentile(latencies, 50)), 3),
            "p95": round(float(np.percentile(latencies, 95)), 3),
        }
        row["queries"] = len(queries)
        by: dict[str, dict[str, float | int]] = {}
        for level in ("simple", "complex"):
            sub = [m for m, q in zip(per_query, queries, strict=True) if q.complexity == level]
            if sub:
                by[level] = {**_mean(sub), "queries": len(sub)}
        row["by_complexity"] = by
        results[name] = row
    return results


def _mean(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    return {m: round(sum(r[m] for r in rows) / len(rows), 4) for m in RANK_METRICS}
