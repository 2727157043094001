"""Routing strategies: named compositions of scoring stages over a :class:`ToolIndex`.

Every strategy maps (index, query) to one score per tool; ``-inf`` marks a tool the strategy
does not return (e.g. outside the servers a cascade kept). Stages are plain functions:

- ``lexical``: BM25 over tool documents;
- ``dense``: cosine of the query with TDWA tool vectors (seed 001 eq. 1);
- ``hybrid``: dense + α · BM25 / max BM25 (linear fusion; RRF measured lower, benchmarks/tdwa.py);
- ``cascade``: top-k servers by server-layer score, then tools scoped to them (seed 003 §4.3,
  seed 000 Alg. 2 without economics);
- ``multi``: sub-intents scored separately and merged per tool (seed 003 §4.5, offline);
- ``steps``: ``multi`` plus three offline priors: action words (route/action.py),
  implied steps from the catalog's own structure (route/expand.py), and the files a request
  names by path (a writer for a destination, a reader of its type for a source);
- ``adaptive`` (the default, route/adaptive.py): ``steps``' relevance over capabilities, the
  vendor inside each chosen from executed calls, and the asking client's usage memory;
- ``fusion``: a shipped logistic regression over ``steps``' signals, per-field BM25 and the
  server layer, over ``steps``' candidates (route/fusion.py, trained leave-one-dataset-out);
  ``fusion3``: its v3, trained pairwise on whole and per-step needs, anchored to ``default``;
- ``baseline-*``: the three reference methods of shared/benchmarks/BASELINES.md, verbatim.

Every strategy's scores then pass the router's exact-name step (route/exact.py). New
strategies are added with :func:`register_strategy`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from toolroute.errors import ConfigError
from toolroute.index.build import ToolIndex
from toolroute.papers.ehrr.routing import ehrr_route
from toolroute.route import llm_stages
from toolroute.route.adaptive import adaptive_route
from toolroute.route.feedback import DEFAULT_FEEDBACK
from toolroute.route.stage import (  # noqa: F401 (benchmarks and tests reach them through here)
    QueryContext,
    RouteParams,
    Scores,
    _action_prior,
    _best_match,
    _cached,
    _named_files,
    _near_duplicates,
    _normalised,
    baseline_bm25,
    baseline_dense,
    baseline_hier5,
    cascade,
    catalog_order,
    dense,
    hybrid,
    lexical,
    multi,
    server_scores,
    steps,
)
from toolroute.stats import StatsBook

__all__ = [
    "STRATEGIES",
    "Embeds",
    "QueryContext",
    "RouteParams",
    "Scores",
    "Strategy",
    "baseline_bm25",
    "baseline_dense",
    "baseline_hier5",
    "cascade",
    "catalog_order",
    "dense",
    "hybrid",
    "lexical",
    "multi",
    "register_strategy",
    "resolve_strategy",
    "server_scores",
    "steps",
]

Embeds = Literal["none", "query", "intent-spans", "intents"]
"""What a strategy needs embedded: nothing (lexical only); the query; the query and its
sub-intents pooled from the query's one model pass (late chunking); or the query and each
sub-intent embedded on its own (better vectors, one more pass per clause)."""


def _pa_rag(mode: Literal["auto", "simple", "complex"], hierarchy: bool = True) -> StrategyFn:
    """PA-RAG (seed 003): complexity router → simple path (retrieval → selector) or complex path
    (decompose → retrieval per sub-query → selector each → aggregation); the selected tools rank
    first, the rest keep the whole-request order.

    Aggregation (§4.5) adds one change to the paper: the whole request's top ``whole_keep``
    tools join the union of the sub-query selections, a global check that keeps what a small
    model's decomposition drops (``benchmarks/llm_stages.py --whole-keep 0`` measures it
    without). ``hierarchy=False`` is the seed's A1 ablation.
    """

    def score(ix: ToolIndex, q: QueryContext, p: RouteParams) -> Scores:
        base = multi(ix, q, p)
        retrieve = cascade if hierarchy else hybrid
        top_servers = [ix.server_ids[i] for i in np.argsort(-server_scores(ix, q, p))[:5]]
        if mode == "auto":
            complex_, used = llm_stages.classify(p.llm, q.text, top_servers)
        else:
            complex_, used = mode == "complex", False
        subs, used_d = llm_stages.decompose(p.llm, q.text) if complex_ else ([q.text], False)
        vectors = q.embed(subs) if complex_ and q.embed is not None else q.vector[None, :]
        if len(vectors) != len(subs):
            subs, vectors = [q.text], q.vector[None, :]
        llm_answers = used or used_d
        if complex_:
            selected = llm_stages.top_indices(base, p.whole_keep)
            pool, keep = p.select_candidates, p.select_per_query
        else:  # simple path: one scoped retrieval over the request, one selection
            selected, pool, keep = [], 2 * p.max_tools, p.select_per_query
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


def atr(ix: ToolIndex, q: QueryContext, p: RouteParams) -> Scores:
    """Adaptive Tool Routing (seed 004): the LLM filters the top candidates' summaries down to
    at most ``max_tools``; unsure → both; nothing valid → the unfiltered candidates."""
    base = multi(ix, q, p)
    candidates = llm_stages.top_indices(base, 2 * p.max_tools)
    chosen, used = llm_stages.select(p.llm, q.text, ix, candidates, p.max_tools)
    if not used:  # seed 004: fall back to the unfiltered list
        chosen = candidates
    q.notes.update(selected=chosen, candidates=candidates, llm=used)
    out = base.copy()
    out[chosen] = 10.0 + base[chosen]
    return out


def _ehrr(**variant: Any) -> StrategyFn:
    def score(ix: ToolIndex, q: QueryContext, p: RouteParams) -> Scores:
        stats = q.stats if q.stats is not None else StatsBook(ix.catalog)
        params = replace(p.ehrr, **variant)
        if params.similarity == "hybrid":
            server_sim, tool_sim = server_scores(ix, q, p), hybrid(ix, q, p)
        else:  # the paper's eq. 1 on both layers
            server_sim, tool_sim = ix.server_vectors @ q.vector, dense(ix, q, p)
        return ehrr_route(ix, server_sim, tool_sim, stats, params, q.trace)

    return score


def ehrr_subtasks(ix: ToolIndex, q: QueryContext, p: RouteParams) -> Scores:
    """EHRR anchored on functional subtasks (seed 000 §III): the router's LLM rewrites the
    request as ``{domain, operation, target}`` subtasks, Alg. 2 routes each one, and a tool
    keeps its best utility over the subtasks (utilities share one scale). Offline: one
    subtask per clause. An agent that writes its own subtask passes it to ``find_tools``."""
    subtasks, used = llm_stages.functional_subtasks(p.llm, q.text)
    texts = [llm_stages.subtask_text(s) for s in subtasks] or [q.text]
    vectors = q.embed(texts) if q.embed is not None else q.vector[None, :]
    if len(vectors) != len(texts):
        texts, vectors = [q.text], q.vector[None, :]
    score = _ehrr()
    best = np.full(ix.size, -np.inf, dtype=np.float32)
    for text, vec in zip(texts, vectors, strict=True):
        # no trace: EHRR's per-stage figures would describe the last subtask only
        best = np.maximum(best, score(ix, replace(q, text=text, vector=vec, trace=None), p))
    q.notes.update(sub_queries=texts, llm=used)
    return best


StrategyFn = Callable[[ToolIndex, QueryContext, RouteParams], Scores]


def _adaptive(base: StrategyFn, **variant: Any) -> StrategyFn:
    """Capabilities over ``base``'s relevance, vendors by posterior value, the usage memory of
    the asking client (route/adaptive.py)."""

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


def _with_feedback(base: StrategyFn) -> StrategyFn:
    """``base`` with sub-intent feedback on (route/feedback.py), at the params' β if set."""

    def score(ix: ToolIndex, q: QueryContext, p: RouteParams) -> Scores:
        beta = p.intent_feedback if p.intent_feedback > 0 else DEFAULT_FEEDBACK
        return base(ix, q, replace(p, intent_feedback=beta))

    return score


@dataclass(frozen=True, slots=True)
class Strategy:
    name: str
    score: StrategyFn
    embeds: Embeds
    """What the query needs embedded (see :data:`Embeds`)."""
    summary: str
    uses_stats: bool = False
    """Reads online statistics (EHRR): the router hands it its :class:`StatsBook`."""
    presentation: Literal["attention", "full", "top-k"] = "attention"
    """How its tools reach the model (``bench --tokens``): Tool Attention's two phases (seed
    002), every full schema (``full-schema``, a naive MCP client), or the top-k full schemas
    without a summary pool (``top-k-full``, seed 002 baseline B3)."""


STRATEGIES: dict[str, Strategy] = {
    s.name: s
    for s in (
        Strategy("bm25", lexical, "none", "BM25 over tool documents"),
        Strategy("dense", dense, "query", "cosine over TDWA tool vectors"),
        Strategy("hybrid", hybrid, "query", "dense + weighted BM25"),
        Strategy("cascade", cascade, "query", "top servers, then hybrid over their tools"),
        Strategy("multi", multi, "intent-spans", "hybrid, lifted by offline sub-intents"),
        Strategy(
            "multi-sep", multi, "intents", "multi, each sub-intent embedded on its own (slower)"
        ),
        Strategy(
            "steps",
            steps,
            "intent-spans",
            "multi + action words, implied steps, files named by path, near duplicates demoted",
        ),
        # default = adaptive (over steps): cold, it ranks livemcpbench, mcpbench and the union
        # queries with recall equal or higher than steps (benchmarks/results/adaptive/bench-*);
        # with use, on the 3-vendor market's Zipf stream, +0.165 success over steps at 0.86x
        # cost and 0.46x invalid calls (benchmarks/results/adaptive/zipf).
        Strategy(
            "default",
            _adaptive(steps),
            "intent-spans",
            "the best no-LLM strategy (= adaptive: steps relevance, capabilities, learning)",
            True,
        ),
        Strategy(
            "adaptive",
            _adaptive(steps),
            "intent-spans",
            "capabilities by relevance (steps), vendor by posterior V·q − price, usage memory",
            True,
        ),
        Strategy(
            "adaptive-prf",
            _adaptive(_with_feedback(steps)),
            "intent-spans",
            "adaptive, each sub-intent moved towards its own top tools (Rocchio, no LLM)",
            True,
        ),
        Strategy(
            "adaptive-2",
            _adaptive(steps, show=2),
            "intent-spans",
            "adaptive, showing only its best two (primary + fallback, or two close capabilities)",
            True,
        ),
        Strategy(
            "adaptive-budget",
            _adaptive(steps, value_usd=0.01),
            "intent-spans",
            "adaptive with a small value of success (V = 0.01 USD): price weighs more",
            True,
        ),
        Strategy(
            "adaptive-lean",
            _adaptive(steps, show=2, value_usd=0.01),
            "intent-spans",
            "adaptive-2 and adaptive-budget at once: best two shown, V = 0.01 USD",
            True,
        ),
        Strategy(
            # issue 24's budget target: 10.8x ehrr's success at 0.46x its posted-price cost on
            # the Zipf stream (benchmarks/results/adaptive/budget-zipf.md); it drops steps that
            # need the high price tier, so it is a budget mode, not a default
            "adaptive-thrift",
            _adaptive(steps, show=2, value_usd=0.01, reserve=True),
            "intent-spans",
            "adaptive-lean that shows no vendor worth less than its price (V·q < price)",
            True,
        ),
        Strategy(
            "adaptive-hybrid",
            _adaptive(hybrid),
            "query",
            "adaptive over hybrid relevance",
            True,
        ),
        Strategy(
            "adaptive-no-memory",
            _adaptive(steps, memory=False),
            "intent-spans",
            "adaptive without the usage memory",
            True,
        ),
        Strategy(
            "adaptive-static",
            _adaptive(steps, memory=False, learn=False),
            "intent-spans",
            "capabilities only: no vendor learning, no usage memory",
            True,
        ),
        Strategy("ehrr", _ehrr(), "query", "EHRR Alg. 2: utilities + posted-price auction", True),
        Strategy(
            "ehrr-no-auction", _ehrr(auction=False), "query", "EHRR without the auction", True
        ),
        Strategy(
            "ehrr-no-exec",
            _ehrr(execution=False),
            "query",
            "EHRR hierarchy + auction, similarity only",
            True,
        ),
        Strategy(
            "ehrr-flat", _ehrr(hierarchy=False), "query", "EHRR tool utility, no server layer", True
        ),
        Strategy(
            "ehrr-cos",
            _ehrr(similarity="cosine"),
            "query",
            "EHRR with the paper's plain embedding cosine as Sim",
            True,
        ),
        Strategy(
            "ehrr-fixed",
            _ehrr(similarity="cosine", unseen_cost="optimistic", servers_share=5 / 70),
            "query",
            "EHRR with issue 24's fixes: eq. 1 cosine, optimistic cost for unseen relevant "
            "tools, shortlist scaled with the catalog",
            True,
        ),
        Strategy(
            "ehrr-optimistic",
            _ehrr(unseen_cost="optimistic"),
            "query",
            "EHRR, never-called tools costed among the observed (ablation of ehrr-fixed)",
            True,
        ),
        Strategy(
            "ehrr-beta",
            _ehrr(estimator="beta"),
            "query",
            "EHRR with Beta-posterior estimates instead of EMAs",
            True,
        ),
        Strategy(
            "ehrr-ts",
            _ehrr(estimator="thompson"),
            "query",
            "EHRR with Thompson-sampled Beta posteriors instead of EMA estimates",
            True,
        ),
        Strategy(
            "ehrr-ucb",
            _ehrr(estimator="ucb"),
            "query",
            "EHRR with optimistic Beta-posterior bounds and an empirical latency prior",
            True,
        ),
        Strategy(
            "ehrr-subtask",
            ehrr_subtasks,
            "query",
            "EHRR routing each LLM functional subtask {domain, operation, target}",
            True,
        ),
        Strategy(
            "pa-rag",
            _pa_rag("auto"),
            "intent-spans",
            "PA-RAG: complexity router, decomposition, cascade, LLM selector (seed 003)",
        ),
        Strategy("pa-rag-simple", _pa_rag("simple"), "intent-spans", "PA-RAG, simple path only"),
        Strategy("pa-rag-complex", _pa_rag("complex"), "intent-spans", "PA-RAG, complex path only"),
        Strategy(
            "pa-rag-flat",
            _pa_rag("auto", hierarchy=False),
            "intent-spans",
            "PA-RAG without the server hierarchy",
        ),
        Strategy(
            "atr",
            atr,
            "intent-spans",
            "Adaptive Tool Routing: LLM filter over candidate summaries (seed 004)",
        ),
        Strategy(
            "full-schema",
            catalog_order,
            "none",
            "every tool's full schema, unranked (naive MCP client)",
            presentation="full",
        ),
        Strategy(
            "top-k-full",
            baseline_dense,
            "query",
            "flat dense top-k with full schemas, no summary pool (seed 002 B3)",
            presentation="top-k",
        ),
        Strategy("baseline-bm25", baseline_bm25, "none", "BASELINES.md bm25"),
        Strategy("baseline-dense", baseline_dense, "query", "BASELINES.md dense (flat)"),
        Strategy("baseline-hier5", baseline_hier5, "query", "BASELINES.md hier5"),
    )
}


def register_strategy(
    name: str, factory: Callable[[], Strategy], *, overwrite: bool = False
) -> Strategy:
    """Add a strategy under ``name`` (``factory()`` builds it, renamed to ``name``); an
    existing name is an error unless ``overwrite``. Returns what was registered."""
    if name in STRATEGIES and not overwrite:
        raise ConfigError(f"strategy {name!r} is already registered")
    made = factory()
    strat = (
        made
        if made.name == name
        else Strategy(
            name, made.score, made.embeds, made.summary, made.uses_stats, made.presentation
        )
    )
    STRATEGIES[name] = strat
    return strat


def resolve_strategy(name: str) -> Strategy:
    try:
        return STRATEGIES[name]
    except KeyError:
        raise ConfigError(
            f"unknown strategy {name!r}; choose from: {', '.join(STRATEGIES)}"
        ) from None
