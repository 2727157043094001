"""The embedded store: one SQLite file (WAL) in a directory, the default of one gateway.

``BEGIN IMMEDIATE`` makes every write transaction exclusive, so processes sharing the file
(a gateway and ``toolroute route`` on one machine) serialise their writes; with
``synchronous=NORMAL`` in WAL mode a committed transaction survives a killed process (only an
OS crash or power loss can take the last ones back).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from toolroute.errors import StoreError
from toolroute.store.base import StoreTarget, private_dir
from toolroute.store.common import Row, Store, replica_name

__all__ = ["DB_NAME", "SqliteStore"]

DB_NAME = "toolroute.db"


class SqliteStore(Store):
    """SQLite store in ``directory/toolroute.db``: the folders it creates are 0700, the
    database 0600 (it holds call outcomes, routing events and sign-in state)."""

    dialect = "sqlite"

    def __init__(self, target: StoreTarget) -> None:
        self.directory = Path(target)
        self.replica = replica_name()
        where = str(self.directory / DB_NAME)
        try:
            private_dir(self.directory)
            db = self.directory / DB_NAME
            if not db.exists():  # 0600: SQLite gives its -wal and -shm files the same mode
                os.close(os.open(db, os.O_WRONLY | os.O_CREAT, 0o600))
            # a gateway builds a new router's index in a worker thread and then serves it
            # on the event loop: one thread at a time, never both at once
            self._db = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=10000")
            with self._tx():
                self._migrate(where)
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{where}: cannot open store: {e}") from None
        except OSError as e:
            raise StoreError(f"{self.directory}: cannot create store directory: {e}") from None

    def close(self) -> None:
        self._db.close()

    def _rows(self, statement: str, params: Sequence[Any] = ()) -> list[Row]:
        return self._db.execute(statement, params).fetchall()

    def _many(self, statement: str, params: Sequence[Sequence[Any]]) -> None:
        self._db.executemany(statement, params)

    @contextmanager
    def _tx(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _has_meta_table(self) -> bool:
        return bool(self._rows("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"))
