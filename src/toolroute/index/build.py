"""The in-memory index: server and tool layers, lexical and dense, built from the store's cache.

Dense vectors are one normalised float32 matrix per layer; every text goes through the
content-addressed embedding cache, so rebuilding after a sync embeds only new texts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from toolroute.catalog.models import Catalog, Tool, ToolKey
from toolroute.embed.base import Matrix
from toolroute.embed.cache import CachedEmbedder
from toolroute.errors import SearchIndexError
from toolroute.index.document import QuestionGenerator, ToolDoc, build_docs, server_profile
from toolroute.index.lexical import LexicalIndex
from toolroute.index.tdwa import Component, DocConfig, tdwa

__all__ = ["ToolIndex", "build_index", "economics_arrays"]

Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True, eq=False)
class ToolIndex:
    """Everything a strategy scores against; row i of every tool array is ``tools[i]``."""

    catalog: Catalog
    tools: tuple[Tool, ...]
    keys: tuple[ToolKey, ...]
    server_ids: tuple[str, ...]
    server_of: npt.NDArray[np.int32]
    tool_vectors: Matrix
    """TDWA document vectors (seed 001 eq. 1) under ``doc_config``."""
    flat_vectors: Matrix
    """One embedding of ``"server name: tool name: description"`` (BASELINES.md dense)."""
    server_vectors: Matrix
    """Server profiles (name + description, or name + tool names)."""
    tool_lexical: LexicalIndex
    """BM25 over server profile, tool name, description and parameter names."""
    name_desc_lexical: LexicalIndex
    """BM25 over tool name + description only (BASELINES.md bm25)."""
    server_lexical: LexicalIndex
    doc_config: DocConfig
    model_id: str
    prices: npt.NDArray[np.float64]
    """Per-call price (USD) of each tool; 0 where the catalog gives none."""
    ask_costs: npt.NDArray[np.float64]
    """Ask cost of each server: the catalog's, else the mean price of its tools (EHRR §V)."""

    @property
    def size(self) -> int:
        return len(self.tools)


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
    names = {s.id: s.name for s in catalog.servers}
    flat_texts = [f"{names[t.server]}: {t.name}: {t.description}" for t in tools]
    profiles = [server_profile(s) for s in catalog.servers]

    # One embedding call for every text the index needs, so the progress bar is honest.
    texts: list[str] = [*flat_texts, *profiles]
    spans: dict[Component, tuple[int, int]] = {}
    question_owner: list[int] = []
    for comp in doc_config.active:
        if comp in ("concat", "server"):
            continue
        start = len(texts)
        if comp == "questions":
            for i, d in enumerate(docs):
                texts.extend(d.questions)
                question_owner.extend([i] * len(d.questions))
        else:
            texts.extend(_component_text(d, comp) or d.name for d in docs)
        spans[comp] = (start, len(texts))
    vectors = embedder.embed(texts, progress=progress)

    n, dim = len(tools), embedder.dim
    flat = vectors[:n]
    server_vecs = vectors[n : n + len(profiles)]
    components: dict[Component, Matrix] = {"concat": flat, "server": server_vecs[server_of]}
    present: dict[Component, np.ndarray] = {
        "concat": np.ones(n, dtype=bool),
        "server": np.ones(n, dtype=bool),
    }
    for comp, (a, b) in spans.items():
        if comp == "questions":
            sums = np.zeros((n, dim), dtype=np.float32)
            counts = np.zeros(n, dtype=np.float32)
            owners = np.asarray(question_owner, dtype=np.int64)
            np.add.at(sums, owners, vectors[a:b])
            np.add.at(counts, owners, 1.0)
            components["questions"] = sums / np.clip(counts, 1.0, None)[:, None]
            present["questions"] = counts > 0
        else:
            components[comp] = vectors[a:b]
            present[comp] = np.array([bool(_component_text(d, comp)) for d in docs])
    tool_vectors = tdwa(components, present, doc_config.weights)

    prices, ask_costs = economics_arrays(catalog, server_of)
    return ToolIndex(
        catalog=catalog,
        tools=tools,
        keys=tuple(t.key for t in tools),
        server_ids=tuple(s.id for s in catalog.servers),
        server_of=server_of,
        tool_vectors=tool_vectors,
        flat_vectors=np.ascontiguousarray(flat),
        server_vectors=np.ascontiguousarray(server_vecs),
        tool_lexical=LexicalIndex([d.lexical_text() for d in docs]),
        name_desc_lexical=LexicalIndex([f"{t.name} {t.description}" for t in tools]),
        server_lexical=LexicalIndex(profiles),
        doc_config=doc_config,
        model_id=embedder.model_id,
        prices=prices,
        ask_costs=ask_costs,
    )


def economics_arrays(
    catalog: Catalog, server_of: npt.NDArray[np.int32]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """(price per tool, ask cost per server): 0 for an unpriced tool; a server's own ask cost,
    else the mean price of its tools (seed 000 §V)."""
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
