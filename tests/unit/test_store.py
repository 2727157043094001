from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import SMALL_CATALOG
from toolroute.catalog import catalog_from_dict
from toolroute.errors import StoreError
from toolroute.store import Store


def _catalog(mutate=None):  # type: ignore[no-untyped-def]
    data = json.loads(json.dumps(SMALL_CATALOG))
    if mutate:
        mutate(data)
    return catalog_from_dict(data)


def test_sync_reports_added_then_unchanged(tmp_path: Path) -> None:
    with Store(tmp_path) as st:
        first = st.sync_catalog(_catalog())
        assert (first.added, first.updated, first.removed, first.unchanged) == (7, 0, 0, 0)
        second = st.sync_catalog(_catalog())
        assert (second.added, second.updated, second.removed, second.unchanged) == (0, 0, 0, 7)


def test_sync_updates_changed_and_deletes_vanished(tmp_path: Path) -> None:
    def mutate(d):  # type: ignore[no-untyped-def]
        d["servers"][0]["tools"][0]["description"] = "Now with seconds"
        del d["servers"][2]["tools"][1]

    with Store(tmp_path) as st:
        st.sync_catalog(_catalog())
        r = st.sync_catalog(_catalog(mutate))
        assert (r.added, r.updated, r.removed, r.unchanged) == (0, 1, 1, 5)
        assert r.changed_keys == {("time", "get_current_time")}
        back = st.load_catalog()
        assert back.tool_count == 6
        assert back.servers[0].tools[0].description == "Now with seconds"


def test_store_survives_reopen_and_keeps_vectors(tmp_path: Path) -> None:
    v = np.arange(4, dtype=np.float32)
    with Store(tmp_path) as st:
        st.sync_catalog(_catalog())
        st.put_vectors("m", {"k": v})
    with Store(tmp_path) as st:
        assert st.tool_hashes()
        got = st.get_vectors("m", ["k", "missing"], 4)
        assert list(got) == ["k"] and np.array_equal(got["k"], v)
        assert st.get_vectors("other-model", ["k"], 4) == {}


def test_failed_write_leaves_previous_state(tmp_path: Path) -> None:
    with Store(tmp_path) as st:
        st.sync_catalog(_catalog())
        with pytest.raises(TypeError):
            st.put_vectors("m", {"a": np.zeros(2, np.float32), "b": object()})  # type: ignore[dict-item]
        assert st.get_vectors("m", ["a"], 2) == {}


def test_store_of_another_format_is_refused(tmp_path: Path) -> None:
    Store(tmp_path).close()
    db = sqlite3.connect(tmp_path / "toolroute.db")
    db.execute("UPDATE meta SET value='999' WHERE key='format'")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="store format 999"):
        Store(tmp_path)


def test_store_uses_wal(tmp_path: Path) -> None:
    with Store(tmp_path):
        pass
    db = sqlite3.connect(tmp_path / "toolroute.db")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()
