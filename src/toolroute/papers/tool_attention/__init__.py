"""Tool Attention, from *Tool Attention Is All You Need: Dynamic Tool Gating and Lazy Schema
Loading for Eliminating the MCP/Tools Tax in Scalable Agentic Workflows*.

Its three parts: the Intent–Schema Overlap score (its eq. 5: the cosine of the request with
each tool's compact summary, name and description), the state-aware gate (its eq. 6:
preconditions and scopes, :mod:`toolroute.route.preconditions`, with the similarity threshold θ and
top-k of :mod:`toolroute.present.presenter`), and two-phase lazy schema loading (a summary
pool in context, full schemas only for the promoted tools: the presenter and the gateway;
:class:`~toolroute.papers.tool_attention.agent_loop.ToolAttention` is its Alg. 1 for a
Python agent loop, in a module of its own: it stands on the gateway's finder, which the
strategy registry here must not load). The ``tool-attention`` strategy ranks by the ISO score
alone and is presented in two phases.
"""

from __future__ import annotations

from toolroute.index.build import ToolIndex
from toolroute.route.stage import QueryContext, RouteParams, Scores, Strategy

__all__ = ["iso_score", "strategy"]


def iso_score(ix: ToolIndex, q: QueryContext, p: RouteParams) -> Scores:
    """ISO (eq. 5): cosine of the request with each tool's one-line summary vector."""
    out: Scores = ix.flat_vectors @ q.vector
    return out


def strategy() -> Strategy:
    """``tool-attention``: ISO ranking, gated and presented in two phases."""
    return Strategy(
        "tool-attention",
        iso_score,
        "query",
        "Tool Attention: intent-summary cosine, gated, schemas loaded lazily",
        group="paper",
    )
