"""The shared store: one PostgreSQL database behind several gateway replicas (psycopg 3).

Same tables and the same SQL as the SQLite store (:mod:`toolroute.store.sql`). What PostgreSQL
adds for replicas:

- the schema is created and migrated under an advisory lock, so replicas starting together
  migrate once;
- a catalog sync holds a transaction-scoped advisory lock while it diffs and writes, and an
  index build holds a session lock (:meth:`PostgresStore.sync_lock`): two replicas syncing the
  same catalog at once converge to one catalog, and the second finds every vector cached;
- a sync that changes the catalog sends ``NOTIFY toolroute_catalog, '<version>'`` on commit;
  replicas ``LISTEN`` (:mod:`toolroute.gateway.ops.follow`) and reload;
- statistics are updated in one statement per row (``stats_update="sql"``, the default) or by
  ``SELECT … FOR UPDATE`` then an update computed in Python (``"lock"``);
  ``benchmarks/store_bench.py`` measures both;
- routing events are committed without waiting for the WAL flush (audit rows, one per
  find_tools); outcomes and statistics wait for it unless the URL says otherwise
  (``?options=-c%20synchronous_commit%3Doff``: a PostgreSQL crash may then lose the last
  calls' outcomes, a gateway crash still loses nothing committed).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, Literal

import psycopg

from toolroute.errors import StoreError
from toolroute.learn.estimate import ServerStats, Smoothing, ToolStats
from toolroute.stats import Outcome
from toolroute.store import sql
from toolroute.store.base import default_store_dir, redact_url
from toolroute.store.common import Row, Store, columns, replica_name

__all__ = ["CATALOG_CHANNEL", "META_CHANNEL", "PostgresStore", "StatsUpdate"]

CATALOG_CHANNEL = "toolroute_catalog"
"""NOTIFY channel of catalog changes; the payload is the new catalog version."""
META_CHANNEL = "toolroute_meta"
"""NOTIFY channel of metadata writes (approvals, ...); the payload is the keys written."""
StatsUpdate = Literal["sql", "lock"]

# Advisory lock keys (any fixed bigints; "tr" + purpose).
_LOCK_SCHEMA = 0x7472_0001
_LOCK_CATALOG = 0x7472_0002
_LOCK_BUILD = 0x7472_0003


@lru_cache(maxsize=256)
def _pg(statement: str) -> str:
    """``?`` placeholders → psycopg's ``%s`` (a literal ``%`` doubled)."""
    return statement.replace("%", "%%").replace("?", "%s")


class PostgresStore(Store):
    """Store in the PostgreSQL database of ``url`` (``postgresql://user@host:port/db``)."""

    dialect = "postgresql"
    shared = True

    def __init__(
        self, target: str, *, stats_update: StatsUpdate = "sql", connect_timeout_s: float = 10
    ) -> None:
        self.url = str(target)
        self.stats_update = stats_update
        self.replica = replica_name()
        # Per-process files (the LLM answer cache) stay local, one directory per database.
        digest = hashlib.sha256(redact_url(self.url).encode()).hexdigest()[:12]
        self.directory = default_store_dir() / "postgres" / digest
        where = redact_url(self.url)
        try:
            self._conn = psycopg.connect(
                self.url, autocommit=True, connect_timeout=max(1, round(connect_timeout_s))
            )
        except psycopg.Error as e:
            raise StoreError(f"{where}: cannot connect: {_first_line(e)}") from None
        try:
            with self._tx():
                self._rows("SELECT pg_advisory_xact_lock(?)", (_LOCK_SCHEMA,))
                self._migrate(where)
        except psycopg.Error as e:
            self._conn.close()
            raise StoreError(f"{where}: cannot open store: {_first_line(e)}") from None
        except StoreError:
            self._conn.close()
            raise

    def close(self) -> None:
        self._conn.close()

    def _rows(self, statement: str, params: Sequence[Any] = ()) -> list[Row]:
        cur = self._conn.execute(_pg(statement), params)
        return cur.fetchall() if cur.description is not None else []

    def _many(self, statement: str, params: Sequence[Sequence[Any]]) -> None:
        if params:
            with self._conn.cursor() as cur:
                cur.executemany(_pg(statement), params)

    @contextmanager
    def _tx(self) -> Iterator[None]:
        with self._conn.transaction():
            yield

    def _has_meta_table(self) -> bool:
        return bool(self._rows("SELECT to_regclass('meta') IS NOT NULL")[0][0])

    def _exclude_catalog_writers(self) -> None:
        self._rows("SELECT pg_advisory_xact_lock(?)", (_LOCK_CATALOG,))

    def _catalog_changed(self, version: int) -> None:
        self._rows("SELECT pg_notify(?, ?)", (CATALOG_CHANNEL, str(version)))

    def _meta_changed(self, keys: Sequence[str]) -> None:
        self._rows("SELECT pg_notify(?, ?)", (META_CHANNEL, ",".join(keys)[:1000]))

    @contextmanager
    def sync_lock(self) -> Iterator[None]:
        self._rows("SELECT pg_advisory_lock(?)", (_LOCK_BUILD,))
        try:
            yield
        finally:
            self._rows("SELECT pg_advisory_unlock(?)", (_LOCK_BUILD,))

    def _insert_event(self, event_json: str) -> None:
        """Append one routing event without waiting for its WAL flush (``synchronous_commit``
        off for this transaction only): an audit row must not add a disk flush to every
        find_tools. A PostgreSQL crash may lose the last events, never a half-written one;
        outcomes and statistics keep the server's durability setting."""
        with self._tx():  # not pipelined: psycopg's pipeline mode was slower here
            self._rows("SET LOCAL synchronous_commit TO OFF")
            self._rows(sql.INSERT_EVENT, (event_json,))

    def _write_outcome(self, server: Row, tool: Row, outcome: Row) -> Row:
        """One statement, one round trip (sql.RECORD_OUTCOME_CHAINED)."""
        return self._rows(sql.RECORD_OUTCOME_CHAINED, (*server, *tool, *outcome))[0]

    def _fold(
        self, outcome: Outcome, server: ServerStats, tool: ToolStats, lam: Smoothing
    ) -> tuple[ServerStats, ToolStats]:
        """``stats_update="sql"``: as SQLite, in SQL. ``"lock"``: row locks, the stored row read
        FOR UPDATE, updated in Python (economics) and written; an unseen row is inserted with
        the caller's state, and losing that race re-reads the row."""
        if self.stats_update == "sql":
            return self._fold_in_sql(outcome, server, tool, lam)
        with self._tx():
            inserted = self._rows(
                "INSERT INTO server_stats (server, success, variance, fail_prob, latency_s, calls)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (server) DO NOTHING RETURNING 1",
                (outcome.server, *columns(server)),  # the columns in the dataclass's order
            )
            if not inserted:
                (row,) = self._rows(
                    "SELECT success, variance, fail_prob, latency_s, calls FROM server_stats"
                    " WHERE server = ? FOR UPDATE",
                    (outcome.server,),
                )
                server = ServerStats(*row).update(
                    outcome.success, outcome.latency_s, outcome.server_failed, lam
                )
                self._rows(
                    "UPDATE server_stats SET success = ?, variance = ?, fail_prob = ?,"
                    " latency_s = ?, calls = ? WHERE server = ?",
                    (*columns(server), outcome.server),
                )
            key = (outcome.server, outcome.tool)
            inserted = self._rows(
                "INSERT INTO tool_stats (server, tool, success, latency_s, calls)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (server, tool) DO NOTHING RETURNING 1",
                (*key, *columns(tool)),
            )
            if not inserted:
                (row,) = self._rows(
                    "SELECT success, latency_s, calls FROM tool_stats"
                    " WHERE server = ? AND tool = ? FOR UPDATE",
                    key,
                )
                tool = ToolStats(*row).update(outcome.success, outcome.latency_s, lam)
                self._rows(
                    "UPDATE tool_stats SET success = ?, latency_s = ?, calls = ?"
                    " WHERE server = ? AND tool = ?",
                    (*columns(tool), *key),
                )
            self._rows(sql.INSERT_OUTCOME, self._outcome_row(outcome))
        return server, tool


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]
