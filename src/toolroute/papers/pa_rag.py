"""PA-RAG, from *PA-RAG: Protocol-Aware Retrieval-Augmented Generation for Tool Discovery in MCP
Ecosystems*: a complexity router sends a request down a simple path (retrieval → selector) or a
complex path (decomposition → retrieval per sub-query → selector each → aggregation); the
selected tools rank first, the rest keep the whole request's order.

Retrieval is the paper's hierarchy (§4.3): the top servers, then their tools (the ``cascade``
stage). Aggregation (§4.5) adds one change to the paper: the whole request's top
``whole_keep`` tools join the union of the sub-query selections, a global check that keeps
what a small model's decomposition drops. Every LLM stage falls back to an offline one
(:mod:`toolroute.route.llm_stages`) when no model answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from toolroute.index.build import ToolIndex
from toolroute.route import llm_stages
from toolroute.route.stage import (
    QueryContext,
    RouteParams,
    Scores,
    Strategy,
    StrategyFn,
    cascade,
    hybrid,
    multi,
    server_scores,
)

__all__ = ["PaRagParams", "pa_rag_scores", "strategy"]


@dataclass(frozen=True, slots=True)
class PaRagParams:
    """PA-RAG's knobs: which path runs, the hierarchy, and the selector's budget."""

    mode: Literal["auto", "simple", "complex"] = "auto"
    """``auto``: the complexity router picks the path; otherwise that path always runs."""
    hierarchy: bool = True
    """Retrieve through the server layer (``cascade``); off: flat ``hybrid`` (the paper's
    ablation without the hierarchy)."""
    select_per_query: int = 3
    """The selector keeps at most this many tools per sub-query."""
    select_candidates: int = 5
    """Candidates the selector sees per sub-query (its prompt, hence its latency)."""
    whole_keep: int = 3
    """Aggregation adds the whole request's top this many tools to the selections."""
    max_tools: int = 5
    """The simple path's selector sees twice this many candidates."""


def pa_rag_scores(params: PaRagParams = PaRagParams()) -> StrategyFn:
    """PA-RAG's ranking under ``params`` (module docstring)."""

    def score(ix: ToolIndex, q: QueryContext, p: RouteParams) -> Scores:
        base = multi(ix, q, p)
        retrieve = cascade if params.hierarchy else hybrid
        top_servers = [ix.server_ids[i] for i in np.argsort(-server_scores(ix, q, p))[:5]]
        if params.mode == "auto":
            complex_, used = llm_stages.classify(p.llm, q.text, top_servers)
        else:
            complex_, used = params.mode == "complex", False
        subs, used_d = llm_stages.decompose(p.llm, q.text) if complex_ else ([q.text], False)
        vectors = q.embed(subs) if complex_ and q.embed is not None else q.vector[None, :]
        if len(vectors) != len(subs):
            subs, vectors = [q.text], q.vector[None, :]
        llm_answers = used or used_d
        if complex_:
            selected = llm_stages.top_indices(base, params.whole_keep)
            pool, keep = params.select_candidates, params.select_per_query
        else:  # simple path: one scoped retrieval over the request, one selection
            selected, pool, keep = [], 2 * params.max_tools, params.select_per_query
        for sub, vec in zip(subs, vectors, strict=True):
            s = retrieve(ix, QueryContext(text=sub, vector=vec), p)
            chosen, used_s = llm_stages.select(
                p.llm, sub, ix, llm_stages.top_indices(s, pool), keep
            )
            selected.extend(chosen)
            llm_answers = llm_answers or used_s
        selected = list(dict.fromkeys(selected))
        q.notes.update(
            selected=selected,
            path="complex" if complex_ else "simple",
            sub_queries=subs,
            llm=llm_answers,
        )
        out = base.copy()
        out[selected] = 10.0 + base[selected]
        return out

    return score


def strategy(params: PaRagParams = PaRagParams()) -> Strategy:
    """``pa-rag``: the complexity router picks the path."""
    return Strategy(
        "pa-rag",
        pa_rag_scores(params),
        "intent-spans",
        "PA-RAG: complexity router, decomposition, server hierarchy, LLM selector",
        group="paper",
    )
