"""``Store``: the store both backends are, with every operation written once over the SQL of
:mod:`toolroute.store.sql`. A backend supplies only its connection: how to run a statement,
how to open a write transaction, and what a sync does to exclude other writers.

:func:`toolroute.store.open_store` opens the backend its target names: a directory opens
:class:`~toolroute.store.sqlite.SqliteStore`, a ``postgresql://`` URL opens
:class:`~toolroute.store.postgres.PostgresStore`.

Every write is one transaction, so a crash (even ``kill -9``) leaves every committed write and
nothing of the one in flight. The catalog carries a version (``meta.catalog_version``) bumped by
every sync that changes it, with a digest of what it holds (``meta.catalog_digest``), so a
replica can tell whether the stored catalog is the one it routes over.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from toolroute.catalog.models import Catalog, Server, Tool, ToolKey
from toolroute.embed.base import Matrix
from toolroute.errors import StoreError
from toolroute.learn.estimate import DEFAULT_SMOOTHING, ServerStats, Smoothing, ToolStats
from toolroute.learn.memory import MemoryRow
from toolroute.stats import Outcome
from toolroute.store import sql
from toolroute.store.base import (
    SyncReport,
    catalog_digest,
    chunks,
    note_meta_write,
    server_extra,
    tool_extra,
)

__all__ = ["PRUNE_BATCH", "PRUNE_BATCHES", "PRUNE_EVERY", "OAuthRow", "Store"]

PRUNE_EVERY = 1000
"""Routing events recorded between two prunings."""
PRUNE_BATCH = 1000
"""Oldest events read at once when pruning by age."""
PRUNE_BATCHES = 50
"""Batches one pruning reads at most (the rest goes at the next)."""

Row = tuple[Any, ...]


class Store:
    """A toolroute store; use as a context manager or call :meth:`close`."""

    directory: Path
    shared: bool = False
    dialect: sql.Dialect
    replica: str
    """Who writes: ``host:pid``, kept on every outcome row."""

    # -- what a backend supplies -----------------------------------------------------------
    def _rows(self, statement: str, params: Sequence[Any] = ()) -> list[Row]:
        """Run one statement (``?`` placeholders) and return its rows."""
        raise NotImplementedError

    def _many(self, statement: str, params: Sequence[Sequence[Any]]) -> None:
        """Run one statement once per parameter row."""
        raise NotImplementedError

    def _tx(self) -> AbstractContextManager[None]:
        """One write transaction: committed on exit, rolled back on any exception."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def _exclude_catalog_writers(self) -> None:
        """Inside a sync's transaction: wait until no other writer is syncing the catalog."""

    def _catalog_changed(self, version: int) -> None:
        """Inside a sync's transaction: tell other replicas (on commit) what changed."""

    def _meta_changed(self, keys: Sequence[str]) -> None:
        """Inside a metadata write's transaction: tell other replicas (on commit)."""

    @contextmanager
    def sync_lock(self) -> Iterator[None]:
        """Held around a whole index build: replicas building the same catalog take turns, so
        the second one finds every vector in the store and embeds nothing (SQLite: one
        process)."""
        yield

    # -- lifecycle --------------------------------------------------------------------------
    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _migrate(self, where: str) -> None:
        """Bring the schema to :data:`sql.SCHEMA_VERSION` (call inside a transaction)."""
        have = self._schema_version(where)
        if have > sql.SCHEMA_VERSION:
            raise StoreError(
                f"{where}: store format {have}, this toolroute reads up to"
                f" {sql.SCHEMA_VERSION}; upgrade toolroute or use another store"
            )
        for step in range(have, sql.SCHEMA_VERSION):
            for statement in sql.migration(step, self.dialect):
                self._rows(statement)
        if have != sql.SCHEMA_VERSION:
            self._rows(sql.PUT_META, ("schema_version", str(sql.SCHEMA_VERSION)))

    def _schema_version(self, where: str) -> int:
        """Applied migrations: 0 for an empty database; stores of before the migrations list
        carry ``meta.format = 1`` (= version 1)."""
        if not self._has_meta_table():
            return 0
        version = self._rows(sql.GET_META, ("schema_version",))
        if version:
            return int(version[0][0])
        legacy = self._rows(sql.GET_META, ("format",))
        if not legacy or legacy[0][0] == "1":
            return 1
        raise StoreError(
            f"{where}: store format {legacy[0][0]}, this toolroute reads up to"
            f" {sql.SCHEMA_VERSION}; use a new --store directory"
        )

    def _has_meta_table(self) -> bool:
        raise NotImplementedError

    # -- metadata ---------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        rows = self._rows(sql.GET_META, (key,))
        return None if not rows else str(rows[0][0])

    def set_meta(self, items: Mapping[str, str]) -> None:
        with self._tx():
            self._many(sql.PUT_META, list(items.items()))
            self._meta_changed(list(items))
        note_meta_write(self.directory)  # gateways in this process see it at once

    # -- catalog ----------------------------------------------------------------------------
    def tool_hashes(self) -> dict[ToolKey, str]:
        return {(s, n): h for s, n, h in self._rows(sql.TOOL_HASHES)}

    def catalog_version(self) -> int:
        """Bumped by every sync that changes the stored catalog (0: never synced)."""
        return int(self.get_meta("catalog_version") or 0)

    def sync_catalog(self, catalog: Catalog, *, digest: str | None = None) -> SyncReport:
        """Make the stored catalog equal to ``catalog``, touching only what changed;
        ``digest`` is ``catalog_digest(catalog)`` when the caller has it already."""
        new = {t.key: t for t in catalog.tools()}
        position = {t.key: i for i, t in enumerate(catalog.tools())}
        if digest is None:
            digest = catalog_digest(catalog)
        with self._tx():
            self._exclude_catalog_writers()
            if self.get_meta("catalog_digest") == digest:  # the stored catalog is this one
                return SyncReport(0, 0, 0, len(new), frozenset())
            old = self.tool_hashes()  # read under the lock: concurrent syncs converge
            added = [k for k in new if k not in old]
            updated = [k for k in new if k in old and old[k] != new[k].hash]
            removed = [k for k in old if k not in new]
            if self.get_meta("catalog_digest") != digest:
                self._rows(sql.DELETE_SERVERS)
                self._many(
                    sql.INSERT_SERVER,
                    [
                        (s.id, i, s.name, s.description, json.dumps(server_extra(s)))
                        for i, s in enumerate(catalog.servers)
                    ],
                )
                self._many(sql.DELETE_TOOL, removed)
                self._many(
                    sql.UPSERT_TOOL,
                    [
                        (
                            t.server,
                            t.name,
                            position[t.key],
                            t.description,
                            json.dumps(t.input_schema, sort_keys=True),
                            t.hash,
                            json.dumps(tool_extra(t)),
                        )
                        for t in new.values()
                    ],
                )
                version = self.catalog_version() + 1
                self._many(
                    sql.PUT_META, [("catalog_version", str(version)), ("catalog_digest", digest)]
                )
                self._catalog_changed(version)
        return SyncReport(
            added=len(added),
            updated=len(updated),
            removed=len(removed),
            unchanged=len(new) - len(added) - len(updated),
            changed_keys=frozenset(added) | frozenset(updated),
        )

    def load_catalog(self) -> Catalog:
        tools: dict[str, list[Tool]] = {}
        for server, name, desc, schema, extra in self._rows(sql.LOAD_TOOLS):
            tools.setdefault(server, []).append(
                Tool(
                    server=server,
                    name=name,
                    description=desc,
                    schema_json=schema if isinstance(schema, str) else json.dumps(schema),
                    **json.loads(extra),
                )
            )
        servers = [
            Server(
                id=sid,
                name=name,
                description=desc,
                tools=tuple(tools.get(sid, ())),
                **json.loads(extra),
            )
            for sid, name, desc, extra in self._rows(sql.LOAD_SERVERS)
        ]
        return Catalog(servers=tuple(servers))

    # -- embeddings -------------------------------------------------------------------------
    def get_vectors(self, model: str, keys: Iterable[str], dim: int) -> dict[str, Matrix]:
        out: dict[str, Matrix] = {}
        for chunk in chunks(list(dict.fromkeys(keys)), 900):  # SQLite's bound-parameter limit
            statement = sql.GET_VECTORS.format(marks=",".join("?" * len(chunk)))
            for k, blob in self._rows(statement, (model, *chunk)):
                vec = np.frombuffer(bytes(blob), dtype=np.float32)
                if vec.shape[0] == dim:
                    out[k] = vec
        return out

    def put_vectors(self, model: str, items: Mapping[str, Matrix]) -> None:
        rows = [(model, k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()]
        with self._tx():
            self._many(sql.PUT_VECTOR, rows)

    # -- online statistics ------------------------------------------------------------------
    def record_outcome(
        self,
        outcome: Outcome,
        server: ServerStats,
        tool: ToolStats,
        smoothing: Smoothing | None = None,
    ) -> tuple[ServerStats, ToolStats]:
        """Append one executed call and fold it into the stored statistics, atomically.

        ``server`` and ``tool`` are the states after this outcome as the caller computed them
        from its priors: stored as they are when the store has no row yet. Otherwise eq. 8 is
        applied to the stored row, in SQL, so the result includes every other replica's calls.
        Returns the stored states (what the caller should route with from now on).
        """
        return self._fold(outcome, server, tool, smoothing or DEFAULT_SMOOTHING)

    def _fold_in_sql(
        self, outcome: Outcome, server: ServerStats, tool: ToolStats, lam: Smoothing
    ) -> tuple[ServerStats, ToolStats]:
        """Eq. 8 on the stored rows, in SQL."""
        y = 1.0 if outcome.success else 0.0
        fail = 1.0 if outcome.server_failed else 0.0
        lat = outcome.latency_s
        server_params = (
            outcome.server,
            *columns(server),  # the columns in the dataclass's order, as read back below
            *(lam.rate, lam.rate, y),
            *(lam.variance, lam.variance, y, y),
            *(lam.fail, lam.fail, fail),
            *(lam.latency, lam.latency, lat),
        )
        tool_params = (
            outcome.server,
            outcome.tool,
            *columns(tool),
            *(lam.rate, lam.rate, y),
            *(lam.latency, lam.latency, lat),
        )
        row = self._write_outcome(server_params, tool_params, self._outcome_row(outcome))
        return (
            ServerStats(row[0], row[1], row[2], row[3], int(row[4])),
            ToolStats(success=row[5], latency_s=row[6], calls=int(row[7])),
        )

    _fold = _fold_in_sql
    """How :meth:`record_outcome` updates the stored rows (PostgreSQL may take row locks)."""

    def _write_outcome(self, server: Row, tool: Row, outcome: Row) -> Row:
        """The stored server and tool states after the update, as one row."""
        with self._tx():
            s = self._rows(sql.UPSERT_SERVER_STATS, server)[0]
            t = self._rows(sql.UPSERT_TOOL_STATS, tool)[0]
            # After the two row locks: per tool, outcome ids follow the order of the updates.
            self._rows(sql.INSERT_OUTCOME, outcome)
        return (*s, *t)

    def _outcome_row(self, outcome: Outcome) -> Row:
        return (
            time.time(),
            outcome.server,
            outcome.tool,
            int(outcome.success),
            outcome.latency_s,
            int(outcome.server_failed),
            self.replica,
        )

    def load_stats(self) -> tuple[dict[str, ServerStats], dict[ToolKey, ToolStats]]:
        servers = {
            sid: ServerStats(success=r, variance=v, fail_prob=p, latency_s=lat, calls=int(n))
            for sid, r, v, p, lat, n in self._rows(sql.LOAD_SERVER_STATS)
        }
        tools = {
            (sid, name): ToolStats(success=r, latency_s=lat, calls=int(n))
            for sid, name, r, lat, n in self._rows(sql.LOAD_TOOL_STATS)
        }
        return servers, tools

    def outcome_counts(self) -> list[tuple[str, str, int, int, int]]:
        """Per (server, tool): successes, failures, post-accept server failures."""
        return [
            (srv, tool, int(ok), int(bad), int(crash))
            for srv, tool, ok, bad, crash in self._rows(sql.OUTCOME_COUNTS)
        ]

    def outcome_count(self) -> int:
        return int(self._rows(sql.OUTCOME_COUNT)[0][0])

    def last_outcome_id(self) -> int:
        """Id of the newest outcome (0: none): a replica polls it to see others' calls."""
        return int(self._rows(sql.LAST_OUTCOME)[0][0])

    # -- synthetic questions (ScaleMCP §4.1.1), cached by tool hash -------------------------
    def get_questions(self, generator: str, tool_hash: str) -> list[str] | None:
        rows = self._rows(sql.GET_QUESTIONS, (generator, tool_hash))
        return None if not rows else list(json.loads(rows[0][0]))

    def put_questions(self, generator: str, tool_hash: str, questions: list[str]) -> None:
        with self._tx():
            self._rows(
                sql.PUT_QUESTIONS,
                (tool_hash, generator, json.dumps(questions, ensure_ascii=False)),
            )

    # -- routing events (Tool Attention §5.7) -----------------------------------------------
    events_keep: int = 100_000
    """Routing events kept (the newest); older ones are pruned every :data:`PRUNE_EVERY`."""
    events_max_age_s: float = 30 * 86400.0
    """Routing events older than this (their ``at``) are pruned too."""
    _events_since_prune: int = 0

    def record_event(self, event_json: str) -> None:
        """Append one routing event, as JSON; every :data:`PRUNE_EVERY` events, prune the
        table to :attr:`events_keep` rows and :attr:`events_max_age_s` (an audit trail must
        not grow until a page that reads it, or the disk, gives out)."""
        self._insert_event(event_json)
        self._events_since_prune += 1
        if self._events_since_prune >= PRUNE_EVERY:
            self._events_since_prune = 0
            self.prune_events(self.events_keep, self.events_max_age_s)

    def _insert_event(self, event_json: str) -> None:
        with self._tx():
            self._rows(sql.INSERT_EVENT, (event_json,))

    def events(self, last: int | None = None) -> list[str]:
        """Routing events, oldest first; only the newest ``last`` when given (one indexed
        read, whatever the table holds)."""
        if last is None:
            return [e for (e,) in self._rows(sql.EVENTS)]
        return [e for (e,) in self._rows(sql.LAST_EVENTS, (max(0, last),))][::-1]

    def prune_events(self, keep: int, max_age_s: float) -> int:
        """Delete all but the newest ``keep`` events and those older than ``max_age_s``
        (scanned from the oldest in batches; ids grow with time). Returns how many went."""
        gone = 0
        with self._tx():
            rows = self._rows(sql.EVENT_ID_FROM_NEWEST, (max(0, keep),))
            if rows:
                gone += self._delete_events_upto(int(rows[0][0]))
        cutoff = time.time() - max_age_s
        for _ in range(PRUNE_BATCHES):  # bounded: the rest goes at the next prune
            upto, young = None, False
            for event_id, event in self._rows(sql.OLDEST_EVENTS, (PRUNE_BATCH,)):
                try:
                    at = float(json.loads(event).get("at", 0))
                except (ValueError, TypeError, AttributeError):
                    at = 0.0  # unreadable: nothing worth keeping
                if at >= cutoff:
                    young = True
                    break
                upto = int(event_id)
            if upto is not None:
                with self._tx():
                    gone += self._delete_events_upto(upto)
            if young or upto is None:
                break
        return gone

    def _delete_events_upto(self, event_id: int) -> int:
        count = int(self._rows(sql.COUNT_EVENTS_UPTO, (event_id,))[0][0])
        self._rows(sql.DELETE_EVENTS_UPTO, (event_id,))
        return count

    def promote(self, client: str, names: Iterable[str], expires: float) -> None:
        """Record that find_tools returned ``names`` to ``client``, valid until ``expires``
        (epoch s); expired promotions of every client are dropped in the same transaction."""
        rows = [(client, n, expires) for n in names]
        if not rows:
            return
        with self._tx():
            self._rows(sql.PRUNE_PROMOTIONS, (time.time(),))
            self._many(sql.UPSERT_PROMOTION, rows)

    def is_promoted(self, client: str, name: str) -> bool:
        """Whether find_tools returned ``name`` to ``client`` and the promotion is still valid."""
        return bool(self._rows(sql.IS_PROMOTED, (client, name, time.time())))

    def promotions(self, client: str, limit: int = 1000) -> list[str]:
        """The names find_tools returned to ``client`` whose promotion is still valid, by
        name (at most ``limit``)."""
        return [str(r[0]) for r in self._rows(sql.PROMOTIONS_OF, (client, time.time(), limit))]

    # -- usage memory (toolroute/learn/memory.py): shared by replicas, bounded --------------------
    def remember_use(
        self,
        client: str,
        query_hash: str,
        key: ToolKey,
        vector: Matrix,
        success: bool,
        at: float,
        *,
        skipped: bool = False,
        capacity: int = 20_000,
    ) -> None:
        """Add one call (or, ``skipped``, one abandoned showing) to its (client, query, tool)
        row, then drop rows beyond ``capacity``."""
        blob = np.asarray(vector, dtype=np.float32).tobytes()
        ok = 1.0 if success and not skipped else 0.0
        bad = 0.0 if success or skipped else 1.0
        skip = 1.0 if skipped else 0.0
        with self._tx():
            self._rows(sql.REMEMBER_USE, (client, query_hash, *key, blob, ok, bad, skip, at))
            self._rows(sql.PRUNE_MEMORY, (capacity - 1,))

    def load_memory(self) -> list[MemoryRow]:
        return [
            MemoryRow(
                client,
                query,
                server,
                tool,
                np.frombuffer(bytes(vec), dtype=np.float32).astype(np.float64),
                float(ok),
                float(bad),
                float(at),
                float(skips),
            )
            for client, query, server, tool, vec, ok, bad, skips, at in self._rows(sql.LOAD_MEMORY)
        ]

    def clear_memory(self, client: str | None = None) -> int:
        """Forget every client's rows (or one's); returns how many went."""
        with self._tx():
            before = int(self._rows(sql.COUNT_MEMORY)[0][0])
            if client is None:
                self._rows(sql.CLEAR_MEMORY)
            else:
                self._rows(sql.CLEAR_CLIENT_MEMORY, (client,))
            after = int(self._rows(sql.COUNT_MEMORY)[0][0])
        return before - after

    # -- [limits] budgets (gateway/calls/_limits.py): USD spent per client per UTC day --------
    def charge(
        self, client: str, day: str, usd: float, limit: float | None = None
    ) -> tuple[bool, float]:
        """Add ``usd`` (negative: a refund) to ``client``'s spend of ``day``, unless that
        would take it past ``limit``; one transaction, so concurrent charges (replicas too)
        never pass it together. Returns whether it was charged and the day's total after."""
        calls = 1 if usd >= 0 else -1
        with self._tx():
            spent = float(self._rows(sql.CHARGE, (client, day, usd, calls))[0][0])
            if limit is not None and spent > limit + 1e-9:  # over: taken back in the same tx
                spent = float(self._rows(sql.CHARGE, (client, day, -usd, -calls))[0][0])
                return False, spent
        return True, spent

    def spent(self, client: str, day: str) -> tuple[float, int]:
        """``client``'s spend (USD) and charged calls on ``day`` (``YYYY-MM-DD``, UTC)."""
        rows = self._rows(sql.SPENT, (client, day))
        return (float(rows[0][0]), int(rows[0][1])) if rows else (0.0, 0)

    def prune_spend(self, before_day: str) -> None:
        """Forget the spend of every day before ``before_day``."""
        with self._tx():
            self._rows(sql.PRUNE_SPEND, (before_day,))

    # -- OAuth credentials of url servers (downstream/oauth.py), encrypted by the caller -------
    def get_oauth(self, server: str, url: str) -> OAuthRow | None:
        rows = self._rows(sql.GET_OAUTH, (server, url))
        if not rows:
            return None
        client, tokens, expires_at, changed_at = rows[0]
        return OAuthRow(
            None if client is None else bytes(client),
            None if tokens is None else bytes(tokens),
            None if expires_at is None else float(expires_at),
            float(changed_at),
        )

    def put_oauth_client(self, server: str, url: str, client: bytes) -> None:
        with self._tx():
            self._rows(sql.PUT_OAUTH_CLIENT, (server, url, client, time.time()))

    def put_oauth_tokens(
        self, server: str, url: str, tokens: bytes | None, expires_at: float | None
    ) -> None:
        """Store (or, ``tokens`` None, forget) the tokens of ``server`` at ``url``."""
        with self._tx():
            if tokens is None:
                self._rows(sql.CLEAR_OAUTH_TOKENS, (time.time(), server, url))
            else:
                self._rows(sql.PUT_OAUTH_TOKENS, (server, url, tokens, expires_at, time.time()))

    def delete_oauth(self, server: str) -> None:
        """Forget every registration and token of ``server`` (at any URL)."""
        with self._tx():
            self._rows(sql.DELETE_OAUTH, (server,))


@dataclass(frozen=True, slots=True)
class OAuthRow:
    """The stored OAuth credentials of one url server, as encrypted blobs (downstream/oauth.py
    holds the key); ``changed_at`` moves with every write, so a gateway sees a new sign-in."""

    client: bytes | None
    tokens: bytes | None
    expires_at: float | None
    changed_at: float


def columns(row: Any) -> tuple[Any, ...]:
    """A stats dataclass's fields in order, as the store's columns: ``astuple`` without its
    deep copy (this runs for every recorded call)."""
    return tuple(getattr(row, f.name) for f in fields(row))


def replica_name() -> str:
    """``host:pid`` of this process: which replica wrote an outcome."""
    return f"{socket.gethostname()}:{os.getpid()}"
