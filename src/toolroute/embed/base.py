"""The Embedder protocol and vector helpers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["Embedder", "Matrix", "SpanEmbedder", "Wrapper", "l2_normalise", "padded_ids"]

Matrix = npt.NDArray[np.float32]
"""Row-major float32 matrix, one L2-normalised row per text."""


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to L2-normalised float32 vectors.

    ``model_id`` names the model and its settings: cached vectors are keyed by it, so two
    embedders with the same ``model_id`` must give the same vectors.
    """

    @property
    def model_id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Matrix: ...


@runtime_checkable
class SpanEmbedder(Embedder, Protocol):
    """An embedder that can pool sub-spans of one text from a single model pass.

    Row 0 is the whole text; row i+1 mean-pools the contextual token states inside
    ``spans[i]`` (character offsets) — "late chunking": one pass instead of 1 + len(spans).
    """

    def embed_spans(self, text: str, spans: Sequence[tuple[int, int]]) -> Matrix: ...


class Wrapper:
    """An embedder around another (``inner``) that keeps its vectors, so its ``model_id`` and
    ``dim``: a cache or a memo in front of the model."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim


def l2_normalise(m: npt.NDArray[np.floating]) -> Matrix:
    """Rows scaled to unit length; zero rows stay zero."""
    m32 = np.asarray(m, dtype=np.float32)
    norms = np.linalg.norm(m32, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    out: Matrix = (m32 / norms).astype(np.float32, copy=False)
    return out


def padded_ids(
    batch: Sequence[Any],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """A batch of tokenizer encodings as (input ids, attention mask), zero-padded to the
    longest (0 is [PAD] in the BERT vocabularies the bundled models use)."""
    width = max(len(e.ids) for e in batch)
    ids = np.zeros((len(batch), width), dtype=np.int64)
    mask = np.zeros((len(batch), width), dtype=np.int64)
    for row, e in enumerate(batch):
        ids[row, : len(e.ids)] = e.ids
        mask[row, : len(e.ids)] = 1
    return ids, mask
