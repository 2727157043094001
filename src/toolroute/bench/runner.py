"""Run strategies over a queries file and aggregate ranking metrics and routing latency."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from toolroute.bench.metrics import RANK_METRICS, SET_METRICS, query_metrics, set_metrics
from toolroute.bench.toolbox import Boxes
from toolroute.catalog.loader import Query
from toolroute.catalog.models import Tool
from toolroute.catalog.name import qualified_name
from toolroute.present.presenter import Presenter
from toolroute.present.tokens import tool_json
from toolroute.route.strategy import resolve_strategy
from toolroute.router import Candidate, Router, top_k

__all__ = ["bench"]

Progress = Callable[[str, int, int], None]

SET_SIZE = 5
_WARM = "warm up"
"""What a new toolbox's router routes once, untimed, before the request: latency is warm."""
"""Final set of a ranking strategy for set-level metrics: its top 5 (set-producing strategies,
pa-rag and atr, report their own selection)."""


def bench(
    router: Router,
    queries: Sequence[Query],
    strategies: Sequence[str],
    *,
    progress: Progress | None = None,
    tokens: Presenter | None = None,
    set_size: int = SET_SIZE,
) -> dict[str, dict[str, Any]]:
    """One result per strategy: the means of :data:`RANK_METRICS`, latency p50/p95 in ms (warm,
    query embedding included), the query count, and the same metrics per complexity. With
    ``tokens``, also ``tool_tokens_per_turn``: the mean cl100k tokens of tool definitions the
    model sees per turn under the strategy's presentation (Tool Attention's two phases).
    ``set_size``: the final set of a ranking strategy for set metrics (its top ``set_size``)."""
    for s in strategies:
        resolve_strategy(s)  # fail before any work on a typo
    boxes = Boxes(router) if any(q.toolbox for q in queries) else None
    try:
        return _bench(router, queries, strategies, progress, tokens, set_size, boxes)
    finally:
        if boxes is not None:
            boxes.close()


@contextmanager
def _over(router: Router, q: Query, boxes: Boxes | None) -> Iterator[Router]:
    """The router ``q`` is routed by: its own small toolbox's, or the bench's."""
    if q.toolbox is None or boxes is None:
        yield router
        return
    with boxes.router(q.toolbox) as r:
        yield r


def _bench(
    router: Router,
    queries: Sequence[Query],
    strategies: Sequence[str],
    progress: Progress | None,
    tokens: Presenter | None,
    set_size: int,
    boxes: Boxes | None,
) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    for name in strategies:
        # warm-up (model sessions, BLAS); with an LLM through a no-LLM strategy, so that no
        # answer is cached before the timed pass
        warm = name if router.params.llm is None else "hybrid"
        with _over(router, queries[0], boxes) as r:
            r.route(queries[0].text, k=10, strategy=warm)
        per_query: list[dict[str, float]] = []
        latencies: list[float] = []
        turn_tokens: list[float] = []
        phases: list[tuple[int, int]] = []
        kind = resolve_strategy(name).presentation
        llm = router.params.llm
        llm_before = (
            (
                llm.usage.calls,
                llm.usage.latency_s,
                llm.usage.prompt_tokens + llm.usage.completion_tokens,
            )
            if llm
            else None
        )
        stages_before = {k: dict(v) for k, v in llm.usage.by_stage.items()} if llm else {}
        answered: list[float] = []  # per out-of-scope query: did the strategy return a tool
        for i, q in enumerate(queries):
            notes: dict[str, Any] = {}
            with _over(router, q, boxes) as r:
                ix = r.built
                if r is not router:  # a new box: its one-off per-index work, untimed
                    r.scores(_WARM, name)
                t0 = time.perf_counter()
                order = top_k(r.scores(q.text, name, notes=notes), 10)
                latencies.append((time.perf_counter() - t0) * 1000.0)
            if not q.groups:  # out of scope: no tool serves it, so any answer is a false one
                answered.append(float(bool(order)))
                if progress is not None:
                    progress(name, i + 1, len(queries))
                continue
            row_q = query_metrics([ix.keys[j] for j in order], q.groups)
            # a servable request answered "no tool fits", and one answered with a caution
            row_q["refused"] = float(not order)
            verdict = notes.get("abstain")
            row_q["cautioned"] = float(bool(order) and getattr(verdict, "doubtful", False))
            final = notes.get("selected", order[:set_size])
            row_q.update(set_metrics([ix.keys[j] for j in final], q.groups))
            # What a filtering stage chose from (ATR's candidates); else the set itself.
            pool = notes.get("candidates", final)
            row_q["set_size"] = float(len(final))
            row_q["input_size"] = float(len(pool))
            row_q["input_set_recall"] = set_metrics([ix.keys[j] for j in pool], q.groups)[
                "set_recall"
            ]
            if "path" in notes:  # PA-RAG's complexity router: share sent down the complex path
                row_q["complex_path"] = float(notes["path"] == "complex")
            per_query.append(row_q)
            if tokens is not None:
                turn_tokens.append(_turn_tokens(tokens, kind, [ix.tools[j] for j in order], phases))
            if progress is not None:
                progress(name, i + 1, len(queries))
        row: dict[str, Any] = _mean(per_query)
        row["latency_ms"] = {
            "p50": round(float(np.percentile(latencies, 50)), 3),
            "p95": round(float(np.percentile(latencies, 95)), 3),
        }
        inscope = [q for q in queries if q.groups]
        row["queries"] = len(inscope)
        if answered:
            # false-positive rate: out-of-scope requests answered with at least one tool
            row["fp_rate"] = round(float(np.mean(answered)), 4)
            row["out_of_scope"] = len(answered)
        by: dict[str, dict[str, float | int]] = {}
        for level in ("simple", "complex"):
            sub = [m for m, q in zip(per_query, inscope, strict=True) if q.complexity == level]
            if sub:
                by[level] = {**_mean(sub), "queries": len(sub)}
        row["by_complexity"] = by
        if llm is not None and llm_before is not None:
            u = llm.usage
            n = len(queries)
            row["llm"] = {
                "calls_per_query": round((u.calls - llm_before[0]) / n, 3),
                "latency_ms_per_query": round((u.latency_s - llm_before[1]) * 1000 / n, 1),
                "tokens_per_query": round(
                    (u.prompt_tokens + u.completion_tokens - llm_before[2]) / n, 1
                ),
                "by_stage": _stage_costs(u.by_stage, stages_before),
            }
        if tokens is not None:
            row["tool_tokens_per_turn"] = round(float(np.mean(turn_tokens)), 1)
            if phases:
                row["phase1_tokens"] = round(float(np.mean([a for a, _ in phases])), 1)
                row["phase2_tokens"] = round(float(np.mean([b for _, b in phases])), 1)
        results[name] = row
    return results


def _stage_costs(
    now: dict[str, dict[str, float]], before: dict[str, dict[str, float]]
) -> dict[str, dict[str, float]]:
    """Per LLM stage, over this strategy's queries: requests and calls, mean seconds and
    tokens per request (what one decompose or select costs), fallbacks."""
    out: dict[str, dict[str, float]] = {}
    for stage, v in now.items():
        d = {k: v[k] - before.get(stage, {}).get(k, 0.0) for k in v}
        if not d["requests"]:
            continue
        r = d["requests"]
        out[stage] = {
            "requests": int(r),
            "calls": int(d["calls"]),
            "s_per_request": round(d["latency_s"] / r, 2),
            "prompt_tokens_per_request": round(d["prompt_tokens"] / r, 1),
            "completion_tokens_per_request": round(d["completion_tokens"] / r, 1),
            "fallbacks": int(d["fallbacks"]),
        }
    return out


def _turn_tokens(
    p: Presenter, kind: str, ranked: Sequence[Tool], phases: list[tuple[int, int]]
) -> float:
    if kind == "full":
        return float(p.full_schema_tokens())
    cands = [
        Candidate(t.server, t.name, 0.0, t.description, dict(t.input_schema))
        for t in ranked[: p.config.top_k]
    ]
    if kind == "top-k":  # named as the agent sees them (server__tool), as full-schema counts
        texts = [
            tool_json(qualified_name(c.server, c.tool), c.description, c.input_schema)
            for c in cands
        ]
        return float(sum(p.tokens.many(texts)))
    shown = p.present(cands)
    phases.append((shown.phase1_tokens, shown.phase2_tokens))
    return float(shown.tokens)


SET_SIZES = ("set_size", "input_size", "input_set_recall")
"""Per query: tools in the final set, tools it was chosen from, and the recall of those."""


def _mean(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    keys = [*RANK_METRICS, *SET_METRICS, *SET_SIZES]
    if not rows:  # every query out of scope: no recall to average
        return {m: 0.0 for m in keys}
    keys += [k for k in rows[0] if k not in keys and all(k in r for r in rows)]
    return {m: round(sum(r[m] for r in rows) / len(rows), 4) for m in keys}
