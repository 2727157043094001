"""Content-addressed embedding cache: an unchanged text is never embedded twice.

Memory stays bounded at scale: texts are de-duplicated before anything is looked up (a
100k-tool catalog repeats names and questions across mirrors), cached vectors are read in
chunks straight into one matrix, and new vectors go to the store one chunk at a time.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from toolroute.embed.base import Embedder, Matrix, Wrapper

__all__ = ["CachedEmbedder", "VectorCache", "text_key"]

_READ_CHUNK = 4096
"""Cached vectors read per store query batch: bounds the per-vector objects alive at once."""


def text_key(text: str) -> str:
    """Content hash of a text, the embedding cache key."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class VectorCache(Protocol):
    def get_vectors(self, model: str, keys: Iterable[str], dim: int) -> dict[str, Matrix]: ...
    def put_vectors(self, model: str, items: Mapping[str, Matrix]) -> None: ...


class CachedEmbedder(Wrapper):
    """Wraps an :class:`Embedder`; ``embedded`` counts texts actually sent to the model."""

    def __init__(self, inner: Embedder, cache: VectorCache, *, chunk: int = 256) -> None:
        super().__init__(inner)
        self._cache = cache
        self._chunk = chunk
        self.embedded = 0

    def embed(
        self, texts: Sequence[str], progress: Callable[[int, int], None] | None = None
    ) -> Matrix:
        unique, inverse = self.embed_unique(texts, progress)
        out: Matrix = unique[inverse]
        return out

    def embed_unique(
        self, texts: Sequence[str], progress: Callable[[int, int], None] | None = None
    ) -> tuple[Matrix, npt.NDArray[np.intp]]:
        """``(vectors, inverse)``: one row per distinct text, ``vectors[inverse[i]]`` is the
        embedding of ``texts[i]``. Lets an index gather the rows it needs without
        materialising a vector per (repeated) text."""
        slot: dict[str, int] = {}
        inverse = np.fromiter(
            (slot.setdefault(t, len(slot)) for t in texts), dtype=np.intp, count=len(texts)
        )
        distinct = list(slot)
        del slot
        out = np.empty((len(distinct), self.dim), dtype=np.float32)
        keys = [text_key(t) for t in distinct]
        missing: list[int] = []
        for start in range(0, len(keys), _READ_CHUNK):
            part = keys[start : start + _READ_CHUNK]
            found = self._cache.get_vectors(self.model_id, part, self.dim)
            for i, k in enumerate(part, start):
                vec = found.get(k)
                if vec is None:
                    missing.append(i)
                else:
                    out[i] = vec
        # Length-sorted across the whole run, so every chunk the model sees pads little.
        missing.sort(key=lambda i: len(distinct[i]))
        for start in range(0, len(missing), self._chunk):
            rows = missing[start : start + self._chunk]
            vecs = self.inner.embed([distinct[i] for i in rows])
            out[rows] = vecs
            # committed per chunk: a crash loses little, and memory holds one chunk
            self._cache.put_vectors(self.model_id, {keys[i]: vecs[j] for j, i in enumerate(rows)})
            self.embedded += len(rows)
            if progress is not None:
                progress(start + len(rows), len(missing))
        return out, inverse
