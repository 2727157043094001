from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import HashingEmbedder
from toolroute import Router
from toolroute.index import derived as derived_module
from toolroute.index.build import ToolIndex
from toolroute.index.derived import Arrays, Derivation, DerivedData
from toolroute.route import precompute as derived
from toolroute.route.action import tool_actions
from toolroute.route.capability import schema_keys
from toolroute.route.expand import provider_graph

QUERY = "create a document then add a paragraph, what is the time"


def _derived_dir(store: Path) -> Path:
    (snap,) = (store / "index").iterdir()
    return snap / "derived"


def _forbid_recomputing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: object) -> None:
        raise AssertionError("recomputed what the snapshot holds")

    for name in ("tool_actions", "provider_graph", "schema_keys"):
        monkeypatch.setattr(derived, name, refuse)


def _route(r: Router) -> list[tuple[str, str, float]]:
    return [(c.server, c.tool, round(c.score, 5)) for c in r.route(QUERY, k=8)]


def test_a_snapshot_saves_what_routing_derives_and_a_fresh_router_maps_it(
    tmp_path: Path, catalog_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    with Router(catalog_file, store=store, embedder=HashingEmbedder()) as r:
        r.index()
        built = _route(r)
    saved = sorted(p.name for p in _derived_dir(store).iterdir())
    assert saved == sorted(d.key for d in derived.DERIVATIONS)
    _forbid_recomputing(monkeypatch)
    with Router(catalog_file, store=store, embedder=HashingEmbedder()) as r:
        assert _route(r) == built
        ix = r.built
        prov, served = derived.index_providers(ix)
        assert isinstance(prov.base, np.memmap)  # mapped from the snapshot's file
        assert derived.index_actions(ix)[1][0] == "read"


def test_the_mapped_data_equals_what_the_tools_give(tmp_path: Path, catalog_file: Path) -> None:
    store = tmp_path / "store"
    with Router(catalog_file, store=store, embedder=HashingEmbedder()) as r:
        r.index()
    with Router(catalog_file, store=store, embedder=HashingEmbedder()) as r:
        ix = r.built
        names = [t.name for t in ix.tools]
        acts, order = derived.index_actions(ix)
        want_acts, want_order = tool_actions(names)
        assert acts.tolist() == want_acts.tolist() and order == want_order
        for got, want in zip(derived.index_providers(ix), provider_graph(ix.tools), strict=True):
            assert got.tolist() == want.tolist()
        keys, want_keys = derived.index_schema_keys(ix), schema_keys(ix.tools)
        assert keys.key.tolist() == want_keys.key.tolist()
        assert [m.tolist() for m in keys.members] == [m.tolist() for m in want_keys.members]


def test_derived_data_missing_from_an_older_snapshot_is_computed_once_and_saved(
    tmp_path: Path, catalog_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    with Router(catalog_file, store=store, embedder=HashingEmbedder()) as r:
        r.index()
        built = _route(r)
    shutil.rmtree(_derived_dir(store))  # a snapshot written before derived data existed
    with Router(catalog_file, store=store, embedder=HashingEmbedder()) as r:
        assert _route(r) == built
    assert sorted(p.name for p in _derived_dir(store).iterdir()) == sorted(
        d.key for d in derived.DERIVATIONS
    )
    _forbid_recomputing(monkeypatch)
    with Router(catalog_file, store=store, embedder=HashingEmbedder()) as r:
        assert _route(r) == built


def _ones(ix: ToolIndex) -> Arrays:
    return (np.ones(ix.size, dtype=np.int32),)


def _twos(ix: ToolIndex) -> Arrays:
    return (np.full(ix.size, 2, dtype=np.int32),)


def test_a_derivation_of_another_version_is_recomputed_and_the_old_files_dropped(
    tmp_path: Path, catalog_file: Path
) -> None:
    with Router(catalog_file, store=tmp_path / "s", embedder=HashingEmbedder()) as r:
        ix = r.built
    where = tmp_path / "derived"
    v1 = Derivation("probe", _ones, (derived_module,))
    assert DerivedData(where).get(v1, ix)[0].tolist() == [1] * ix.size
    mapped = DerivedData(where).get(Derivation("probe", _twos, (derived_module,)), ix)
    assert isinstance(mapped[0].base, np.memmap) and mapped[0].tolist() == [1] * ix.size
    v2 = Derivation("probe", _twos, (derived_module,), version=2)
    assert v2.key != v1.key
    assert DerivedData(where).get(v2, ix)[0].tolist() == [2] * ix.size
    assert [p.name for p in where.iterdir()] == [v2.key]


def test_derived_data_holding_objects_is_refused(tmp_path: Path, catalog_file: Path) -> None:
    with Router(catalog_file, store=tmp_path / "s", embedder=HashingEmbedder()) as r:
        ix = r.built
    bad = Derivation("objects", lambda ix: (np.array([{"a": 1}], dtype=object),))
    with pytest.raises(TypeError, match="objects"):
        DerivedData(tmp_path / "derived").get(bad, ix)
