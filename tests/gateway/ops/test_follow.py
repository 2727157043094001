"""StoreWatch: the gateway reads the store's metadata only when it may have changed — a write
by this process (counted in process) or by another process on the same SQLite store (the
database files' size and mtime)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from toolroute.gateway.ops.follow import StoreWatch
from toolroute.store import open_store

WRITE = (
    "import sys; from toolroute.store import open_store; "
    "s = open_store(sys.argv[1]); s.set_meta({'quarantine_revision': '7'}); s.close()"
)


def test_a_store_nobody_wrote_is_not_read_again(tmp_path: Path) -> None:
    with open_store(tmp_path) as store:
        watch = StoreWatch(lambda: store, file_check_s=0)
        assert not watch.changed()
        store.get_meta("anything")  # reading writes nothing
        assert not watch.changed()


def test_a_write_by_this_process_is_seen_at_once_through_any_store_object(
    tmp_path: Path,
) -> None:
    with open_store(tmp_path) as store, open_store(tmp_path) as other:
        watch = StoreWatch(lambda: store, file_check_s=3600)  # no file look in this test
        other.set_meta({"quarantine_revision": "1"})
        assert watch.changed()
        assert not watch.changed()  # told once


def test_a_write_by_another_process_on_the_same_sqlite_store_is_seen(tmp_path: Path) -> None:
    with open_store(tmp_path) as store:
        watch = StoreWatch(lambda: store, file_check_s=0)
        assert not watch.changed()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        subprocess.run([sys.executable, "-c", WRITE, str(tmp_path)], check=True, env=env)
        assert watch.changed()
        assert store.get_meta("quarantine_revision") == "7"
        assert not watch.changed()
