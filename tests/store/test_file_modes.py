"""Everything toolroute writes beside its database is private like it, whatever the umask:
the index snapshot and its derived arrays, ``status.json``, the routing events log and the
LLM answer cache are created 0600 in folders made 0700, even under umask 000."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import SMALL_CATALOG, HashingEmbedder
from toolroute.catalog import catalog_from_dict
from toolroute.gateway.ops.status import write_status
from toolroute.llm.client import AnswerCache, llm_cache_path
from toolroute.present.events import EventLog, RoutingEvent
from toolroute.router import Router


@pytest.fixture
def open_umask() -> Iterator[None]:
    before = os.umask(0)
    try:
        yield
    finally:
        os.umask(before)


def test_store_files_are_private_under_an_open_umask(tmp_path: Path, open_umask: None) -> None:
    store = tmp_path / "store"
    with Router(
        catalog_from_dict(SMALL_CATALOG), store=store, embedder=HashingEmbedder()
    ) as router:
        router.index()
        router.route("what time is it in Tokyo")  # derived arrays saved on first use
    write_status(store, {"running": False})
    events = tmp_path / "logs" / "deep" / "events.jsonl"
    EventLog(events).emit(RoutingEvent("q", "bm25", [], [], [], 1, 2, 0.5))
    AnswerCache(llm_cache_path(store)).put("k", {"a": 1})

    written = [p for p in store.rglob("*")] + [events, events.parent, events.parent.parent]
    assert any(p.parent.name == "index" for p in written)  # the snapshot is among them
    assert (store / "status.json") in written and any(p.suffix == ".npy" for p in written)
    for path in written:
        mode = stat.S_IMODE(path.lstat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))
