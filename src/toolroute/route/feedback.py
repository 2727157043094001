"""Pseudo-relevance feedback from the catalog itself: Rocchio on the request's sub-intents.

A clause says a need in the user's words ("look up what Apple trades at"); the tools that
serve it say it in the catalog's ("get_stock_quote: current price of a ticker"). Taking a
clause's best-matching tools as relevant and moving the clause towards them (Rocchio's
relevance feedback with the top ``depth`` as the relevant set, no negative set) pulls the
rest of the catalog's words for that need into it:

    v' = normalise(v + β · mean(tool vectors of the top ``depth`` tools by cosine with v))

Each sub-intent moves towards its own tools, never towards the whole request's, so one need's
tools cannot crowd the others out of the top 5 (whole-request feedback did:
benchmarks/recall_feedback.py). The whole-request vector is left
as it is. Costs one (tools × intents) product per request; no LLM, no second model pass.
"""

from __future__ import annotations

import numpy as np

from toolroute.embed.base import Matrix, l2_normalise
from toolroute.index.build import ToolIndex

__all__ = ["DEFAULT_FEEDBACK", "intent_feedback"]

DEFAULT_FEEDBACK = 0.3
"""β of the ``adaptive-prf`` strategy, chosen with its depth (5) on mcpbench, sealtools,
metatool and the union queries, not on livemcpbench (benchmarks/recall_feedback.py)."""


def intent_feedback(ix: ToolIndex, intents: Matrix, beta: float, depth: int) -> Matrix:
    """Each row of ``intents`` (unit vectors) moved by ``beta`` towards the mean vector of its
    own top ``depth`` tools, renormalised; ``intents`` itself when there is nothing to do."""
    if beta <= 0 or depth <= 0 or not len(intents) or ix.size == 0:
        return intents
    depth = min(depth, ix.size)
    sims = intents @ ix.tool_vectors.T  # (intents, tools)
    top = np.argpartition(-sims, depth - 1, axis=1)[:, :depth]
    centroid = ix.tool_vectors[top].mean(axis=1)  # (intents, d)
    return l2_normalise(intents + beta * centroid)
