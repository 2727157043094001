"""Ranking metrics over required-tool groups, the benchmarks' definitions.

Ground truth is a list of groups; members of a group are interchangeable. A retrieved pair is a
hit when it satisfies a group not yet satisfied (one group per hit). R@k = satisfied groups in
the top k / #groups; nDCG@k uses binary gains with ideal DCG = min(k, #groups) hits; MRR =
1 / rank of the first hit; Full@k = 1 when every group is satisfied in the top k.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from toolroute.catalog.models import ToolKey

__all__ = ["RANK_METRICS", "SET_METRICS", "hit_ranks", "query_metrics", "set_metrics"]

RANK_METRICS = (
    "recall@1",
    "recall@3",
    "recall@5",
    "recall@10",
    "ndcg@5",
    "ndcg@10",
    "mrr",
    "full@10",
)


SET_METRICS = ("set_precision", "set_recall", "set_f1")


def set_metrics(
    chosen: Sequence[ToolKey], groups: Sequence[frozenset[ToolKey]]
) -> dict[str, float]:
    """Precision, recall and F1 of a final tool set (PA-RAG §5.1): precision over the chosen
    tools (a tool is right when it is in some group), recall over the required groups."""
    picked = set(chosen)
    relevant = frozenset().union(*groups) if groups else frozenset()
    p = len(picked & relevant) / len(picked) if picked else 0.0
    r = sum(bool(picked & g) for g in groups) / len(groups) if groups else 0.0
    return {"set_precision": p, "set_recall": r, "set_f1": 2 * p * r / (p + r) if p + r else 0.0}


def hit_ranks(ranked: Sequence[ToolKey], groups: Sequence[frozenset[ToolKey]]) -> list[int]:
    """1-based ranks at which a retrieved pair satisfies a not-yet-satisfied group."""
    open_groups = list(groups)
    ranks: list[int] = []
    for rank, key in enumerate(ranked, start=1):
        for i, g in enumerate(open_groups):
            if key in g:
                ranks.append(rank)
                del open_groups[i]
                break
        if not open_groups:
            break
    return ranks


def _ndcg(ranks: Sequence[int], n_groups: int, k: int) -> float:
    dcg = sum(1.0 / math.log2(r + 1) for r in ranks if r <= k)
    ideal = sum(1.0 / math.log2(r + 1) for r in range(1, min(k, n_groups) + 1))
    return dcg / ideal if ideal else 0.0


def query_metrics(
    ranked: Sequence[ToolKey], groups: Sequence[frozenset[ToolKey]]
) -> dict[str, float]:
    """All of :data:`RANK_METRICS` for one query."""
    n = len(groups)
    ranks = hit_ranks(ranked, groups)
    out: dict[str, float] = {}
    for k in (1, 3, 5, 10):
        out[f"recall@{k}"] = sum(r <= k for r in ranks) / n if n else 0.0
    out["ndcg@5"] = _ndcg(ranks, n, 5)
    out["ndcg@10"] = _ndcg(ranks, n, 10)
    out["mrr"] = 1.0 / ranks[0] if ranks else 0.0
    out["full@10"] = 1.0 if n and sum(r <= 10 for r in ranks) == n else 0.0
    return out
