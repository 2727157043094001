"""Following the store's changes without reading it on a timer: replicas and approvals.

- :func:`follow_store`: a gateway replica of a shared store. When another replica's sync changes
  the stored catalog, PostgreSQL delivers ``NOTIFY toolroute_catalog`` and this replica loads
  the stored catalog and rebuilds its index in a worker thread (vectors come from the shared
  embedding cache, so nothing already embedded is embedded again), then swaps it in. Every
  ``stats_interval_s`` it checks the newest outcome id and, when another replica recorded calls,
  reloads the statistics (EHRR eq. 8 state and the Beta counts) it routes with.
- :class:`StoreWatch`: whether the store's metadata (an approval of a quarantined tool, ...)
  may have changed, so the gateway reads it only then: a write by this process is counted in
  process (:func:`toolroute.store.base.note_meta_write`); another process's write is seen as
  ``NOTIFY toolroute_meta`` on PostgreSQL (delivered by :func:`follow_store`) or, on SQLite, as
  a change of the database files' size and mtime (a ``stat``, at most every ``file_check_s``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from toolroute.router import Router
from toolroute.store import sql
from toolroute.store.base import StoreInterface, catalog_digest, meta_writes
from toolroute.store.sqlite import DB_NAME

if TYPE_CHECKING:
    import psycopg

    from toolroute.gateway.shell.server import Gateway

__all__ = ["FILE_CHECK_S", "STATS_INTERVAL_S", "StoreWatch", "follow_store"]

log = logging.getLogger(__name__)

STATS_INTERVAL_S = 0.5
"""How often a replica looks for other replicas' outcomes (s)."""
RETRY_S = 2.0
"""Wait before reconnecting to a store that dropped the notification connection (s)."""
FILE_CHECK_S = 1.0
"""How often the SQLite files are looked at (a ``stat``) for another process's writes (s)."""


class StoreWatch:
    """Says whether the store's metadata may have changed since it was last asked."""

    def __init__(
        self, store_of: Callable[[], StoreInterface], *, file_check_s: float = FILE_CHECK_S
    ) -> None:
        self._store_of = store_of
        self.file_check_s = file_check_s
        store = store_of()
        self._local = meta_writes(store.directory)
        self._files = _signature(store)
        self._checked_at = time.monotonic()
        self._notified = False
        self.listening = False
        """Set while :func:`follow_store` delivers the shared store's notifications."""
        self.on_notify: Callable[[], None] | None = None  # wakes whoever waits on changes

    def notify(self) -> None:
        """Another replica wrote metadata (its ``NOTIFY``)."""
        self._notified = True
        if self.on_notify is not None:
            self.on_notify()

    def changed(self) -> bool:
        """True when this process wrote metadata, a notification came, or (SQLite, or a
        shared store nobody listens to) the files changed since the last look."""
        store = self._store_of()
        local = meta_writes(store.directory)
        hit = self._notified or local != self._local
        self._local, self._notified = local, False
        now = time.monotonic()
        if (not store.shared or not self.listening) and now - self._checked_at >= (
            self.file_check_s
        ):
            self._checked_at = now
            files = _signature(store)
            # a shared store has no files here: without a listener, look at it this often
            hit = hit or files != self._files or store.shared
            self._files = files
        return hit


def _signature(store: StoreInterface) -> tuple[tuple[int, int], ...]:
    """(mtime, size) of the SQLite database and its write-ahead log: any commit changes one."""
    if store.shared:
        return ()
    out = []
    for name in (DB_NAME, f"{DB_NAME}-wal"):
        try:
            st = Path(store.directory, name).stat()
        except OSError:  # no WAL right after a checkpoint
            out.append((0, 0))
        else:
            out.append((st.st_mtime_ns, st.st_size))
    return tuple(out)


async def follow_store(
    gateway: Gateway,
    watch: StoreWatch | None = None,
    *,
    stats_interval_s: float = STATS_INTERVAL_S,
) -> None:
    """Keep ``gateway``'s router in step with its shared store (and tell ``watch`` of
    metadata writes); returns at once for a store no other replica writes (SQLite). Runs until
    cancelled; a lost database connection is logged and retried (the replica keeps serving
    what it has meanwhile)."""
    if not gateway.shared.router.store.shared:
        return  # psycopg is an extra: imported only for a store that needs it
    import psycopg

    while True:
        try:
            await _follow(gateway, watch, stats_interval_s)
        except psycopg.Error as e:
            log.warning("shared store unreachable (%s); retrying in %.0f s", e, RETRY_S)
            await anyio.sleep(RETRY_S)
        finally:
            if watch is not None:
                watch.listening = False


async def _follow(gateway: Gateway, watch: StoreWatch | None, stats_interval_s: float) -> None:
    import psycopg

    from toolroute.store.postgres import CATALOG_CHANNEL, META_CHANNEL, PostgresStore

    store = gateway.shared.router.store
    if not isinstance(store, PostgresStore):  # shared means PostgreSQL
        raise TypeError(f"no notifications from a {type(store).__name__}")
    url = store.url
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(f"LISTEN {CATALOG_CHANNEL}")
        await conn.execute(f"LISTEN {META_CHANNEL}")
        if watch is not None:
            watch.listening = True
            watch.notify()  # whatever was written while not listening
        seen = await _last_outcome(conn)
        await _reload_catalog(gateway, url)  # whatever changed while not listening
        while True:
            catalog = False
            async for n in conn.notifies(timeout=stats_interval_s, stop_after=1):
                if n.channel == META_CHANNEL and watch is not None:
                    watch.notify()
                catalog = catalog or n.channel == CATALOG_CHANNEL
            if catalog:
                await _reload_catalog(gateway, url)
            newest = await _last_outcome(conn)
            if newest != seen:
                seen = newest
                await anyio.to_thread.run_sync(gateway.shared.router.reload_stats)


async def _last_outcome(conn: psycopg.AsyncConnection[tuple[int]]) -> int:
    cur = await conn.execute(sql.LAST_OUTCOME)
    row = await cur.fetchone()
    return int(row[0]) if row is not None else 0


async def _reload_catalog(gateway: Gateway, url: str) -> None:
    """Swap in a router over the catalog stored at ``url`` unless it is the one already
    routed over."""
    old = gateway.shared.router

    def build() -> Router | None:
        if old.store.get_meta("catalog_digest") == catalog_digest(old.catalog):
            return None  # our own sync, or one that changed nothing we route over
        new = Router(
            old.store.load_catalog(),
            store=url,
            embedder=old.embedder,
            documents=old.documents,
            questions=old.questions,
            params=old.params,
        )
        try:
            new.index()
        except BaseException:
            new.close()
            raise
        return new

    try:
        new = await anyio.to_thread.run_sync(build)
    except Exception:  # keep serving the index we have
        log.exception("reloading the catalog another replica synced failed")
        return
    if new is not None:
        gateway.replace_router(new).close()
        log.info("reloaded the catalog another replica synced (%d tools)", new.built.size)
