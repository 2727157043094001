"""A gateway replica following a shared store: catalog on NOTIFY, statistics on an interval.

Each replica routes over its own in-memory index. When another replica's sync changes the
stored catalog, PostgreSQL delivers ``NOTIFY toolroute_catalog`` and this replica loads the
stored catalog and rebuilds its index in a worker thread (vectors come from the shared
embedding cache, so nothing already embedded is embedded again), then swaps it in. Every
``stats_interval_s`` it checks the newest outcome id and, when another replica recorded calls,
reloads the statistics (EHRR eq. 8 state and the Beta counts) it routes with.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio

from toolroute.store import sql
from toolroute.store.base import catalog_digest

__all__ = ["STATS_INTERVAL_S", "follow_store"]

log = logging.getLogger(__name__)

STATS_INTERVAL_S = 0.5
"""How often a replica looks for other replicas' outcomes (s)."""
RETRY_S = 2.0
"""Wait before reconnecting to a store that dropped the notification connection (s)."""


async def follow_store(gateway: Any, *, stats_interval_s: float = STATS_INTERVAL_S) -> None:
    """Keep ``gateway``'s router in step with its shared store; returns at once for a store
    no other replica writes (SQLite). Runs until cancelled; a lost database connection is
    logged and retried (the replica keeps serving what it has meanwhile)."""
    if not gateway.router.store.shared:
        return  # psycopg is an extra: imported only for a store that needs it
    import psycopg

    while True:
        try:
            await _follow(gateway, stats_interval_s)
        except psycopg.Error as e:
            log.warning("shared store unreachable (%s); retrying in %.0f s", e, RETRY_S)
            await anyio.sleep(RETRY_S)


async def _follow(gateway: Any, stats_interval_s: float) -> None:
    import psycopg

    from toolroute.store.postgres import CATALOG_CHANNEL

    url = gateway.router.store.url
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(f"LISTEN {CATALOG_CHANNEL}")
        seen = await _last_outcome(conn)
        await _reload_catalog(gateway)  # whatever changed while not listening
        while True:
            notified = False
            async for _ in conn.notifies(timeout=stats_interval_s, stop_after=1):
                notified = True
            if notified:
                await _reload_catalog(gateway)
            newest = await _last_outcome(conn)
            if newest != seen:
                seen = newest
                await anyio.to_thread.run_sync(gateway.router.reload_stats)


async def _last_outcome(conn: Any) -> int:
    cur = await conn.execute(sql.LAST_OUTCOME)
    row = await cur.fetchone()
    return int(row[0])


async def _reload_catalog(gateway: Any) -> None:
    """Swap in a router over the stored catalog unless it is the one already routed over."""
    from toolroute.router import Router

    old = gateway.router

    def build() -> Router | None:
        if old.store.get_meta("catalog_digest") == catalog_digest(old.catalog):
            return None  # our own sync, or one that changed nothing we route over
        new = Router(
            old.store.load_catalog(),
            store=old.store.url,
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
