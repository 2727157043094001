"""The Router: the typed Python API every CLI command is a thin layer over.

router = Router("catalog.json")          # store defaults to the per-user data dir
report = router.index()                  # incremental: only new/changed texts are embedded
for c in router.route("convert this docx to pdf", k=5):
    print(c.server, c.tool, c.score, c.input_schema)
"""

from __future__ import annotations

import copy
import difflib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

from toolroute.catalog.candidate import Candidate
from toolroute.catalog.loader import load_catalog
from toolroute.catalog.models import Catalog, Server, Tool
from toolroute.embed.base import Embedder, SpanEmbedder
from toolroute.embed.cache import CachedEmbedder
from toolroute.embed.onnx import OnnxEmbedder
from toolroute.embed.recent import VectorLru
from toolroute.errors import ConfigError
from toolroute.index.build import ToolIndex, build_index, economics_arrays
from toolroute.index.document import QuestionGenerator, StoredQuestions, TemplateQuestions
from toolroute.index.snapshot import load_snapshot, save_snapshot, snapshot_key
from toolroute.index.tdwa import PRESETS, DocConfig
from toolroute.learn.memory import query_key
from toolroute.llm.client import ChatLLM
from toolroute.papers.ehrr.routing import EhrrTrace
from toolroute.route.abstain import decide
from toolroute.route.abstain_signals import name_verbs
from toolroute.route.exact import names_a_tool, prerank_index, server_key
from toolroute.route.intent import intent_spans
from toolroute.route.precompute import DERIVATIONS
from toolroute.route.strategy import Embeds, QueryContext, RouteParams, Scores, resolve_strategy
from toolroute.settings import DEFAULTS
from toolroute.stats import Outcome, StatsBook
from toolroute.store import StoreTarget, catalog_digest, default_store_target, open_store

ROUTED_VECTORS = 1024
"""Whole-query vectors of recent routes kept for the usage memory (1.5 KB each)."""

__all__ = ["Candidate", "IndexReport", "Router", "find_server"]

Progress = Callable[[int, int], None]
_BLAS = ThreadpoolController()


@dataclass(frozen=True, slots=True)
class IndexReport:
    """What ``Router.index`` did; ``embedded`` counts texts sent to the model in this run."""

    added: int
    updated: int
    removed: int
    unchanged: int
    embedded: int

    def to_dict(self) -> dict[str, int]:
        return {
            "added": self.added,
            "updated": self.updated,
            "removed": self.removed,
            "unchanged": self.unchanged,
            "embedded": self.embedded,
        }


class Router:
    """Index a catalog into a store and route queries to its tools."""

    def __init__(
        self,
        catalog: Catalog | str | Path,
        *,
        store: StoreTarget | None = None,
        embedder: Embedder | None = None,
        llm: ChatLLM | None = None,
        documents: str | DocConfig = "toolroute",
        questions: QuestionGenerator | None = None,
        params: RouteParams | None = None,
    ) -> None:
        """``embedder``: the model that embeds tools and queries (default: the bundled
        all-MiniLM-L6-v2, embed/onnx.py). ``llm``: the chat endpoint of the LLM stages (None:
        their offline fallbacks); it replaces ``params.llm`` when both are given. Nothing is
        read from the environment here: entry points build both from their configuration
        (``LLMConfig.from_env()``, ``toolroute.toml``) and tune the process
        (``heap.fix_mmap_threshold``)."""
        self._catalog = catalog if isinstance(catalog, Catalog) else load_catalog(catalog)
        self._store_target = store if store is not None else default_store_target()
        self.store = open_store(self._store_target)
        if embedder is None:
            embedder = OnnxEmbedder()
        self.embedder = embedder
        # the whole-query vectors of the last routes: the usage memory keys a call by its
        # find_tools query, which the route has just embedded (re-embedding it cost every
        # call_tool a model run when the query cache is off or evicted it)
        self._routed = VectorLru(ROUTED_VECTORS)
        if isinstance(documents, str):
            if documents not in PRESETS:
                raise ConfigError(
                    f"unknown document preset {documents!r}; choose from: {', '.join(PRESETS)}"
                )
            documents = PRESETS[documents]
        self.documents = documents
        self.questions = questions if questions is not None else self._indexed_questions()
        if params is None:
            params = RouteParams(llm=llm)
        elif llm is not None:
            params = replace(params, llm=llm)
        self.params = params
        self._index: ToolIndex | None = None
        self._stats: StatsBook | None = None

    def _indexed_questions(self) -> QuestionGenerator:
        """The questions the store's last index was built with: an LLM's are read back from
        the store (``index --questions llm`` once, then every command routes with them, no
        LLM needed), else the offline templates."""
        name = self.store.get_meta("questions")
        if name and name.startswith("llm:"):
            return StoredQuestions(name, self.store)
        return TemplateQuestions()

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Router:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def catalog(self) -> Catalog:
        return self._catalog

    def index(self, progress: Progress | None = None) -> IndexReport:
        """Sync the store to the catalog (hash diff) and build the in-memory index."""
        # Build first (through the embedding cache), then commit the catalog: an interrupted
        # or failed build leaves the store's catalog as it was.
        cached = CachedEmbedder(self.embedder, self.store)
        digest = catalog_digest(self._catalog)
        key = snapshot_key(digest, self.documents, self.questions.name, self.embedder.model_id)
        directory = self.store.directory
        # A snapshot of this exact build (same catalog, documents, questions, model) is mapped
        # instead of rebuilt: a fresh process at 100k tools loads in seconds, in a fraction
        # of the build's memory (index/snapshot.py).
        with self.store.sync_lock():  # replicas take turns: each text is embedded once
            # (read under the lock: a process that waited maps what the other one built)
            index = load_snapshot(directory, key, self._catalog, self.documents)
            if index is None:
                index = build_index(self._catalog, cached, self.documents, self.questions, progress)
                save_snapshot(index, directory, key, DERIVATIONS)
            sync = self.store.sync_catalog(self._catalog, digest=digest)
            if self.params.abstain != "off":
                # the abstention check's vectors of the tool names' verbs, through the cache
                # and under the same lock: a replica that waited reads them, never embeds them
                name_verbs(index, cached.embed)
        self._index = index
        self.store.set_meta(
            {
                "embedder": self.embedder.model_id,
                "documents": json.dumps(
                    {"name": self.documents.name, "weights": dict(self.documents.weights)}
                ),
                "questions": self.questions.name,
                "tools": str(self._index.size),
                "indexed_at": str(int(time.time())),
            }
        )
        return IndexReport(
            added=sync.added,
            updated=sync.updated,
            removed=sync.removed,
            unchanged=sync.unchanged,
            embedded=cached.embedded,
        )

    def with_catalog(self, catalog: Catalog, *, embedder: Embedder | None = None) -> Router:
        """A router over the same tools that reads ``catalog``'s metadata instead (prices, ask
        costs, connect latencies, hints): it shares this router's index, store and embedder and
        re-indexes nothing. Use it to price a catalog differently (the simulation's worlds).
        Close only the original router; the view holds no resources of its own."""
        ix = self.built
        if tuple(t.key for t in catalog.tools()) != ix.keys:
            raise ConfigError("with_catalog needs the same tools in the same order")
        prices, asks = economics_arrays(catalog, ix.server_of)
        view = copy.copy(self)
        view._catalog = catalog
        view._index = replace(ix, catalog=catalog, prices=prices, ask_costs=asks)
        view._stats = None
        if embedder is not None:
            view.embedder = embedder
        return view

    @property
    def stats(self) -> StatsBook:
        """Online statistics (EHRR eq. 8), persisted in the store and fed by :meth:`record`."""
        if self._stats is None:
            self.reload_stats()
        assert self._stats is not None
        return self._stats

    def reload_stats(self) -> None:
        """Re-read the statistics from the store (other replicas' calls included)."""
        book = StatsBook(self._catalog, sink=self.store)
        book.load(*self.store.load_stats())
        book.load_counts(self.store.outcome_counts())
        book.memory.load(self.store.load_memory())
        self._stats = book

    def remember_use(
        self,
        query: str,
        server: str,
        tool: str,
        success: bool,
        client: str = "",
        *,
        stats: StatsBook | None = None,
    ) -> None:
        """Remember that ``client`` called ``server``/``tool`` after ``find_tools(query)``, and
        whether the call worked: ``adaptive`` then lifts its capability for that need (and for
        paraphrases of it) in this client's results only. Kept in the store (shared by
        replicas) unless ``stats`` is a book of its own (a simulation's)."""
        if not query.strip():
            return
        book = stats if stats is not None else self.stats
        if book.tool_row((server, tool)) is None:
            return  # a tool the catalog no longer has
        vector = self._query_vector(query)
        key = query_key(query)
        row = book.memory.add(client, key, vector, (server, tool), success)
        if stats is None:
            self.store.remember_use(
                client, key, (server, tool), vector, success, row.at,
                capacity=book.memory.params.capacity,
            )  # fmt: skip

    def remember_skip(
        self,
        query: str,
        shown: Sequence[tuple[str, str]],
        client: str = "",
        *,
        stats: StatsBook | None = None,
    ) -> None:
        """Remember that ``client`` abandoned the answer ``shown`` for ``query``: it called
        none of those tools (it asked again, or called another). ``adaptive`` then lowers
        them for that need, so what ranked just below comes up."""
        if not query.strip() or not shown:
            return
        book = stats if stats is not None else self.stats
        vector = self._query_vector(query)
        key = query_key(query)
        for server, tool in dict.fromkeys(shown):
            if book.tool_row((server, tool)) is None:
                continue
            row = book.memory.add(client, key, vector, (server, tool), False, skipped=True)
            if stats is None:
                self.store.remember_use(
                    client, key, (server, tool), vector, False, row.at, skipped=True,
                    capacity=book.memory.params.capacity,
                )  # fmt: skip

    def forget_uses(self, client: str | None = None) -> int:
        """Clear the usage memory (every client's, or one's), in the store too; returns the
        rows dropped from the store."""
        dropped = self.store.clear_memory(client)
        if self._stats is not None:
            self._stats.memory.clear(client)
        return dropped

    def _query_vector(self, query: str) -> Any:
        """``query``'s vector: the one its route made, else a fresh embedding."""
        vector = self._routed.get(query)
        return vector if vector is not None else self.embedder.embed([query])[0]

    def record(self, outcome: Outcome) -> None:
        """Feed one executed call back into the statistics (and the store, atomically)."""
        self.stats.record(outcome)

    @property
    def built(self) -> ToolIndex:
        if self._index is None:
            self.index()
        assert self._index is not None
        return self._index

    def query_context(self, query: str, embeds: Embeds = "intent-spans") -> QueryContext:
        """Embed what the strategy needs: nothing, the query, or the query and its intents."""
        if embeds == "none":
            return QueryContext(text=query, vector=np.zeros(0, dtype=np.float32))
        spans = intent_spans(query) if embeds in ("intents", "intent-spans") else []
        parts = [query[a:b] for a, b in spans]
        if spans and embeds == "intent-spans" and isinstance(self.embedder, SpanEmbedder):
            vecs = self.embedder.embed_spans(query, spans)
        else:
            vecs = self.embedder.embed([query, *parts])
        self._routed.put(query, vecs[0])
        return QueryContext(
            text=query,
            vector=vecs[0],
            intents=tuple(parts),
            intent_vectors=vecs[1:] if parts else None,
        )

    def scores(
        self,
        query: str,
        strategy: str = DEFAULTS.strategy,
        *,
        stats: StatsBook | None = None,
        trace: EhrrTrace | None = None,
        notes: dict[str, Any] | None = None,
        client: str = "",
    ) -> Scores:
        """The strategy's score for every tool (``-inf`` for tools it does not return).

        ``stats`` overrides the router's own statistics (a simulation keeps its own book);
        ``trace`` collects EHRR's per-stage figures.
        """
        strat = resolve_strategy(strategy)
        ix = self.built
        ctx = replace(
            self.query_context(query, strat.embeds),
            stats=stats if stats is not None else (self.stats if strat.uses_stats else None),
            trace=trace,
            embed=lambda texts: self.embedder.embed(texts),
            notes=notes if notes is not None else {},
            client=client,
        )
        # Scoring is a few matrix-vector products: one BLAS thread is as fast, and BLAS
        # threads left spinning would starve onnxruntime's on the next query (benchmarks/scale.py).
        with _BLAS.limit(limits=1, user_api="blas"):
            scores = strat.score(ix, ctx, self.params)
        # a tool the query names ranks first whatever the strategy (route/exact.py)
        if self.params.exact_names:
            scores = prerank_index(ix, query, scores)
        if strat.abstains and self.params.abstain != "off" and not names_a_tool(ix, query):
            # "no tool fits": nothing returned, the verdict in the notes (route/abstain.py)
            with _BLAS.limit(limits=1, user_api="blas"):  # as for the strategy's products
                verdict = decide(ix, ctx, scores, self.params.abstain, self.params.abstain_model)
            if verdict is not None:
                ctx.notes["abstain"] = verdict
                if not verdict.fits:
                    return np.full(ix.size, -np.inf, dtype=np.float32)
        return scores

    def route(
        self,
        query: str,
        k: int = DEFAULTS.k,
        strategy: str = DEFAULTS.strategy,
        *,
        stats: StatsBook | None = None,
        client: str = "",
        notes: dict[str, Any] | None = None,
    ) -> list[Candidate]:
        """The k best tools for ``query``, best first (``client``: whose usage memory counts).
        Empty when the strategy says no tool fits: ``notes["abstain"]`` then holds the
        verdict (:class:`toolroute.route.abstain.Verdict`, the answer to give instead)."""
        rows = self.explain(query, k, strategy, stats=stats, client=client, notes=notes)
        return [c for c, _ in rows]

    def explain(
        self,
        query: str,
        k: int = DEFAULTS.k,
        strategy: str = DEFAULTS.strategy,
        *,
        stats: StatsBook | None = None,
        client: str = "",
        notes: dict[str, Any] | None = None,
    ) -> list[tuple[Candidate, dict[str, Any]]]:
        """Like :meth:`route`, with what decided each candidate (EHRR: sim, costs, τ, accept)."""
        if k < 1:
            raise ConfigError(f"k must be at least 1, got {k}")
        if not query.strip():
            raise ConfigError("the query is empty")
        trace = EhrrTrace()
        notes = notes if notes is not None else {}
        scores = self.scores(query, strategy, stats=stats, trace=trace, notes=notes, client=client)
        out: list[tuple[Candidate, dict[str, Any]]] = []
        for i in top_k(scores, k):
            detail: dict[str, Any] = (
                trace.explain(self.built, i, float(scores[i]))
                if trace.tool_sim.size
                else {"score": round(float(scores[i]), 4)}
            )
            if "selected" in notes:
                detail["selected"] = i in notes["selected"]
            if "llm" in notes:
                detail["llm"] = notes["llm"] or "offline fallback"
            if "path" in notes:
                detail["path"] = notes["path"]
            out.append((self._candidate(self.built.tools[i], float(scores[i])), detail))
        return out

    def server_tools(self, server: str) -> tuple[Tool, ...]:
        """The tools of ``server`` (its id, or its name in any case) in catalog order: the
        deterministic inventory beside ranked search ("what can the git server do")."""
        found = find_server(self._catalog, server)
        if found is None:
            ids = [s.id for s in self._catalog.servers]
            close = difflib.get_close_matches(server, ids, n=3, cutoff=0.5)
            hint = f"did you mean {', '.join(close)}?" if close else f"servers: {_listed(ids)}"
            raise ConfigError(f"no server named {server[:200]!r}; {hint}")
        return found.tools

    @staticmethod
    def _candidate(tool: Tool, score: float) -> Candidate:
        return Candidate(
            server=tool.server,
            tool=tool.name,
            score=score,
            description=tool.description,
            input_schema=dict(tool.input_schema),
        )


def find_server(catalog: Catalog, server: str) -> Server | None:
    """The catalog's server with id ``server``, else the one whose id, then whose key (the
    id's last ``/`` segment), then whose name equals it in any case (None when none does).
    A name is asked last, so it never takes another server's id or key: a live server's name
    is what it calls itself (``serverInfo``), and one calling itself ``Time`` must not answer
    for the server configured as ``time``."""
    for s in catalog.servers:
        if s.id == server:
            return s
    low = server.strip().lower()
    for form in (lambda s: s.id, lambda s: server_key(s.id), lambda s: s.name):
        for s in catalog.servers:
            if form(s).lower() == low:
                return s
    return None


def _listed(names: Sequence[str], limit: int = 10) -> str:
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def top_k(scores: Scores, k: int) -> list[int]:
    """Indices of the k highest finite scores, best first (ties keep catalog order)."""
    finite = np.flatnonzero(np.isfinite(scores))
    if finite.size == 0:
        return []
    k = min(k, finite.size)
    sub = scores[finite]
    part = np.argpartition(-sub, k - 1)[:k] if k < finite.size else np.arange(finite.size)
    order = part[np.lexsort((finite[part], -sub[part]))]
    return [int(i) for i in finite[order]]
