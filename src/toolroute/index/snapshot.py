"""Index snapshots: a built :class:`ToolIndex`'s arrays as files beside the store, so a fresh
process maps them instead of rebuilding.

Building a 100k-tool index from the embedding cache takes minutes and peaks at several times
the size of its arrays (every distinct text's vector, documents, tokenised corpora); loading a
snapshot reads a few small files and memory-maps the rest read-only: the dense matrices and
BM25 score arrays cost resident memory only where a query touches them, and every process on
the machine shares those pages (what ranking needs is a few arrays; a tool's schema is read only
when the tool is presented, as in Tool Attention's lazy schema loading).

A snapshot lives in ``<store directory>/index/<key>/`` where ``key`` hashes everything the
arrays depend on: the catalog's digest (servers, tools and their hashes, in order), the
document preset and weights, the question generator, the embedder's model id and this
module's format. A changed catalog, preset or model never reads a stale snapshot; it builds
and writes a new one (older ones are removed). Files: ``.npy`` arrays, bm25s's own files,
``meta.json``, and ``derived/`` (what routing derives from the index: the provider graph,
action classes, schema keys, each keyed by its code's fingerprint); no pickle. The catalog
itself (names, descriptions, schemas) always comes from the caller, so a snapshot holds
nothing the store is the source of truth for.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from toolroute.catalog.models import Catalog
from toolroute.index.build import ToolIndex, economics_arrays
from toolroute.index.derived import Derivation, DerivedData
from toolroute.index.lexical import LexicalIndex
from toolroute.index.tdwa import DocConfig
from toolroute.store.base import private_dir, private_tree

__all__ = ["FORMAT", "load_snapshot", "save_snapshot", "snapshot_key"]

logger = logging.getLogger(__name__)

FORMAT = 1
"""Bumped whenever the files or what they mean change: an old snapshot is then rebuilt."""
_ARRAYS = ("tool_vectors", "flat_vectors", "server_vectors", "server_of")
_LEXICAL = ("tool_lexical", "name_desc_lexical", "server_lexical")
DERIVED = "derived"
"""Folder of the data routing derives from the index (index/derived.py): missing in an older
snapshot, it is computed on first use and written there."""


def snapshot_key(catalog_digest: str, doc_config: DocConfig, questions: str, model_id: str) -> str:
    """SHA-256 of everything a built index depends on (see the module docstring)."""
    payload = json.dumps(
        [
            FORMAT,
            catalog_digest,
            doc_config.name,
            sorted(doc_config.weights.items()),
            questions,
            model_id,
        ]
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _root(store_dir: Path) -> Path:
    return store_dir / "index"


def save_snapshot(
    ix: ToolIndex, store_dir: Path, key: str, derivations: tuple[Derivation[ToolIndex], ...] = ()
) -> Path | None:
    """Write ``ix`` as the snapshot ``key`` (atomically: a temporary directory renamed into
    place), with ``derivations`` computed and saved beside its arrays (index/derived.py), and
    remove older snapshots. A snapshot is an optimisation: when it cannot be written
    (read-only or full disk) the error is logged and None returned."""
    root = _root(store_dir)
    final = root / key
    if (final / "meta.json").is_file():
        ix.derived.directory = final / DERIVED
        return final
    try:
        private_dir(root)
        tmp = Path(tempfile.mkdtemp(prefix=".building-", dir=root))
        try:
            for name in _ARRAYS:
                np.save(tmp / f"{name}.npy", np.ascontiguousarray(getattr(ix, name)))
            for name in _LEXICAL:
                getattr(ix, name).save(tmp / name)
            ix.derived.save(derivations, ix, tmp / DERIVED)
            meta = {"format": FORMAT, "key": key, "tools": ix.size, "model_id": ix.model_id}
            (tmp / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
            private_tree(tmp)  # owner-only, as the database: whatever the umask
            os.replace(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    except OSError as e:
        if (final / "meta.json").is_file():  # another process wrote the same snapshot
            return final
        logger.warning("could not write the index snapshot under %s: %s", root, e)
        return None
    for old in root.iterdir():
        if old.name != key and not old.name.startswith(".building-"):
            shutil.rmtree(old, ignore_errors=True)
    ix.derived.directory = final / DERIVED  # what later routes derive is saved there too
    return final


def load_snapshot(
    store_dir: Path, key: str, catalog: Catalog, doc_config: DocConfig
) -> ToolIndex | None:
    """The snapshot ``key`` over ``catalog`` (whose digest the key hashes), its arrays
    memory-mapped read-only; None when there is none or it does not match."""
    where = _root(store_dir) / key
    try:
        meta = json.loads((where / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    tools = tuple(catalog.tools())
    if meta.get("format") != FORMAT or meta.get("key") != key or meta.get("tools") != len(tools):
        return None
    try:
        arrays = {name: np.load(where / f"{name}.npy", mmap_mode="r") for name in _ARRAYS}
        lexical = {name: LexicalIndex.load(where / name) for name in _LEXICAL}
    except (OSError, ValueError) as e:
        logger.warning("rebuilding the unreadable index snapshot %s: %s", where, e)
        shutil.rmtree(where, ignore_errors=True)
        return None
    if arrays["tool_vectors"].shape[0] != len(tools):
        return None
    server_of = np.asarray(arrays["server_of"])
    prices, ask_costs = economics_arrays(catalog, server_of)
    return ToolIndex(
        catalog=catalog,
        tools=tools,
        keys=tuple(t.key for t in tools),
        server_ids=tuple(s.id for s in catalog.servers),
        server_of=server_of,
        tool_vectors=arrays["tool_vectors"],
        flat_vectors=arrays["flat_vectors"],
        server_vectors=arrays["server_vectors"],
        tool_lexical=lexical["tool_lexical"],
        name_desc_lexical=lexical["name_desc_lexical"],
        server_lexical=lexical["server_lexical"],
        doc_config=doc_config,
        model_id=str(meta["model_id"]),
        prices=prices,
        ask_costs=ask_costs,
        derived=DerivedData(where / DERIVED),
    )
