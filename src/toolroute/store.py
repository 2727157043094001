"""The embedded store: one SQLite file (WAL) holding catalog, tool hashes, embeddings, metadata.

Tables (format version in ``meta.format``):
- ``servers``/``tools``: the indexed catalog; ``tools.hash`` is SHA-256 of name + description +
  schema (seed 001, Alg. 1), the key of incremental re-indexing;
- ``embeddings``: vectors keyed by (model id, SHA-256 of the text): an unchanged text is never
  embedded twice, whatever tool or catalog it came from;
- ``meta``: key/value index metadata (embedder, document settings, build time);
- ``outcomes``, ``server_stats``, ``tool_stats``: every executed call and the online statistics
  it produced (EHRR eq. 8), written together in one transaction.

Every write happens inside one transaction, so a crash leaves the previous state intact.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from toolroute.catalog.models import Catalog, Server, Tool, ToolKey
from toolroute.economics import ServerStats, ToolStats
from toolroute.embed.base import Matrix
from toolroute.errors import StoreError
from toolroute.stats import Outcome

__all__ = ["FORMAT_VERSION", "Store", "SyncReport", "default_store_dir"]

FORMAT_VERSION = "1"
DB_NAME = "toolroute.db"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS servers (
    id TEXT PRIMARY KEY, position INTEGER NOT NULL, name TEXT NOT NULL,
    description TEXT NOT NULL, extra TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tools (
    server TEXT NOT NULL, name TEXT NOT NULL, position INTEGER NOT NULL,
    description TEXT NOT NULL, input_schema TEXT NOT NULL, hash TEXT NOT NULL,
    extra TEXT NOT NULL, PRIMARY KEY (server, name)
);
CREATE TABLE IF NOT EXISTS outcomes (
    id INTEGER PRIMARY KEY, at REAL NOT NULL, server TEXT NOT NULL, tool TEXT NOT NULL,
    success INTEGER NOT NULL, latency_s REAL NOT NULL, server_failed INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS server_stats (
    server TEXT PRIMARY KEY, success REAL NOT NULL, variance REAL NOT NULL,
    fail_prob REAL NOT NULL, latency_s REAL NOT NULL, calls INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS tool_stats (
    server TEXT NOT NULL, tool TEXT NOT NULL, success REAL NOT NULL, latency_s REAL NOT NULL,
    calls INTEGER NOT NULL, PRIMARY KEY (server, tool)
);
CREATE TABLE IF NOT EXISTS routing_events (
    id INTEGER PRIMARY KEY, event TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS questions (
    tool_hash TEXT NOT NULL, generator TEXT NOT NULL, questions TEXT NOT NULL,
    PRIMARY KEY (tool_hash, generator)
);
CREATE TABLE IF NOT EXISTS embeddings (
    model TEXT NOT NULL, text_hash TEXT NOT NULL, vector BLOB NOT NULL,
    PRIMARY KEY (model, text_hash)
) WITHOUT ROWID;
"""


def default_store_dir() -> Path:
    """Per-user data dir (e.g. ``~/.local/share/toolroute``); ``TOOLROUTE_STORE`` overrides it."""
    import os

    from platformdirs import user_data_dir

    env = os.environ.get("TOOLROUTE_STORE")
    return Path(env) if env else Path(user_data_dir("toolroute", appauthor=False))


@dataclass(frozen=True, slots=True)
class SyncReport:
    """What a catalog sync changed (seed 001, Alg. 1: create/update/delete what changed)."""

    added: int
    updated: int
    removed: int
    unchanged: int
    changed_keys: frozenset[ToolKey]


class Store:
    """SQLite store in ``directory/toolroute.db``; use as a context manager or call close()."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.directory / DB_NAME, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            with self._tx():
                for stmt in filter(str.strip, _SCHEMA.split(";")):
                    self._db.execute(stmt)
                row = self._db.execute("SELECT value FROM meta WHERE key='format'").fetchone()
                if row is None:
                    self._db.execute("INSERT INTO meta VALUES ('format', ?)", (FORMAT_VERSION,))
                elif row[0] != FORMAT_VERSION:
                    raise StoreError(
                        f"{self.directory / DB_NAME}: store format {row[0]}, this toolroute "
                        f"reads {FORMAT_VERSION}; use a new --store directory"
                    )
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{self.directory / DB_NAME}: cannot open store: {e}") from None
        except OSError as e:
            raise StoreError(f"{self.directory}: cannot create store directory: {e}") from None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    # -- metadata -------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, items: Mapping[str, str]) -> None:
        with self._tx():
            self._db.executemany(
                "INSERT INTO meta VALUES (?, ?)"
                " ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                list(items.items()),
            )

    # -- catalog --------------------------------------------------------------------------
    def tool_hashes(self) -> dict[ToolKey, str]:
        rows = self._db.execute("SELECT server, name, hash FROM tools")
        return {(s, n): h for s, n, h in rows}

    def sync_catalog(self, catalog: Catalog) -> SyncReport:
        """Make the stored catalog equal to ``catalog``, touching only what changed."""
        old = self.tool_hashes()
        new = {t.key: t for t in catalog.tools()}
        added = [k for k in new if k not in old]
        updated = [k for k in new if k in old and old[k] != new[k].hash]
        removed = [k for k in old if k not in new]
        position = {t.key: i for i, t in enumerate(catalog.tools())}
        with self._tx():
            self._db.execute("DELETE FROM servers")
            self._db.executemany(
                "INSERT INTO servers VALUES (?, ?, ?, ?, ?)",
                [
                    (s.id, i, s.name, s.description, json.dumps(_server_extra(s)))
                    for i, s in enumerate(catalog.servers)
                ],
            )
            self._db.executemany("DELETE FROM tools WHERE server=? AND name=?", removed)
            self._db.executemany(
                "INSERT INTO tools VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(server, name) DO UPDATE"
                " SET position=excluded.position, description=excluded.description,"
                " input_schema=excluded.input_schema, hash=excluded.hash, extra=excluded.extra",
                [
                    (
                        t.server,
                        t.name,
                        position[t.key],
                        t.description,
                        json.dumps(t.input_schema, sort_keys=True),
                        t.hash,
                        json.dumps(_tool_extra(t)),
                    )
                    for t in new.values()
                ],
            )
        return SyncReport(
            added=len(added),
            updated=len(updated),
            removed=len(removed),
            unchanged=len(new) - len(added) - len(updated),
            changed_keys=frozenset(added) | frozenset(updated),
        )

    def load_catalog(self) -> Catalog:
        tools: dict[str, list[Tool]] = {}
        for server, name, desc, schema, extra in self._db.execute(
            "SELECT server, name, description, input_schema, extra FROM tools ORDER BY position"
        ):
            tools.setdefault(server, []).append(
                Tool(
                    server=server,
                    name=name,
                    description=desc,
                    input_schema=json.loads(schema),
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
            for sid, name, desc, extra in self._db.execute(
                "SELECT id, name, description, extra FROM servers ORDER BY position"
            )
        ]
        return Catalog(servers=tuple(servers))

    # -- embeddings -----------------------------------------------------------------------
    def get_vectors(self, model: str, keys: Iterable[str], dim: int) -> dict[str, Matrix]:
        wanted = list(dict.fromkeys(keys))
        out: dict[str, Matrix] = {}
        for start in range(0, len(wanted), 900):  # SQLite's bound-parameter limit
            chunk = wanted[start : start + 900]
            marks = ",".join("?" * len(chunk))
            for k, blob in self._db.execute(
                "SELECT text_hash, vector FROM embeddings"
                f" WHERE model=? AND text_hash IN ({marks})",
                (model, *chunk),
            ):
                vec = np.frombuffer(blob, dtype=np.float32)
                if vec.shape[0] == dim:
                    out[k] = vec
        return out

    def put_vectors(self, model: str, items: Mapping[str, Matrix]) -> None:
        with self._tx():
            self._db.executemany(
                "INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?)",
                [(model, k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()],
            )

    # -- online statistics ----------------------------------------------------------------
    def record_outcome(self, outcome: Outcome, server: ServerStats, tool: ToolStats) -> None:
        """Append one executed call and the statistics it produced, atomically."""
        with self._tx():
            self._db.execute(
                "INSERT INTO outcomes (at, server, tool, success, latency_s, server_failed)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (
                    time.time(),
                    outcome.server,
                    outcome.tool,
                    int(outcome.success),
                    outcome.latency_s,
                    int(outcome.server_failed),
                ),
            )
            self._db.execute(
                "INSERT OR REPLACE INTO server_stats VALUES (?, ?, ?, ?, ?, ?)",
                (
                    outcome.server,
                    server.success,
                    server.variance,
                    server.fail_prob,
                    server.latency_s,
                    server.calls,
                ),
            )
            self._db.execute(
                "INSERT OR REPLACE INTO tool_stats VALUES (?, ?, ?, ?, ?)",
                (outcome.server, outcome.tool, tool.success, tool.latency_s, tool.calls),
            )

    def load_stats(self) -> tuple[dict[str, ServerStats], dict[ToolKey, ToolStats]]:
        servers = {
            sid: ServerStats(success=r, variance=v, fail_prob=p, latency_s=lat, calls=n)
            for sid, r, v, p, lat, n in self._db.execute("SELECT * FROM server_stats")
        }
        tools = {
            (sid, name): ToolStats(success=r, latency_s=lat, calls=n)
            for sid, name, r, lat, n in self._db.execute("SELECT * FROM tool_stats")
        }
        return servers, tools

    # -- synthetic questions (seed 001 §4.1.1), cached by tool hash ------------------------
    def get_questions(self, generator: str, tool_hash: str) -> list[str] | None:
        row = self._db.execute(
            "SELECT questions FROM questions WHERE generator=? AND tool_hash=?",
            (generator, tool_hash),
        ).fetchone()
        return None if row is None else list(json.loads(row[0]))

    def put_questions(self, generator: str, tool_hash: str, questions: list[str]) -> None:
        with self._tx():
            self._db.execute(
                "INSERT OR REPLACE INTO questions VALUES (?, ?, ?)",
                (tool_hash, generator, json.dumps(questions, ensure_ascii=False)),
            )

    def record_event(self, event_json: str) -> None:
        """Append one routing event (seed 002 §5.7), as JSON."""
        with self._tx():
            self._db.execute("INSERT INTO routing_events (event) VALUES (?)", (event_json,))

    def events(self) -> list[str]:
        return [e for (e,) in self._db.execute("SELECT event FROM routing_events ORDER BY id")]

    def outcome_counts(self) -> list[tuple[str, str, int, int, int]]:
        """Per (server, tool): successes, failures, post-accept server failures."""
        rows = self._db.execute(
            "SELECT server, tool, sum(success), sum(1 - success), sum(server_failed)"
            " FROM outcomes GROUP BY server, tool"
        )
        return [(srv, tool, int(ok), int(bad), int(crash)) for srv, tool, ok, bad, crash in rows]

    def outcome_count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM outcomes").fetchone()[0])


def _tool_extra(t: Tool) -> dict[str, float]:
    fields = {"price": t.price, "latency_s": t.latency_s, "success_rate": t.success_rate}
    return {k: v for k, v in fields.items() if v is not None}


def _server_extra(s: Server) -> dict[str, float]:
    fields = {
        "ask_cost": s.ask_cost,
        "connect_latency_s": s.connect_latency_s,
        "failure_rate": s.failure_rate,
    }
    return {k: v for k, v in fields.items() if v is not None}
