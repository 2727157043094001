"""Field-aware lexical scores: BM25 per field of a tool document, for the learned fusion.

The router's own BM25 (``ToolIndex.tool_lexical``) scores one text per tool, server profile,
name, description and parameters run together, so a word in a parameter's description counts
as much as one in the tool's name. Here each field is its own BM25 index:

    name         the tool's name split on ``_``/``-``/camel case (``getWeather`` → get weather)
    description  the tool's description
    parameters   parameter names (split) and their descriptions
    server       the server profile (name + description, or name + tool names)
    stemmed      the whole document through the Snowball English stemmer (``searching`` and
                 ``searches`` both ``search``), the tokenizer choice bm25s offers over ours

Built on first use per index and kept with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from toolroute.index.build import ToolIndex
from toolroute.index.document import build_docs, server_profile, tokenise
from toolroute.index.lexical import LexicalIndex

__all__ = [
    "FIELDS",
    "FieldIndex",
    "StopwordLexical",
    "field_index",
    "stem_text",
    "stopword_lexical",
]

FIELDS = ("name", "description", "parameters", "server", "stemmed")

Scores = npt.NDArray[np.float32]


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import snowballstemmer  # type: ignore[import-untyped]  # only fusion features need it

    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return str(_stemmer().stemWord(word))


def stem_text(text: str) -> str:
    """``text``'s tokens (our tokenizer), each Snowball-stemmed, joined by spaces."""
    return " ".join(_stem(w) for w in tokenise(text))


class FieldIndex:
    """One BM25 index per :data:`FIELDS` entry over an index's tools, row i = tool i."""

    def __init__(self, ix: ToolIndex) -> None:
        docs = build_docs(ix.catalog.servers, None)
        profiles = {s.id: server_profile(s) for s in ix.catalog.servers}
        texts: dict[str, Sequence[str]] = {
            "name": [d.name for d in docs],
            "description": [d.description for d in docs],
            "parameters": [d.parameters for d in docs],
            "server": [profiles[d.key[0]] for d in docs],
            "stemmed": [stem_text(d.lexical_text()) for d in docs],
        }
        self.indexes = {f: LexicalIndex(texts[f]) for f in FIELDS}

    def scores(self, query: str) -> dict[str, Scores]:
        """Each field's BM25 score of every tool for ``query``."""
        stemmed = stem_text(query)
        return {f: self.indexes[f].scores(stemmed if f == "stemmed" else query) for f in FIELDS}


def field_index(ix: ToolIndex) -> FieldIndex:
    """The :class:`FieldIndex` of ``ix``, kept by the index (built once)."""
    made: FieldIndex = ix.derived.memo("field-index", lambda: FieldIndex(ix))
    return made


class StopwordLexical:
    """BM25 over the whole tool document with English stopwords (bm25s' list) dropped, and
    either bm25s' own word regex (``split=False``: runs of two or more word characters, so
    ``get_weather`` stays one token and camel case is not split) or ours (camel and snake
    case split): an alternative tokenisation the benchmark suite measures against the router's."""

    def __init__(self, texts: Sequence[str], *, split: bool = False) -> None:
        import bm25s

        self.size = len(texts)
        self.split = split
        self._bm25 = bm25s.BM25(k1=1.5, b=0.75, method="robertson")
        corpus = [self.tokens(t, split=split) or ["\x00"] for t in texts]
        if self.size:
            self._bm25.index(corpus, show_progress=False)

    @staticmethod
    def tokens(text: str, *, split: bool = False) -> list[str]:
        import bm25s
        from bm25s.stopwords import STOPWORDS_EN

        if split:
            stop = frozenset(STOPWORDS_EN)
            return [w for w in tokenise(text) if w not in stop]
        out: list[str] = bm25s.tokenize(
            [text], stopwords="en", return_ids=False, show_progress=False
        )[0]
        return out

    def scores(self, query: str) -> Scores:
        vocab = self._bm25.vocab_dict
        ids = [vocab[t] for t in self.tokens(query, split=self.split) if t in vocab]
        if not self.size or not ids:
            return np.zeros(self.size, dtype=np.float32)
        return np.asarray(self._bm25.get_scores_from_ids(ids), dtype=np.float32)


def stopword_lexical(ix: ToolIndex, *, split: bool = False) -> StopwordLexical:
    """The :class:`StopwordLexical` of ``ix``'s tool documents, kept by the index."""

    def make() -> StopwordLexical:
        texts = [d.lexical_text() for d in build_docs(ix.catalog.servers, None)]
        return StopwordLexical(texts, split=split)

    made: StopwordLexical = ix.derived.memo(("stopword-lexical", split), make)
    return made
