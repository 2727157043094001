"""ScaleMCP, from *ScaleMCP: Dynamic and Auto-Synchronizing Model Context Protocol Tools for LLM
Agents*: an embedding retriever over Tool Document Weighted Average vectors.

The paper's two parts live where every strategy uses them: the weighted tool documents (TDWA,
its eq. 1, with its ``var-1`` and ``var-2`` weightings as document presets) in
:mod:`toolroute.index.tdwa`, synthetic questions in :mod:`toolroute.index.document`, and the
hash-based auto-synchronisation of servers and index in :mod:`toolroute.downstream.sync` and the
store. The ``scalemcp`` strategy is its retrieval step alone: the cosine of the request with
each tool's TDWA vector, nothing else (``--documents var-1`` for the paper's weights).
"""

from __future__ import annotations

from toolroute.index.build import ToolIndex
from toolroute.route.stage import QueryContext, RouteParams, Scores, Strategy

__all__ = ["scalemcp", "strategy"]


def scalemcp(ix: ToolIndex, q: QueryContext, p: RouteParams) -> Scores:
    """TDWA retrieval: cosine of the request with every tool's weighted document vector."""
    out: Scores = ix.tool_vectors @ q.vector
    return out


def strategy() -> Strategy:
    """``scalemcp``: the paper's retrieval step."""
    return Strategy(
        "scalemcp",
        scalemcp,
        "query",
        "ScaleMCP: cosine over Tool Document Weighted Average vectors",
        group="paper",
    )
