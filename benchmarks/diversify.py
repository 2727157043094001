"""Coverage-aware re-ranking of a strategy's top candidates (search-result diversification),
measured by benchmarks/recall_diversity.py and not shipped: no re-ranker passed issue 25's
keep-rule (benchmarks/results/recall_diversity.md).

A request with several needs ("get Apple's stock price … and summarise it in a PPT") should
not spend its top 5 on three tools for one need. Each re-ranker re-orders only the top
``pool`` candidates of a base strategy, greedily, one slot at a time:

- ``xquad`` (Santos et al., WWW 2010) over the request's sub-intents (the offline clause
  split, route/intent.py): a candidate's value is ``(1 − λ) · rel(t) + λ · Σ_i w_i ·
  cov(t, i) · Π_{s chosen} (1 − cov(s, i))``, so an intent the chosen tools already cover
  counts less for the next slot;
- ``pm2`` (Dang & Croft, SIGIR 2012): seats go to intents in proportion to their weights
  (Sainte-Laguë quotients), the slot's value is ``(1 − λ) · rel(t) + λ · (½ · cov(t, i*) ·
  q_i* + ½ · Σ_{i ≠ i*} cov(t, i) · q_i)`` with ``i*`` the intent owed the seat;
- ``mmr`` (Carbonell & Goldstein, SIGIR 1998) over tool vectors: ``λ · rel(t) − (1 − λ) ·
  max_{s chosen} cos(t, s)``; it needs no intents.

``rel`` is the base score min-max scaled over the pool; ``cov(t, i)`` is the tool vector's
cosine with intent ``i`` (clipped at 0) divided by the pool's best for that intent, so the
best tool for an intent covers it fully. Intents weigh the same, or (``weights="query"``) in
proportion to their cosine with the request; with ``intent_pool`` each intent's best tools
over the whole catalog join the pool. A request with fewer than two intents keeps its order
under ``xquad`` and ``pm2``. The first ``keep_top`` candidates never move. Re-ranking permutes
the pool's own scores (slot i takes the pool's i-th best score), so every tool outside the
pool keeps its score and its place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from toolroute.embed.base import Matrix

__all__ = ["DiversifyParams", "diversify"]

Method = Literal["off", "xquad", "pm2", "mmr"]
Floats = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class DiversifyParams:
    """Which re-ranker (``off``: none), over how many candidates, with what trade-off."""

    method: Method = "off"
    pool: int = 20
    """The base strategy's top this many are re-ordered; the rest keep their scores."""
    trade: float = 0.5
    """λ: the weight of coverage (xquad, pm2) or of relevance (mmr, as in its paper)."""
    keep_top: int = 1
    """The base's first this many keep their places (the best match is never displaced)."""
    weights: Literal["uniform", "query"] = "uniform"
    """xquad, pm2: intents weigh the same, or in proportion to their cosine with the whole
    request (a clause far from the request's gist, "how can I achieve this?", counts less)."""
    intent_pool: int = 0
    """xquad, pm2: each intent's best this many tools by cosine (over the whole catalog) join
    the pool, so a need the whole request's ranking buries can still be covered."""


def _pool_rows(s: npt.NDArray[np.float32], k: int) -> npt.NDArray[np.intp]:
    """The rows of the ``k`` best finite scores, best first, ties by row."""
    finite = np.flatnonzero(np.isfinite(s))
    order = finite[np.lexsort((finite, -s[finite]))]
    out: npt.NDArray[np.intp] = order[:k]
    return out


def _with_intent_tops(
    s: npt.NDArray[np.float32],
    rows: npt.NDArray[np.intp],
    tool_vectors: Matrix,
    intents: Matrix,
    k: int,
) -> npt.NDArray[np.intp]:
    """``rows`` then each intent's ``k`` best tools by cosine not yet in it, by score."""
    cos = tool_vectors @ intents.T
    k = min(k, len(s))
    tops = np.argpartition(-cos, k - 1, axis=0)[:k].ravel()
    extra = np.setdiff1d(tops[np.isfinite(s[tops])], rows)
    extra = extra[np.lexsort((extra, -s[extra]))]
    out: npt.NDArray[np.intp] = np.concatenate([rows, extra]).astype(np.intp)
    return out


def _coverage(vectors: Matrix, intents: Matrix) -> Floats:
    """cov(t, i): cosine clipped at 0, scaled so the pool's best tool for ``i`` has 1."""
    cos = np.clip(np.asarray(vectors @ intents.T, dtype=np.float64), 0.0, None)
    top = cos.max(axis=0)
    out: Floats = cos / np.where(top > 0, top, 1.0)
    return out


def diversify(
    s: npt.NDArray[np.float32],
    tool_vectors: Matrix,
    intent_vectors: Matrix | None,
    p: DiversifyParams,
    query_vector: Matrix | None = None,
) -> npt.NDArray[np.float32]:
    """``s`` with its top ``p.pool`` re-ordered by ``p.method`` (a copy; ``s`` itself when
    nothing moves). ``tool_vectors`` are the index's unit tool vectors, one row per score."""
    if p.method == "off" or p.pool < 2:
        return s
    intents = intent_vectors if intent_vectors is not None else np.zeros((0, 1), np.float32)
    if p.method != "mmr" and len(intents) < 2:
        return s
    rows = _pool_rows(s, p.pool)
    if p.intent_pool > 0 and p.method != "mmr":
        rows = _with_intent_tops(s, rows, tool_vectors, intents, p.intent_pool)
    n = len(rows)
    fixed = min(max(p.keep_top, 0), n)
    if n - fixed < 2:
        return s
    base = s[rows].astype(np.float64)
    span = float(base.max() - base.min())
    rel = (base - base.min()) / span if span > 0 else np.ones(n)
    vecs = tool_vectors[rows]
    lam = float(p.trade)
    chosen = list(range(fixed))
    left = np.ones(n, dtype=bool)
    left[:fixed] = False
    if p.method == "mmr":
        sim = np.asarray(vecs @ vecs.T, dtype=np.float64)
        worst = sim[:, chosen].max(axis=1) if chosen else np.zeros(n)
        while left.any():
            value = lam * rel - (1.0 - lam) * worst
            j = int(np.flatnonzero(left)[np.argmax(value[left])])
            chosen.append(j)
            left[j] = False
            worst = np.maximum(worst, sim[:, j])
    else:
        cov = _coverage(vecs, intents)
        m = cov.shape[1]
        weight = np.full(m, 1.0 / m)
        if p.weights == "query" and query_vector is not None and query_vector.size:
            sim = np.clip(np.asarray(intents @ query_vector, dtype=np.float64), 1e-6, None)
            weight = sim / sim.sum()
        residual = np.ones(m)
        seats = np.zeros(m)
        for j in chosen:
            residual *= 1.0 - cov[j]
            seats += cov[j] / max(float(cov[j].sum()), 1e-9)
        while left.any():
            if p.method == "xquad":
                gain = cov @ (weight * residual)
            else:  # pm2
                quotient = weight / (2.0 * seats + 1.0)
                quotient = quotient / quotient.max()
                owed = int(np.argmax(quotient))
                others = quotient.copy()
                others[owed] = 0.0
                gain = 0.5 * cov[:, owed] * quotient[owed] + 0.5 * (cov @ others)
            value = (1.0 - lam) * rel + lam * gain
            j = int(np.flatnonzero(left)[np.argmax(value[left])])
            chosen.append(j)
            left[j] = False
            residual *= 1.0 - cov[j]
            seats += cov[j] / max(float(cov[j].sum()), 1e-9)
    order = np.array(chosen)
    if np.array_equal(order, np.arange(n)):
        return s
    out = s.copy()
    # the i-th slot takes the i-th best pool score: the pool stays above every other tool
    out[rows[order]] = s[rows]
    return out
