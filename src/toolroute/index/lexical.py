"""Lexical layer: BM25 (bm25s) over tokenised tool or server texts."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import numpy as np
import numpy.typing as npt

from toolroute.index.document import tokenise

__all__ = ["LexicalIndex"]


def _bm25s() -> ModuleType:
    """bm25s, imported with the first index (a gateway that does not route never needs it)."""
    import bm25s

    # bm25s sets its own logger to DEBUG at import; keep its per-index chatter off our stderr.
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    out: ModuleType = bm25s
    return out


class LexicalIndex:
    """BM25 (Robertson, k1=1.5, b=0.75) over pre-tokenised documents; scores every document."""

    def __init__(self, texts: Sequence[str], *, k1: float = 1.5, b: float = 0.75) -> None:
        self.size = len(texts)
        corpus = [tokenise(t) or ["\x00"] for t in texts]
        self._bm25 = _bm25s().BM25(k1=k1, b=b, method="robertson")
        if self.size:
            self._bm25.index(corpus, show_progress=False)

    def save(self, directory: Path) -> None:
        """Write the index as bm25s's own files (JSON vocabulary and parameters, ``.npy``
        score arrays) under ``directory``; :meth:`load` memory-maps them back."""
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "size").write_text(str(self.size), encoding="utf-8")
        if self.size:
            self._bm25.save(str(directory), show_progress=False)

    @classmethod
    def load(cls, directory: Path) -> LexicalIndex:
        """An index saved by :meth:`save`, its score arrays memory-mapped read-only: pages
        are read when a query touches them and shared by every process that maps them."""
        out = cls.__new__(cls)
        out.size = int((directory / "size").read_text(encoding="utf-8"))
        bm25s = _bm25s()
        out._bm25 = (
            bm25s.BM25.load(str(directory), mmap=True, show_progress=False)
            if out.size
            else bm25s.BM25()
        )
        return out

    def postings(self, term: str) -> npt.NDArray[np.int64]:
        """The documents holding ``term`` (one token, lower case), ascending, from the index's
        own sparse columns: what a score array would say by its nonzeros, without scoring
        every document."""
        vocab = self._bm25.vocab_dict if self.size else {}
        tid = vocab.get(term)
        if tid is None:
            return np.zeros(0, dtype=np.int64)
        indptr, indices = self._bm25.scores["indptr"], self._bm25.scores["indices"]
        return np.asarray(indices[int(indptr[tid]) : int(indptr[tid + 1])], dtype=np.int64)

    def scores(self, query: str) -> npt.NDArray[np.float32]:
        """BM25 score of every document; zeros when no query term is in the vocabulary."""
        if not self.size:
            return np.zeros(0, dtype=np.float32)
        vocab = self._bm25.vocab_dict
        ids = [vocab[t] for t in tokenise(query) if t in vocab]
        if not ids:
            return np.zeros(self.size, dtype=np.float32)
        return np.asarray(self._bm25.get_scores_from_ids(ids), dtype=np.float32)
