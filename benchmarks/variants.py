"""The research variants the benchmarks measure: ablations of the papers' methods, of the
adaptive layer and of retrieval, the reference baselines, and the first learned fusion.

None is a product mode, so none is in ``toolroute strategies`` by default; they register
through the public ``register_strategy`` when a command loads this file:

    toolroute bench --plugin benchmarks/variants.py -s ehrr-fixed ...
    toolroute simulate --plugin benchmarks/variants.py -s ehrr-ucb ...

and a benchmark script calls :func:`register_strategies` itself. Names and scores are the ones
the results files were written with.
"""

from __future__ import annotations

import functools
from typing import Any

from toolroute.papers.ehrr.routing import EhrrParams
from toolroute.papers.ehrr.strategy import ehrr_scores, ehrr_subtasks
from toolroute.papers.pa_rag import PaRagParams, pa_rag_scores
from toolroute.route.fusion import fusion
from toolroute.route.strategy import (
    STRATEGIES,
    Embeds,
    Strategy,
    StrategyFn,
    adaptive_over,
    baseline_bm25,
    baseline_dense,
    baseline_hier5,
    catalog_order,
    hybrid,
    multi,
    register_strategy,
    steps,
    with_feedback,
)

__all__ = ["VARIANTS", "register_strategies"]


def _ehrr(name: str, summary: str, **params: Any) -> Strategy:
    return Strategy(name, ehrr_scores(EhrrParams(**params)), "query", summary, True)


def _adaptive(
    name: str,
    summary: str,
    base: StrategyFn = steps,
    embeds: Embeds = "intent-spans",
    **variant: Any,
) -> Strategy:
    return Strategy(name, adaptive_over(base, **variant), embeds, summary, True)


def variants() -> tuple[Strategy, ...]:
    """Every research variant, built fresh."""
    return (
        Strategy("multi-sep", multi, "intents", "multi, each sub-intent embedded on its own"),
        _adaptive(
            "adaptive-prf",
            "adaptive, sub-intents moved towards their own top tools (Rocchio)",
            with_feedback(steps),
        ),
        _adaptive("adaptive-2", "adaptive, showing only its best two", show=2),
        _adaptive("adaptive-budget", "adaptive with V = 0.01 USD", value_usd=0.01),
        _adaptive(
            "adaptive-lean", "adaptive-2 and adaptive-budget at once", show=2, value_usd=0.01
        ),
        _adaptive(
            "adaptive-thrift",
            "adaptive-lean, no vendor worth less than its price (= budget)",
            show=2,
            value_usd=0.01,
            reserve=True,
        ),
        _adaptive("adaptive-hybrid", "adaptive over hybrid relevance", hybrid, "query"),
        _adaptive("adaptive-no-memory", "adaptive without the usage memory", memory=False),
        _adaptive(
            "adaptive-static",
            "capabilities only: no vendor learning, no usage memory",
            memory=False,
            learn=False,
        ),
        Strategy(
            "adaptive-fusion",
            adaptive_over(fusion),
            "intent-spans",
            "adaptive over the first learned fusion",
            True,
        ),
        Strategy("fusion", fusion, "intent-spans", "the first learned fusion (v1)"),
        _ehrr("ehrr-no-auction", "EHRR without the auction", auction=False),
        _ehrr("ehrr-no-exec", "EHRR hierarchy + auction, similarity only", execution=False),
        _ehrr("ehrr-flat", "EHRR tool utility, no server layer", hierarchy=False),
        _ehrr(
            "ehrr-cos", "EHRR with the paper's plain embedding cosine as Sim", similarity="cosine"
        ),
        _ehrr(
            "ehrr-fixed",
            "EHRR: eq. 1 cosine, optimistic unseen cost, shortlist scaled with the catalog",
            similarity="cosine",
            unseen_cost="optimistic",
            servers_share=5 / 70,
        ),
        _ehrr(
            "ehrr-optimistic",
            "EHRR, never-called tools costed among the observed",
            unseen_cost="optimistic",
        ),
        _ehrr("ehrr-beta", "EHRR with Beta-posterior estimates instead of EMAs", estimator="beta"),
        _ehrr("ehrr-ts", "EHRR with Thompson-sampled Beta posteriors", estimator="thompson"),
        _ehrr(
            "ehrr-ucb",
            "EHRR with optimistic Beta bounds and an observed-latency prior",
            estimator="ucb",
        ),
        Strategy(
            "ehrr-subtask",
            ehrr_subtasks(),
            "query",
            "EHRR routing each LLM functional subtask",
            True,
        ),
        Strategy(
            "pa-rag-simple",
            pa_rag_scores(PaRagParams(mode="simple")),
            "intent-spans",
            "PA-RAG, simple path only",
        ),
        Strategy(
            "pa-rag-complex",
            pa_rag_scores(PaRagParams(mode="complex")),
            "intent-spans",
            "PA-RAG, complex path only",
        ),
        Strategy(
            "pa-rag-flat",
            pa_rag_scores(PaRagParams(hierarchy=False)),
            "intent-spans",
            "PA-RAG without the server hierarchy",
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
            "flat dense top-k with full schemas, no summary pool",
            presentation="top-k",
        ),
        Strategy("baseline-bm25", baseline_bm25, "none", "reference BM25 (name + description)"),
        Strategy("baseline-dense", baseline_dense, "query", "reference dense over flat text"),
        Strategy(
            "baseline-hier5", baseline_hier5, "query", "reference: top 5 servers, then flat dense"
        ),
    )


VARIANTS: tuple[str, ...] = tuple(s.name for s in variants())


def register_strategies() -> None:
    """Register every variant (again: the call is idempotent)."""
    for made in variants():
        if made.name not in STRATEGIES or STRATEGIES[made.name].group == "plugin":
            register_strategy(made.name, functools.partial(_same, made), overwrite=True)


def _same(strategy: Strategy) -> Strategy:
    return strategy
