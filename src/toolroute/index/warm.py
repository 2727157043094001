"""Embed what an index of a catalog needs into the store's vector cache, ahead of building it.

A serving gateway runs this in a worker thread, on a store connection of its own (SQLite
connections belong to the thread that opened them), while the event loop keeps answering:
the index built next on the loop then finds every vector in the cache and only assembles
them. The texts are the ones :func:`~toolroute.index.build.build_index` embeds, from the same
functions, so each is a cache hit there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from toolroute.catalog.models import Catalog, Server
from toolroute.embed.base import Embedder
from toolroute.embed.cache import CachedEmbedder
from toolroute.index.build import index_texts
from toolroute.index.document import (
    PROFILE_CHARS,
    QuestionGenerator,
    StoredQuestions,
    TemplateQuestions,
    build_docs,
)
from toolroute.index.tdwa import DocConfig
from toolroute.store import StoreTarget, open_store

__all__ = ["slices", "warm_cache"]


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


def slices(catalog: Catalog, size: int) -> Iterator[Catalog]:
    """``catalog`` cut into catalogs of at most ``size`` tools whose texts are the whole
    catalog's (a cut server keeps its whole profile), so a big catalog can be embedded a part
    at a time, each part a cache hit when the whole is indexed. A server whose profile would
    not survive the cut exactly (its cut ends in a space) is one part of its own, whole."""
    part: list[Server] = []
    room = size
    for server in catalog.servers:
        tools = server.tools
        body = server.description.strip() or ", ".join(t.name for t in tools)
        whole = body[:PROFILE_CHARS]
        if len(tools) > room and whole != whole.strip():
            yield Catalog(servers=(server,))
            continue
        cut = len(tools) > room
        while True:
            take, tools = tools[:room], tools[room:]
            part.append(replace(server, tools=take, description=whole) if cut else server)
            room -= len(take)
            if not room:
                yield Catalog(servers=tuple(part))
                part, room = [], size
            if not tools:
                break
    if part:
        yield Catalog(servers=tuple(part))
