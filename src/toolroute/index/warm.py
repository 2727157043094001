"""Embed what an index of a catalog needs into the store's vector cache, ahead of building it.

A serving gateway runs this in a worker thread, on a store connection of its own (SQLite
connections belong to the thread that opened them), while the event loop keeps answering:
the index built next on the loop then finds every vector in the cache and only assembles
them. The texts are the ones :func:`~toolroute.index.build.build_index` embeds, from the same
functions, so each is a cache hit there.
"""

from __future__ import annotations

from collections.abc import Callable

from toolroute.catalog.models import Catalog
from toolroute.embed.base import Embedder
from toolroute.embed.cache import CachedEmbedder
from toolroute.index.build import index_texts
from toolroute.index.document import (
    QuestionGenerator,
    StoredQuestions,
    TemplateQuestions,
    build_docs,
)
from toolroute.index.tdwa import DocConfig
from toolroute.store import StoreTarget, open_store

__all__ = ["warm_cache"]


def warm_cache(
    catalog: Catalog,
    target: StoreTarget,
    embedder: Embedder,
    documents: DocConfig,
    questions: str | None,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Embed the texts of ``catalog``'s index that the cache lacks; returns how many were
    embedded. ``questions``: the name of the questions the index is built with (the store's
    ``questions`` meta: ``llm:…`` read back from the store, else the templates)."""
    with open_store(target) as store:
        generator: QuestionGenerator = (
            StoredQuestions(questions, store)
            if questions and questions.startswith("llm:")
            else TemplateQuestions()
        )
        wanted = generator if "questions" in documents.active else None
        texts, _, _ = index_texts(catalog, documents, build_docs(catalog.servers, wanted))
        cached = CachedEmbedder(embedder, store)
        cached.embed_unique(texts, progress)
        return cached.embedded
