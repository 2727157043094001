"""A bounded in-memory LRU of query embeddings, for a long-running gateway.

A one-query embedding is most of what ``find_tools`` costs (benchmarks/load.py). Agents repeat
needs ("what time is it in …", the same task retried), so the gateway keeps the last ``size``
query vectors. Only single texts and span calls are memoised: batches (indexing) go straight to
the wrapped embedder, whose store-backed :class:`~toolroute.embed.cache.CachedEmbedder` already
deduplicates them. Vectors are returned read-only, so a caller cannot corrupt the memo.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from toolroute.embed.base import Embedder, Matrix, SpanEmbedder, Wrapper

__all__ = ["QueryMemo", "VectorLru"]


class VectorLru:
    """The last ``size`` vectors by key, least recently used out first; thread-safe."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[Hashable, Matrix] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: Hashable) -> Matrix | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: Hashable, value: Matrix) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)


class QueryMemo(Wrapper):
    """Wraps an :class:`Embedder`; ``hits`` and ``misses`` count memoised query lookups.

    Thread-safe: the gateway routes in worker threads. ``size=0`` turns the memo off.
    """

    def __init__(self, inner: Embedder, size: int = 1024) -> None:
        if size < 0:
            raise ValueError("size must be >= 0")
        super().__init__(inner)
        self.size = size
        self.hits = 0
        self.misses = 0
        self._memo = VectorLru(size)
        self._count = threading.Lock()

    def __len__(self) -> int:
        return len(self._memo)

    def embed(self, texts: Sequence[str]) -> Matrix:
        if len(texts) != 1 or not self.size:
            return self.inner.embed(texts)
        return self._memoised(("q", texts[0]), lambda: self.inner.embed(texts))

    def embed_spans(self, text: str, spans: Sequence[tuple[int, int]]) -> Matrix:
        """Whole text plus each span: one pass where the wrapped embedder can, else a batch."""
        key = ("s", text, tuple(spans))

        def compute() -> Matrix:
            if isinstance(self.inner, SpanEmbedder):
                return self.inner.embed_spans(text, spans)
            return self.inner.embed([text, *(text[a:b] for a, b in spans)])

        return self._memoised(key, compute) if self.size else compute()

    def _memoised(self, key: Hashable, compute: Any) -> Matrix:
        found = self._memo.get(key)
        with self._count:
            if found is not None:
                self.hits += 1
                return found
            self.misses += 1
        # computed outside the lock: two threads may embed the same new query at once (both
        # get the same vector); one slow embedding never blocks another thread's hit
        vectors = np.array(compute(), dtype=np.float32)
        vectors.flags.writeable = False
        self._memo.put(key, vectors)
        return vectors
