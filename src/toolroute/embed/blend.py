"""Two embedders as one: the mean of their cosines, through every dense stage unchanged.

Each model's unit vector is scaled by 1/√2 and the two are concatenated: the result is a unit
vector, and the dot product of two such vectors is the mean of the two models' cosines. An
index built with a :class:`BlendEmbedder` therefore scores every dense stage (TDWA, flat,
server profiles, sub-intents) by that mean without any strategy knowing there are two models.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from toolroute.embed.base import Embedder, Matrix, SpanEmbedder

__all__ = ["BlendEmbedder"]


def _with_spans(e: Embedder, text: str, spans: Sequence[tuple[int, int]]) -> Matrix:
    if isinstance(e, SpanEmbedder):
        return e.embed_spans(text, spans)
    return e.embed([text, *(text[a:b] for a, b in spans)])


class BlendEmbedder:
    """``[a(t), b(t)] / √2``: a unit vector whose dot products are mean cosines."""

    def __init__(self, a: Embedder, b: Embedder) -> None:
        self.a = a
        self.b = b

    @property
    def model_id(self) -> str:
        return f"mean-cosine({self.a.model_id}+{self.b.model_id})"

    @property
    def dim(self) -> int:
        return self.a.dim + self.b.dim

    def _join(self, va: Matrix, vb: Matrix) -> Matrix:
        out: Matrix = np.hstack([va, vb]).astype(np.float32, copy=False)
        out *= np.float32(1 / math.sqrt(2))
        return out

    def embed(self, texts: Sequence[str]) -> Matrix:
        return self._join(self.a.embed(texts), self.b.embed(texts))

    def embed_spans(self, text: str, spans: Sequence[tuple[int, int]]) -> Matrix:
        """Whole text plus each span from each model (late chunking where a model has it)."""
        return self._join(_with_spans(self.a, text, spans), _with_spans(self.b, text, spans))
