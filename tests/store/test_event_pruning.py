"""Routing events in the store are pruned by count and age, and read with a bound."""

from __future__ import annotations

import json
import time
from pathlib import Path

from toolroute.store import open_store
from toolroute.store.common import PRUNE_EVERY


def _event(i: int, at: float) -> str:
    return json.dumps({"i": i, "at": at})


def test_the_newest_events_are_read_without_the_rest(tmp_path: Path) -> None:
    with open_store(tmp_path) as store:
        for i in range(50):
            store.record_event(_event(i, time.time()))
        assert [json.loads(e)["i"] for e in store.events(last=3)] == [47, 48, 49]
        assert len(store.events()) == 50


def test_recording_prunes_to_the_newest_events_and_drops_old_ones(tmp_path: Path) -> None:
    now = time.time()
    with open_store(tmp_path) as store:
        store.events_keep = 100
        store.events_max_age_s = 3600
        for i in range(PRUNE_EVERY):  # the prune runs on the last of these
            store.record_event(_event(i, now))
        assert [json.loads(e)["i"] for e in store.events()] == list(
            range(PRUNE_EVERY - 100, PRUNE_EVERY)
        )
    with open_store(tmp_path / "aged") as store:
        for i in range(30):
            store.record_event(_event(-i, now - 7200))
        for i in range(5):
            store.record_event(_event(1000 + i, now))
        store.record_event("not json")
        assert store.prune_events(keep=1000, max_age_s=3600) == 30
        kept = store.events()
        assert [json.loads(e)["i"] for e in kept[:5]] == list(range(1000, 1005))
        assert kept[-1] == "not json"  # age pruning stops at the first young event
        assert store.prune_events(keep=2, max_age_s=3600) == 4
        assert len(store.events()) == 2
