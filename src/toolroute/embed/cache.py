"""Content-addressed embedding cache: an unchanged text is never embedded twice."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

import numpy as np

from toolroute.embed.base import Embedder, Matrix

__all__ = ["CachedEmbedder", "VectorCache", "text_key"]


def text_key(text: str) -> str:
    """Content hash of a text, the embedding cache key."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class VectorCache(Protocol):
    def get_vectors(self, model: str, keys: Iterable[str], dim: int) -> dict[str, Matrix]: ...
    def put_vectors(self, model: str, items: Mapping[str, Matrix]) -> None: ...


class CachedEmbedder:
    """Wraps an :class:`Embedder`; ``embedded`` counts texts actually sent to the model."""

    def __init__(self, inner: Embedder, cache: VectorCache, *, chunk: int = 256) -> None:
        self.inner = inner
        self._cache = cache
        self._chunk = chunk
        self.embedded = 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(
        self, texts: Sequence[str], progress: Callable[[int, int], None] | None = None
    ) -> Matrix:
        keys = [text_key(t) for t in texts]
        found = self._cache.get_vectors(self.model_id, keys, self.dim)
        missing: dict[str, str] = {}
        for k, t in zip(keys, texts, strict=True):
            if k not in found and k not in missing:
                missing[k] = t
        todo = list(missing.items())
        done = 0
        for start in range(0, len(todo), self._chunk):
            part = todo[start : start + self._chunk]
            vecs = self.inner.embed([t for _, t in part])
            fresh = {k: vecs[i] for i, (k, _) in enumerate(part)}
            self._cache.put_vectors(
                self.model_id, fresh
            )  # committed per chunk: a crash loses little
            found.update(fresh)
            self.embedded += len(part)
            done += len(part)
            if progress is not None:
                progress(done, len(todo))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)
