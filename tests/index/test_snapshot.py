from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tests.conftest import SMALL_CATALOG, HashingEmbedder
from toolroute import Router
from toolroute.catalog.loader import load_catalog
from toolroute.index.lexical import LexicalIndex
from toolroute.index.snapshot import load_snapshot, snapshot_key
from toolroute.index.tdwa import PRESETS
from toolroute.store import catalog_digest

QUERIES = ["what is the current time in a timezone", "weather forecast for a city"]


def _snapshots(store: Path) -> list[str]:
    return sorted(p.name for p in (store / "index").iterdir())


def test_a_fresh_router_maps_the_snapshot_and_routes_the_same(
    tmp_path: Path, catalog_file: Path
) -> None:
    store = tmp_path / "store"
    with Router(catalog_file, store=store, embedder=HashingEmbedder()) as r:
        r.index()
        built = [[(c.server, c.tool, round(c.score, 5)) for c in r.route(q, k=5)] for q in QUERIES]
        built_vectors = np.array(r.built.tool_vectors)
    emb = HashingEmbedder()
    with Router(catalog_file, store=store, embedder=emb) as r:
        assert r.index().embedded == 0
        ix = r.built
        assert isinstance(ix.tool_vectors, np.memmap)  # mapped, not rebuilt
        np.testing.assert_array_equal(ix.tool_vectors, built_vectors)
        mapped = [[(c.server, c.tool, round(c.score, 5)) for c in r.route(q, k=5)] for q in QUERIES]
        assert r.route(QUERIES[0], k=1)[0].input_schema["properties"]["timezone"]
    assert mapped == built
    assert len(emb.calls) == len(QUERIES) + 1  # query embeddings only, no tool text


def test_a_changed_catalog_builds_a_new_snapshot_and_drops_the_old(
    tmp_path: Path, catalog_file: Path
) -> None:
    store = tmp_path / "store"
    with Router(catalog_file, store=store, embedder=HashingEmbedder()) as r:
        r.index()
    first = _snapshots(store)
    data = json.loads(json.dumps(SMALL_CATALOG))
    data["servers"][2]["tools"][0]["description"] = "Hourly weather forecast for any city"
    catalog_file.write_text(json.dumps(data))
    emb = HashingEmbedder()
    with Router(catalog_file, store=store, embedder=emb) as r:
        rep = r.index()
        assert rep.updated == 1 and rep.embedded > 0
        assert not isinstance(r.built.tool_vectors, np.memmap)  # built, not stale-mapped
    second = _snapshots(store)
    assert len(first) == len(second) == 1 and first != second


def test_a_snapshot_of_another_document_preset_is_not_used(
    tmp_path: Path, catalog_file: Path
) -> None:
    store = tmp_path / "store"
    with Router(catalog_file, store=store, embedder=HashingEmbedder()) as r:
        r.index()
    catalog = load_catalog(catalog_file)
    digest = catalog_digest(catalog)
    other = next(p for name, p in PRESETS.items() if name != "toolroute")
    key = snapshot_key(digest, other, "template-v1", HashingEmbedder().model_id)
    assert load_snapshot(store, key, catalog, other) is None


def test_a_corrupt_snapshot_is_rebuilt(tmp_path: Path, catalog_file: Path) -> None:
    store = tmp_path / "store"
    with Router(catalog_file, store=store, embedder=HashingEmbedder()) as r:
        r.index()
    (snap,) = (store / "index").iterdir()
    (snap / "tool_vectors.npy").write_bytes(b"not an array")
    with Router(catalog_file, store=store, embedder=HashingEmbedder()) as r:
        r.index()
        assert r.route(QUERIES[0], k=1)[0].tool == "get_current_time"
    with Router(catalog_file, store=store, embedder=HashingEmbedder()) as r:
        assert isinstance(r.built.tool_vectors, np.memmap)  # rewritten, mapped again


def test_lexical_index_round_trips_through_files(tmp_path: Path) -> None:
    texts = ["read a file from disk", "send an email", "current time in a timezone", ""]
    built = LexicalIndex(texts)
    built.save(tmp_path / "bm25")
    loaded = LexicalIndex.load(tmp_path / "bm25")
    for q in ("read file", "time zone", "nothing matches here"):
        np.testing.assert_array_equal(loaded.scores(q), built.scores(q))
    empty = LexicalIndex([])
    empty.save(tmp_path / "empty")
    assert LexicalIndex.load(tmp_path / "empty").scores("x").size == 0
