"""Wrappers that turn one strategy's relevance into another strategy: the adaptive layer
(capabilities, vendors, usage memory) and sub-intent feedback."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from toolroute.index.build import ToolIndex
from toolroute.route.adaptive import adaptive_route
from toolroute.route.feedback import DEFAULT_FEEDBACK
from toolroute.route.stage import QueryContext, RouteParams, Scores, StrategyFn
from toolroute.stats import StatsBook

__all__ = ["adaptive_over", "with_feedback"]


def adaptive_over(base: StrategyFn, **variant: Any) -> StrategyFn:
    """Capabilities over ``base``'s relevance, vendors by posterior value, the usage memory of
    the asking client (route/adaptive.py); ``variant`` overrides fields of
    :class:`~toolroute.route.adaptive.AdaptiveParams`."""

    def score(ix: ToolIndex, q: QueryContext, p: RouteParams) -> Scores:
        stats = q.stats if q.stats is not None else StatsBook(ix.catalog)
        params = replace(p.adaptive, **variant)
        evidence: dict[int, float] = {}
        if params.memory and len(stats.memory) and q.vector.size:
            for key, e in stats.memory.evidence(q.client, q.vector).items():
                row = stats.tool_row(key)
                if row is not None:
                    evidence[row] = e
        beta = stats.memory.params.boost
        return adaptive_route(ix, base(ix, q, p), stats, params, evidence, beta)

    return score


def with_feedback(base: StrategyFn) -> StrategyFn:
    """``base`` with sub-intent feedback on (route/feedback.py), at the params' β if set."""

    def score(ix: ToolIndex, q: QueryContext, p: RouteParams) -> Scores:
        beta = p.multi.intent_feedback if p.multi.intent_feedback > 0 else DEFAULT_FEEDBACK
        return base(ix, q, replace(p, multi=replace(p.multi, intent_feedback=beta)))

    return score
