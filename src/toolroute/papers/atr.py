"""ATR, from *Adaptive Tool Routing: Dynamic Tool Selection for MCP-Heavy Agents*: an LLM
filters the top candidates' summaries down to at most ``max_tools``, includes both when
unsure, and the unfiltered candidates stand when nothing valid comes back (or no model is
configured: :mod:`toolroute.route.llm_stages`).
"""

from __future__ import annotations

from dataclasses import dataclass

from toolroute.index.build import ToolIndex
from toolroute.route import llm_stages
from toolroute.route.stage import QueryContext, RouteParams, Scores, Strategy, StrategyFn, multi

__all__ = ["AtrParams", "atr_scores", "strategy"]


@dataclass(frozen=True, slots=True)
class AtrParams:
    max_tools: int = 5
    """The cap on the filtered set; the filter sees twice this many candidates."""


def atr_scores(params: AtrParams = AtrParams()) -> StrategyFn:
    """The filtered set first, in ``multi``'s order, then the rest."""

    def score(ix: ToolIndex, q: QueryContext, p: RouteParams) -> Scores:
        base = multi(ix, q, p)
        candidates = llm_stages.top_indices(base, 2 * params.max_tools)
        chosen, used = llm_stages.select(p.llm, q.text, ix, candidates, params.max_tools)
        if not used:  # the paper's fallback: the unfiltered list
            chosen = candidates
        q.notes.update(selected=chosen, candidates=candidates, llm=used)
        out = base.copy()
        out[chosen] = 10.0 + base[chosen]
        return out

    return score


def strategy(params: AtrParams = AtrParams()) -> Strategy:
    """``atr``: the LLM filter over the candidates' summaries."""
    return Strategy(
        "atr",
        atr_scores(params),
        "intent-spans",
        "Adaptive Tool Routing: an LLM filters the candidates' summaries",
        group="paper",
    )
