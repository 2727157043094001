"""The in-memory index: server and tool layers, lexical and dense, built from the store's cache.

Dense vectors are one normalised float32 matrix per layer; every text goes through the
content-addressed embedding cache, so rebuilding after a sync embeds only new texts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from toolroute.catalog.models import Catalog, Tool, ToolKey
from toolroute.embed.base import Matrix
from toolroute.embed.cache import CachedEmbedder
from toolroute.errors import SearchIndexError
from toolroute.index.derived import DerivedData
from toolroute.index.document import QuestionGenerator, ToolDoc, build_docs, server_profile
from toolroute.index.lexical import LexicalIndex
from toolroute.index.tdwa import Component, DocConfig, tdwa

__all__ = ["ToolIndex", "build_index", "economics_arrays", "index_texts"]

Progress = Callable[[int, int], None]
_BLOCK = 8192
"""Tools per block when combining component vectors (bounds the temporaries)."""


@dataclass(frozen=True, slots=True, eq=False)
class ToolIndex:
    """Everything a strategy scores against; row i of every tool array is ``tools[i]``."""

    catalog: Catalog
    tools: tuple[Tool, ...]
    keys: tuple[ToolKey, ...]
    server_ids: tuple[str, ...]
    server_of: npt.NDArray[np.int32]
    tool_vectors: Matrix
    """TDWA document vectors (ScaleMCP eq. 1) under ``doc_config``."""
    flat_vectors: Matrix
    """One embedding of ``"server name: tool name: description"`` (the dense baseline)."""
    server_vectors: Matrix
    """Server profiles (name + description, or name + tool names)."""
    tool_lexical: LexicalIndex
    """BM25 over server profile, tool name, description and parameter names."""
    name_desc_lexical: LexicalIndex
    """BM25 over tool name + description only (the BM25 baseline)."""
    server_lexical: LexicalIndex
    doc_config: DocConfig
    model_id: str
    prices: npt.NDArray[np.float64]
    """Per-call price (USD) of each tool; 0 where the catalog gives none."""
    ask_costs: npt.NDArray[np.float64]
    """Ask cost of each server: the catalog's, else the mean price of its tools (EHRR §V)."""
    derived: DerivedData = field(default_factory=DerivedData, repr=False)
    """What routing derives from these tools once (route/precompute.py), kept with the index
    and saved with its snapshot."""

    @property
    def size(self) -> int:
        return len(self.tools)


def index_texts(
    catalog: Catalog, doc_config: DocConfig, docs: Sequence[ToolDoc]
) -> tuple[list[str], dict[Component, tuple[int, int]], npt.NDArray[np.int64]]:
    """Every text the index embeds, in one list so the progress bar is honest:
    ``(texts, spans, question_offsets)``. Rows 0..n are the flat tool texts, then one server
    profile per server, then each active component's span; the questions of tool i are
    ``texts[a + question_offsets[i] : a + question_offsets[i + 1]]`` for the span (a, b)."""
    names = {s.id: s.name for s in catalog.servers}
    texts = [f"{names[t.server]}: {t.name}: {t.description}" for t in catalog.tools()]
    texts.extend(server_profile(s) for s in catalog.servers)
    spans: dict[Component, tuple[int, int]] = {}
    counts = np.zeros(len(docs), dtype=np.int64)
    for comp in doc_config.active:
        if comp in ("concat", "server"):
            continue
        start = len(texts)
        if comp == "questions":
            for i, d in enumerate(docs):
                texts.extend(d.questions)
                counts[i] = len(d.questions)
        else:
            texts.extend(_component_text(d, comp) or d.name for d in docs)
        spans[comp] = (start, len(texts))
    return texts, spans, np.concatenate([[0], np.cumsum(counts)])


def build_index(
    catalog: Catalog,
    embedder: CachedEmbedder,
    doc_config: DocConfig,
    questions: QuestionGenerator | None,
    progress: Progress | None = None,
) -> ToolIndex:
    """Embed (through the cache) and assemble both layers."""
    tools = tuple(catalog.tools())
    if not tools:
        raise SearchIndexError("the catalog has no tools to index")
    docs = build_docs(catalog.servers, questions if "questions" in doc_config.active else None)
    server_index = {s.id: i for i, s in enumerate(catalog.servers)}
    server_of = np.array([server_index[t.server] for t in tools], dtype=np.int32)
    texts, spans, q_offsets = index_texts(catalog, doc_config, docs)
    n, n_servers = len(tools), len(catalog.servers)
    # Distinct texts only (mirrors repeat names and questions), gathered per block of tools:
    # peak memory is the output matrices plus one block, not a vector per text.
    vectors, inverse = embedder.embed_unique(texts, progress)
    del texts
    flat = vectors[inverse[:n]]
    server_vecs = vectors[inverse[n : n + n_servers]]
    present: dict[Component, npt.NDArray[np.bool_]] = {}
    for comp in spans:
        present[comp] = (
            np.diff(q_offsets) > 0
            if comp == "questions"
            else np.array([bool(_component_text(d, comp)) for d in docs], dtype=bool)
        )
    tool_vectors = np.empty((n, embedder.dim), dtype=np.float32)
    for lo in range(0, n, _BLOCK):
        hi = min(lo + _BLOCK, n)
        parts: dict[Component, Matrix] = {
            "concat": flat[lo:hi],
            "server": server_vecs[server_of[lo:hi]],
        }
        masks: dict[Component, npt.NDArray[np.bool_]] = {
            "concat": np.ones(hi - lo, dtype=bool),
            "server": np.ones(hi - lo, dtype=bool),
        }
        for comp, (a, _) in spans.items():
            masks[comp] = present[comp][lo:hi]
            if comp == "questions":
                parts[comp] = _mean_questions(vectors, inverse, a, q_offsets[lo : hi + 1])
            else:
                parts[comp] = vectors[inverse[a + lo : a + hi]]
        tool_vectors[lo:hi] = tdwa(parts, masks, doc_config.weights)
    del vectors, inverse

    prices, ask_costs = economics_arrays(catalog, server_of)
    return ToolIndex(
        catalog=catalog,
        tools=tools,
        keys=tuple(t.key for t in tools),
        server_ids=tuple(s.id for s in catalog.servers),
        server_of=server_of,
        tool_vectors=tool_vectors,
        flat_vectors=flat,
        server_vectors=server_vecs,
        tool_lexical=LexicalIndex([d.lexical_text() for d in docs]),
        name_desc_lexical=LexicalIndex([f"{t.name} {t.description}" for t in tools]),
        server_lexical=LexicalIndex([server_profile(s) for s in catalog.servers]),
        doc_config=doc_config,
        model_id=embedder.model_id,
        prices=prices,
        ask_costs=ask_costs,
    )


def _mean_questions(
    vectors: Matrix,
    inverse: npt.NDArray[np.intp],
    start: int,
    offsets: npt.NDArray[np.int64],
) -> Matrix:
    """Mean question vector of each tool of a block (zeros where a tool has none);
    ``offsets`` are the block's question offsets, one more than its tools."""
    out = np.zeros((len(offsets) - 1, vectors.shape[1]), dtype=np.float32)
    counts = np.diff(offsets)
    has = counts > 0
    if has.any():
        rows = vectors[inverse[start + offsets[0] : start + offsets[-1]]]
        out[has] = np.add.reduceat(rows, (offsets[:-1] - offsets[0])[has], axis=0)
        out[has] /= counts[has, None].astype(np.float32)
    return out


def economics_arrays(
    catalog: Catalog, server_of: npt.NDArray[np.int32]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """(price per tool, ask cost per server): 0 for an unpriced tool; a server's own ask cost,
    else the mean price of its tools (EHRR §V)."""
    prices = np.array([t.price or 0.0 for t in catalog.tools()], dtype=np.float64)
    asks = np.array(
        [
            s.ask_cost
            if s.ask_cost is not None
            else float(prices[server_of == i].mean())
            if s.tools
            else 0.0
            for i, s in enumerate(catalog.servers)
        ],
        dtype=np.float64,
    )
    return prices, asks


def _component_text(doc: ToolDoc, comp: Component) -> str:
    if comp == "name":
        return doc.name
    if comp == "description":
        return doc.description
    if comp == "parameters":
        return doc.parameters
    raise ValueError(comp)
