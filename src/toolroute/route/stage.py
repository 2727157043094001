"""Scoring stages: plain functions mapping (index, query, knobs) to one score per tool, which the
strategies of :mod:`toolroute.route.strategy` and :mod:`toolroute.papers` compose. ``-inf``
marks a tool a stage does not return. :class:`QueryContext` and :class:`RouteParams` are what
every stage reads; :class:`Strategy` is a named composition of them. ``steps`` is itself
``multi`` followed by stages that re-score a ranking, ``(index, query, knobs, scores) ->
scores`` (:func:`action_prior`, implied steps, :func:`file_steps`, :func:`near_duplicates`),
public so that a plugin can recompose them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from toolroute.embed.base import Matrix
from toolroute.index.build import ToolIndex
from toolroute.llm.client import ChatLLM
from toolroute.route.abstain import AbstainMode
from toolroute.route.abstain_model import AbstainModel
from toolroute.route.action import query_actions
from toolroute.route.adaptive import AdaptiveParams
from toolroute.route.expand import expand
from toolroute.route.feedback import intent_feedback
from toolroute.route.intent import READ_FILE_INTENT, WRITE_FILE_INTENT, named_files
from toolroute.route.precompute import index_actions, index_providers
from toolroute.route.query import QueryContext, Scores
from toolroute.settings import DEFAULTS

__all__ = [
    "CascadeParams",
    "Embeds",
    "HybridParams",
    "MultiParams",
    "QueryContext",
    "RouteParams",
    "Scores",
    "Strategy",
    "StepsParams",
    "StrategyFn",
    "action_prior",
    "baseline_bm25",
    "baseline_dense",
    "baseline_hier5",
    "best_match",
    "cascade",
    "catalog_order",
    "dense",
    "file_steps",
    "hybrid",
    "lexical",
    "multi",
    "near_duplicates",
    "normalised",
    "server_scores",
    "steps",
    "top_rows",
]


@dataclass(frozen=True, slots=True)
class HybridParams:
    """``hybrid`` and every stage that adds the lexical score to the cosine."""

    lexical_weight: float = 0.2
    """α of hybrid fusion: weight of max-normalised BM25 added to the cosine."""


@dataclass(frozen=True, slots=True)
class MultiParams:
    """``multi``: a request scored whole and by each of its sub-intents."""

    intent_mix: float = 0.5
    """w: a tool's sub-intent score is w · whole + (1 − w) · best sub-intent."""
    intent_exact_top: int = 50
    """Its top this many are exact; below, sub-intents are scored only where an upper bound
    says they could matter. 0: score every tool's sub-intents."""
    intent_feedback: float = 0.0
    """β of pseudo-relevance feedback on sub-intents, each moved towards its own top
    ``intent_feedback_depth`` tools (route/feedback.py). 0: off."""
    intent_feedback_depth: int = 5


@dataclass(frozen=True, slots=True)
class StepsParams:
    """``steps`` (the default's ranking): actions, providers, named files, near duplicates."""

    action_penalty: float = 0.07
    """Taken from a tool whose name's action the request does not ask for, divided by the
    number of action classes the request asks for (more classes, weaker evidence)."""
    expand_pool: int = 5
    """The top tools whose catalog providers are pulled up (0: no expansion)."""
    expand_weight: float = 0.9
    """A provider rises to this fraction of the best score among those it serves."""
    destination: bool = True
    """A request that writes to a named file gets the best file writer in its top 5."""
    source_file: bool = True
    """A request that reads a named file gets the best reader of its type in its top 5."""
    duplicate_cosine: float = 0.9
    """A tool this close (cosine of tool vectors) to a better-ranked one is a near duplicate
    (the same tool from two sources, a v1 beside its v2)."""
    duplicate_penalty: float = 0.05
    """What a near duplicate loses at cosine 1, linearly from 0 at ``duplicate_cosine``
    (0: no demotion)."""
    duplicate_window: int = 15
    """The top this many are checked for near duplicates."""


@dataclass(frozen=True, slots=True)
class CascadeParams:
    """``cascade``: servers first, then their tools."""

    servers_k: int = 5
    """Servers kept by the first stage."""


@dataclass(frozen=True, slots=True)
class RouteParams:
    """The product strategies' parameters, one typed group per family, and what every strategy
    shares (exact names, abstention, the LLM endpoint). Defaults are the values measured in
    benchmarks/tdwa.py. A paper's method takes its own typed parameters where its strategy is
    built (:mod:`toolroute.papers`)."""

    hybrid: HybridParams = HybridParams()
    multi: MultiParams = MultiParams()
    steps: StepsParams = StepsParams()
    cascade: CascadeParams = CascadeParams()
    adaptive: AdaptiveParams = AdaptiveParams()
    """``adaptive``: value of a success, capability grouping, pooling (route/adaptive.py)."""
    llm: ChatLLM | None = field(default=None, compare=False)
    """Chat endpoint of the LLM stages (pa-rag, atr); None: offline fallbacks."""
    exact_names: bool = True
    """Every strategy: a tool the query names ranks first, a named server's tools are first
    among equals (route/exact.py; off: the ablation without it)."""
    abstain: AbstainMode = DEFAULTS.abstain
    """Strategies that abstain (``default``): answer "no tool fits" when the abstention
    model's p falls below this mode's threshold (route/abstain.py); ``off``: always rank."""
    abstain_model: AbstainModel | None = field(default=None, compare=False)
    """The abstention model (None: the shipped one, ``toolroute/data/abstain.json``)."""


StrategyFn = Callable[[ToolIndex, QueryContext, RouteParams], Scores]
"""What a strategy computes: one score per tool of the index."""

Embeds = Literal["none", "query", "intent-spans", "intents"]
"""What a strategy needs embedded: nothing (lexical only); the query; the query and its
sub-intents pooled from the query's one model pass (late chunking); or the query and each
sub-intent embedded on its own (better vectors, one more pass per clause)."""

Group = Literal["product", "paper", "plugin"]
"""Where ``toolroute strategies`` lists a strategy: the product's modes, the papers' methods,
or what a plugin registered (benchmarks' research variants, a user's own)."""


@dataclass(frozen=True, slots=True)
class Strategy:
    """A named composition of stages, as ``--strategy NAME`` picks it."""

    name: str
    score: StrategyFn
    embeds: Embeds
    """What the query needs embedded (see :data:`Embeds`)."""
    summary: str
    """One plain line for ``toolroute strategies``."""
    uses_stats: bool = False
    """Reads online statistics: the router hands it its :class:`StatsBook`."""
    presentation: Literal["attention", "full", "top-k"] = "attention"
    """How its tools reach the model (``bench --tokens``): the two phases of a summary pool and
    promoted schemas, every full schema (a naive MCP client), or the top-k full schemas
    without a summary pool."""
    group: Group = "plugin"
    """Where ``toolroute strategies`` lists it (:data:`Group`)."""
    abstains: bool = False
    """Answers "no tool fits" (every score ``-inf``) when the abstention model says no tool
    serves the request, at the router's ``RouteParams.abstain`` mode (route/abstain.py)."""


def normalised(s: Scores) -> Scores:
    """``s`` divided by its maximum when that is positive: BM25 brought to the cosine's scale
    before hybrid adds it (α · BM25 / max BM25)."""
    top = float(s.max()) if s.size else 0.0
    return s / top if top > 0 else s


def lexical(ix: ToolIndex, q: QueryContext, p: RouteParams) -> Scores:
    return ix.tool_lexical.scores(q.text)


def dense(ix: ToolIndex, q: QueryContext, p: RouteParams) -> Scores:
    return ix.tool_vectors @ q.vector


def hybrid(ix: ToolIndex, q: QueryContext, p: RouteParams) -> Scores:
    return dense(ix, q, p) + p.hybrid.lexical_weight * normalised(lexical(ix, q, p))


def multi(ix: ToolIndex, q: QueryContext, p: RouteParams) -> Scores:
    """Hybrid over the whole request, each tool lifted by its best sub-intent match.

    Above ``intent_exact_top`` tools, the sub-intents are scored only where they can change
    the top ``intent_exact_top``: on the sphere, angle(tool, intent) ≥ angle(tool, query) −
    angle(query, intent), so each tool's best intent match, hence its lifted score, has an
    upper bound from its query cosine alone. Tools whose bound cannot reach the top stay at
    their hybrid score (a lower bound). The top ``intent_exact_top`` are exactly those of
    scoring every tool, for one matrix-vector product instead of a matrix-matrix product
    over every tool (2-3x the cost at 100k tools, benchmarks/scale.py).
    """
    d = dense(ix, q, p)
    q.memo["dense"] = (q.vector, d)  # keyed by the vector: a sub-query's context shares memo
    out = d + p.hybrid.lexical_weight * normalised(lexical(ix, q, p))
    intents = q.intent_vectors
    if intents is None or not len(intents):
        return out
    intents = intent_feedback(ix, intents, p.multi.intent_feedback, p.multi.intent_feedback_depth)
    keep = 1.0 - p.multi.intent_mix
    top = p.multi.intent_exact_top
    rows: npt.NDArray[np.intp] | None = None
    if top and ix.size > 4 * top:
        phi = float(np.arccos(np.clip(intents @ q.vector, -1.0, 1.0)).min())
        theta = np.arccos(np.clip(d, -1.0, 1.0))
        best_bound = np.cos(np.clip(theta - phi, 0.0, None)) + 1e-5  # float slack
        bound = out + np.maximum(0.0, keep * (best_bound - d))
        pool = np.argpartition(-bound, top - 1)[:top]
        exact = out[pool] + _lift(ix, intents, d, pool, keep)
        threshold = float(exact.min())  # the true top-th best score is at least this
        rows = np.flatnonzero(bound >= threshold)
        if len(rows) > ix.size // 3:  # bounds too loose to pay: score every tool
            rows = None
    if rows is None:
        rows = np.arange(ix.size)
    out[rows] += _lift(ix, intents, d, rows, keep)
    return out


def _lift(
    ix: ToolIndex, intents: Matrix, d: Scores, rows: npt.NDArray[np.intp], keep: float
) -> Scores:
    """multi's lift of ``rows``: max(0, (1 − w) · (best sub-intent cosine − query cosine))."""
    vecs = ix.tool_vectors if len(rows) == ix.size else ix.tool_vectors[rows]
    best = (vecs @ intents.T).max(axis=1)
    lift: Scores = np.maximum(0.0, keep * (best - d[rows])).astype(np.float32)
    return lift


def action_prior(ix: ToolIndex, q: QueryContext, p: RouteParams, s: Scores) -> Scores:
    """Action words (route/action.py): a soft penalty for tools named by another action.

    The penalty is shared among the classes the request asks for: "what temperature should I
    set" asks to read and to update, weak evidence against a third class (convert), while
    "what time is it in Tokyo" asks only to read."""
    asked = query_actions(q.text)
    if not asked or p.steps.action_penalty <= 0:
        return s
    acts, order = index_actions(ix)
    wanted = np.array([c in asked for c in order] + [True])  # index -1: no known verb
    out: Scores = (s - p.steps.action_penalty / len(asked) * ~wanted[acts]).astype(np.float32)
    return out


def file_steps(ix: ToolIndex, q: QueryContext, p: RouteParams, s: Scores) -> Scores:
    """Files a request names by path imply a step its words rarely match. A file it makes
    ("… and save it to /root/x.md") needs a file writer: the catalog's best match for
    :data:`WRITE_FILE_INTENT`. A file it reads ("the sales in /root/s.xlsx") needs a reader of
    that type: the best match for :data:`READ_FILE_INTENT` with its extension. Each joins the
    top 5 (at rank 5, displacing none above it). Applied after implied steps, so that a
    provider lifted above rank 5 cannot push it back out."""
    if q.embed is None:
        return s
    texts = [
        WRITE_FILE_INTENT if dest else READ_FILE_INTENT.format(ext=ext)
        for ext, dest in named_files(q.text)
        if (p.steps.destination if dest else p.steps.source_file)
    ]
    out = s
    for text in dict.fromkeys(texts):
        j = _cached(ix, f"best:{ix.model_id}:{text}", partial(best_match, ix, q, p, text))
        finite = out[np.isfinite(out)]
        if finite.size < 5 or not np.isfinite(out[j]):
            continue
        fifth = float(np.partition(finite, finite.size - 5)[finite.size - 5])
        out = out.copy()
        out[j] = max(float(out[j]), fifth + 1e-4)
    return out


def best_match(ix: ToolIndex, q: QueryContext, p: RouteParams, text: str) -> int:
    """The tool with the best hybrid score for ``text`` (an implied step)."""
    assert q.embed is not None
    v = q.embed([text])[0]
    lex = normalised(ix.tool_lexical.scores(text))
    return int(np.argmax(ix.tool_vectors @ v + p.hybrid.lexical_weight * lex))


def top_rows(s: Scores, k: int) -> npt.NDArray[np.intp]:
    """The rows of the ``k`` best finite scores, best first, ties by row (as a stable sort of
    all scores would give) without sorting them all: O(n) at 100k tools."""
    k = min(k, len(s))
    if k <= 0:
        return np.empty(0, dtype=np.intp)
    part = np.argpartition(-s, k - 1)[:k] if k < len(s) else np.arange(len(s))
    kth = s[part].min()
    rows = np.flatnonzero(s >= kth)  # ties at the k-th score, whichever argpartition kept
    rows = rows[np.lexsort((rows, -s[rows]))][:k]
    out: npt.NDArray[np.intp] = rows[np.isfinite(s[rows])]
    return out


def near_duplicates(ix: ToolIndex, q: QueryContext, p: RouteParams, s: Scores) -> Scores:
    """Maximal-marginal-relevance in its simplest form: within the top ``duplicate_window``, a
    tool whose vector is within ``duplicate_cosine`` of a better-ranked one's loses up to
    ``duplicate_penalty``, so a merged catalog's copies of one tool do not fill the top 5
    while another step's tool waits below them."""
    if p.steps.duplicate_penalty <= 0 or ix.size < 2:
        return s
    order = top_rows(s, p.steps.duplicate_window)
    if len(order) < 2:
        return s
    vecs = ix.tool_vectors[order]
    sim = np.tril(vecs @ vecs.T, k=-1)[1:]  # row i-1: tool i against those ranked above it
    worst = sim.max(axis=1)
    span = max(1e-6, 1.0 - p.steps.duplicate_cosine)
    cut = p.steps.duplicate_penalty * np.clip((worst - p.steps.duplicate_cosine) / span, 0.0, None)
    if not cut.any():
        return s
    out = s.copy()
    out[order[1:]] -= cut.astype(np.float32)
    return out


def steps(ix: ToolIndex, q: QueryContext, p: RouteParams) -> Scores:
    """``multi``, then action words, implied steps, the files the request names, and near
    duplicates demoted."""
    s = action_prior(ix, q, p, multi(ix, q, p))
    s = expand(s, index_providers(ix), p.steps.expand_pool, p.steps.expand_weight)
    return near_duplicates(ix, q, p, file_steps(ix, q, p, s))


def _cached(ix: ToolIndex, what: str, make: Callable[[], Any]) -> Any:
    """Per-index derived data kept in memory (the best file writer), computed once per index:
    the index owns it, so a rebuilt index recomputes."""
    return ix.derived.memo(what, make)


def server_scores(ix: ToolIndex, q: QueryContext, p: RouteParams) -> Scores:
    """Server layer: profile cosine + α · normalised BM25 over profiles."""
    lex = normalised(ix.server_lexical.scores(q.text))
    out: Scores = ix.server_vectors @ q.vector + p.hybrid.lexical_weight * lex
    return out


def _scope(ix: ToolIndex, server_score: Scores, k: int, tool_scores: Scores) -> Scores:
    keep = np.argsort(-server_score, kind="stable")[:k]
    mask = np.isin(ix.server_of, keep)
    return np.where(mask, tool_scores, -np.inf).astype(np.float32)


def cascade(ix: ToolIndex, q: QueryContext, p: RouteParams) -> Scores:
    """PA-RAG §4.3: prune to the top servers, then rank their tools by the hybrid score."""
    return _scope(ix, server_scores(ix, q, p), p.cascade.servers_k, hybrid(ix, q, p))


def baseline_bm25(ix: ToolIndex, q: QueryContext, p: RouteParams) -> Scores:
    return ix.name_desc_lexical.scores(q.text)


def baseline_dense(ix: ToolIndex, q: QueryContext, p: RouteParams) -> Scores:
    return ix.flat_vectors @ q.vector


def catalog_order(ix: ToolIndex, q: QueryContext, p: RouteParams) -> Scores:
    """No ranking at all: every tool in catalog order (what a naive client presents)."""
    out: Scores = -np.arange(ix.size, dtype=np.float32)
    return out


def baseline_hier5(ix: ToolIndex, q: QueryContext, p: RouteParams) -> Scores:
    return _scope(ix, ix.server_vectors @ q.vector, 5, ix.flat_vectors @ q.vector)
