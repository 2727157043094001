"""The ``ehrr`` strategy: EHRR's Alg. 2 (:mod:`toolroute.papers.ehrr.routing`) over the router's
similarities, from *Clearing MCP Navigation Fog with Economics-Aware Hierarchical Tool Routing*.

:func:`ehrr_scores` builds the score function for any :class:`EhrrParams` (the benchmarks
register the paper's ablations and our estimator variants with it); :func:`ehrr_subtasks`
routes each functional subtask the paper's §III describes on its own.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from toolroute.index.build import ToolIndex
from toolroute.papers.ehrr.routing import EhrrParams, ehrr_route
from toolroute.route import llm_stages
from toolroute.route.stage import (
    QueryContext,
    RouteParams,
    Scores,
    Strategy,
    StrategyFn,
    dense,
    hybrid,
    server_scores,
)
from toolroute.stats import StatsBook

__all__ = ["TABLE_V", "ehrr_scores", "ehrr_subtasks", "strategy"]

TABLE_V = EhrrParams()
"""The paper's defaults."""


def ehrr_scores(params: EhrrParams = TABLE_V) -> StrategyFn:
    """EHRR's utilities under ``params``; the server shortlist's k is the router's
    ``servers_k`` (one k for the cascade and EHRR, as the simulation sets it)."""

    def score(ix: ToolIndex, q: QueryContext, p: RouteParams) -> Scores:
        stats = q.stats if q.stats is not None else StatsBook(ix.catalog)
        ep = replace(params, servers_k=p.cascade.servers_k)
        if ep.similarity == "hybrid":
            server_sim, tool_sim = server_scores(ix, q, p), hybrid(ix, q, p)
        else:  # the paper's eq. 1 on both layers
            server_sim, tool_sim = ix.server_vectors @ q.vector, dense(ix, q, p)
        return ehrr_route(ix, server_sim, tool_sim, stats, ep, q.trace)

    return score


def ehrr_subtasks(params: EhrrParams = TABLE_V) -> StrategyFn:
    """EHRR anchored on functional subtasks (the paper's §III): the router's LLM rewrites the
    request as ``{domain, operation, target}`` subtasks, Alg. 2 routes each one, and a tool
    keeps its best utility over the subtasks (utilities share one scale). Offline: one
    subtask per clause. An agent that writes its own subtask passes it to ``find_tools``."""
    one = ehrr_scores(params)

    def score(ix: ToolIndex, q: QueryContext, p: RouteParams) -> Scores:
        subtasks, used = llm_stages.functional_subtasks(p.llm, q.text)
        texts = [llm_stages.subtask_text(s) for s in subtasks] or [q.text]
        vectors = q.embed(texts) if q.embed is not None else q.vector[None, :]
        if len(vectors) != len(texts):
            texts, vectors = [q.text], q.vector[None, :]
        best = np.full(ix.size, -np.inf, dtype=np.float32)
        for text, vec in zip(texts, vectors, strict=True):
            # no trace: EHRR's per-stage figures would describe the last subtask only
            best = np.maximum(best, one(ix, replace(q, text=text, vector=vec, trace=None), p))
        q.notes.update(sub_queries=texts, llm=used)
        return best

    return score


def strategy(params: EhrrParams = TABLE_V) -> Strategy:
    """``ehrr``: the paper's Alg. 2 on the router's hybrid similarity."""
    return Strategy(
        "ehrr",
        ehrr_scores(params),
        "query",
        "EHRR: server utilities, posted-price auction, tool utilities from call statistics",
        uses_stats=True,
        group="paper",
    )
