from __future__ import annotations

import math

import pytest

from toolroute.bench.metrics import hit_ranks, query_metrics

A, B, C, D = ("s", "a"), ("s", "b"), ("s", "c"), ("s", "d")


def test_interchangeable_members_satisfy_a_group_once() -> None:
    groups = [frozenset({A, B}), frozenset({C})]
    # B after A does not count again: its group is already satisfied.
    assert hit_ranks([A, B, C], groups) == [1, 3]


def test_recall_counts_satisfied_groups() -> None:
    m = query_metrics([D, A, C], [frozenset({A, B}), frozenset({C})])
    assert m["recall@1"] == 0.0
    assert m["recall@3"] == 1.0
    assert m["mrr"] == 0.5
    assert m["full@10"] == 1.0


def test_ndcg_uses_binary_gains_and_ideal_of_min_k_groups() -> None:
    m = query_metrics([D, A], [frozenset({A}), frozenset({C})])
    dcg = 1 / math.log2(3)
    ideal = 1 / math.log2(2) + 1 / math.log2(3)
    assert m["ndcg@5"] == pytest.approx(dcg / ideal)


def test_no_hit_scores_zero() -> None:
    m = query_metrics([D], [frozenset({A})])
    assert m["mrr"] == 0.0 and m["recall@10"] == 0.0 and m["full@10"] == 0.0
