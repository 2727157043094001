from __future__ import annotations

import threading

import numpy as np
import pytest

from tests.conftest import HashingEmbedder
from toolroute.embed.base import SpanEmbedder
from toolroute.embed.recent import QueryMemo


def test_a_repeated_query_is_embedded_once() -> None:
    inner = HashingEmbedder()
    memo = QueryMemo(inner, size=8)
    first = memo.embed(["what time is it in Tokyo"])
    again = memo.embed(["what time is it in Tokyo"])
    assert inner.calls == ["what time is it in Tokyo"]
    assert np.array_equal(first, again) and (memo.hits, memo.misses) == (1, 1)
    assert np.array_equal(first, inner.embed(["what time is it in Tokyo"]))


def test_the_least_recently_used_query_goes_first_and_the_size_holds() -> None:
    inner = HashingEmbedder()
    memo = QueryMemo(inner, size=2)
    for q in ("a one", "b two", "a one", "c three"):  # "b two" is the least recent at "c"
        memo.embed([q])
    assert len(memo) == 2
    memo.embed(["a one"])
    memo.embed(["b two"])
    assert inner.calls == ["a one", "b two", "c three", "b two"]


def test_batches_pass_through_and_size_zero_turns_the_memo_off() -> None:
    inner = HashingEmbedder()
    memo = QueryMemo(inner, size=4)
    memo.embed(["x", "y"])
    memo.embed(["x", "y"])
    off = QueryMemo(inner, size=0)
    off.embed(["z"])
    off.embed(["z"])
    assert inner.calls == ["x", "y", "x", "y", "z", "z"] and len(memo) == len(off) == 0
    with pytest.raises(ValueError):
        QueryMemo(inner, size=-1)


def test_memoised_vectors_cannot_be_changed_by_a_caller() -> None:
    memo = QueryMemo(HashingEmbedder(), size=4)
    v = memo.embed(["read a file"])
    with pytest.raises(ValueError):
        v[0, 0] = 2.0


def test_spans_are_memoised_by_text_and_spans_and_fall_back_to_a_batch() -> None:
    inner = HashingEmbedder()  # no embed_spans: the spans are embedded as texts
    memo = QueryMemo(inner, size=4)
    assert isinstance(memo, SpanEmbedder)
    text = "fetch the news, then draw a word cloud"
    rows = memo.embed_spans(text, [(0, 14), (21, len(text))])
    memo.embed_spans(text, [(0, 14), (21, len(text))])
    assert rows.shape == (3, inner.dim)
    assert inner.calls == [text, "fetch the news", "draw a word cloud"]
    memo.embed_spans(text, [(0, 14)])  # other spans: another entry
    assert len(inner.calls) == 5


def test_threads_share_the_memo_safely() -> None:
    inner = HashingEmbedder()
    memo = QueryMemo(inner, size=16)
    queries = [f"query number {i}" for i in range(8)]
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(50):
                for q in queries:
                    assert memo.embed([q]).shape == (1, inner.dim)
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors and len(memo) == 8
    assert memo.hits + memo.misses == 4 * 50 * 8 and memo.misses <= 4 * 8
