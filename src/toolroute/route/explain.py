"""The stages' own scores behind a non-EHRR ranking, for ``route --explain``.

EHRR explains itself through :class:`~toolroute.papers.ehrr.routing.EhrrTrace` (similarities, costs,
posted price, accept bit, utility). The similarity strategies are sums of a few stages
(``toolroute.route.strategy``); this module recomputes those stages for the returned tools
only, so a user sees which one put a tool where it is: the dense cosine, BM25 (raw and as a
share of the best BM25 of the query, the part hybrid fusion adds), the server layer's score and
rank (what a cascade prunes by) and the best-matching sub-intent (what ``multi`` lifts by).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from toolroute.catalog.models import ToolKey
from toolroute.index.build import ToolIndex
from toolroute.route.strategy import (
    QueryContext,
    RouteParams,
    baseline_bm25,
    baseline_dense,
    baseline_hier5,
    resolve_strategy,
    server_scores,
)

# The reference methods score other documents: name + description BM25, flat-text vectors.
_BASELINES = (baseline_bm25, baseline_dense, baseline_hier5)

__all__ = ["stage_scores"]


def stage_scores(
    ix: ToolIndex,
    q: QueryContext,
    p: RouteParams,
    keys: Sequence[ToolKey],
    strategy: str,
) -> list[dict[str, Any]]:
    """Per tool in ``keys``: the stage figures of the strategy family that ranked it."""
    row = {key: i for i, key in enumerate(ix.keys)}
    rows = [row[k] for k in keys]
    baseline = resolve_strategy(strategy).score in _BASELINES
    lexical = (ix.name_desc_lexical if baseline else ix.tool_lexical).scores(q.text)
    top_lex = float(lexical.max()) if lexical.size else 0.0
    has_vector = q.vector.size > 0
    dense = (ix.flat_vectors if baseline else ix.tool_vectors) @ q.vector if has_vector else None
    servers = (
        (ix.server_vectors @ q.vector if baseline else server_scores(ix, q, p))
        if has_vector
        else None
    )
    server_rank = (
        {int(s): r for r, s in enumerate(np.argsort(-servers, kind="stable"), 1)}
        if servers is not None
        else {}
    )
    intents = (
        ix.tool_vectors @ q.intent_vectors.T
        if q.intent_vectors is not None and len(q.intent_vectors)
        else None
    )
    out: list[dict[str, Any]] = []
    for i in rows:
        d: dict[str, Any] = {}
        if dense is not None:
            d["dense"] = round(float(dense[i]), 4)
        d["bm25"] = round(float(lexical[i]), 3)
        d["bm25_share"] = round(float(lexical[i]) / top_lex, 3) if top_lex > 0 else 0.0
        if servers is not None:
            s = int(ix.server_of[i])
            d["server_score"] = round(float(servers[s]), 4)
            d["server_rank"] = server_rank[s]
        if intents is not None:
            j = int(np.argmax(intents[i]))
            d["best_intent"] = q.intents[j]
            d["best_intent_sim"] = round(float(intents[i, j]), 4)
        out.append(d)
    return out
