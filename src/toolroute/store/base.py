"""The store interface, what a sync reports, and where a store lives (a directory or a URL).

A store target is either a directory (the embedded SQLite store, the default) or a
``postgresql://`` URL (the shared store of several gateway replicas). A URL is never taken for
a path: any ``scheme://`` other than PostgreSQL's is refused with one clear line.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from platformdirs import user_data_dir

from toolroute.catalog.models import Catalog, Server, Tool, ToolKey
from toolroute.embed.base import Matrix
from toolroute.errors import StoreError
from toolroute.learn.estimate import ServerStats, ToolStats
from toolroute.stats import ClosableSink

__all__ = [
    "PG_SCHEMES",
    "StoreInterface",
    "StoreTarget",
    "SyncReport",
    "OWNER_KEY",
    "catalog_digest",
    "config_key",
    "config_store_dir",
    "default_store_dir",
    "default_store_target",
    "is_store_url",
    "meta_writes",
    "note_meta_write",
    "parse_store_target",
    "open_private",
    "private_dir",
    "private_tree",
    "redact_url",
]

OWNER_KEY = "config"
"""Meta key naming the config file whose catalog a store holds (see ``cli.common``)."""

StoreTarget = str | Path
"""A store directory (SQLite) or a ``postgresql://`` URL."""
_META_WRITES: dict[str, int] = {}
_META_LOCK = threading.Lock()


def note_meta_write(directory: Path) -> None:
    """Count (in this process) one metadata write to the store whose local directory is
    ``directory``: the in-process half of :class:`toolroute.gateway.ops.follow.StoreWatch`."""
    with _META_LOCK:
        _META_WRITES[str(directory)] = _META_WRITES.get(str(directory), 0) + 1


def meta_writes(directory: Path) -> int:
    """Metadata writes to that store made by this process so far."""
    return _META_WRITES.get(str(directory), 0)


PG_SCHEMES = ("postgresql", "postgres")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def is_store_url(target: StoreTarget) -> bool:
    """True for a ``postgresql://`` (or ``postgres://``) URL."""
    m = _SCHEME.match(str(target)) if isinstance(target, str) else None
    return m is not None and m.group(1).lower() in PG_SCHEMES


def parse_store_target(value: str) -> StoreTarget:
    """``--store``, ``store =`` or ``TOOLROUTE_STORE``: a PostgreSQL URL as is, else a path."""
    m = _SCHEME.match(value)
    if m is not None:
        if m.group(1).lower() not in PG_SCHEMES:
            raise StoreError(
                f"store {redact_url(value)}: unsupported URL scheme {m.group(1)!r}; give a"
                " directory or a postgresql:// URL"
            )
        return value
    return Path(value).expanduser()


def redact_url(url: str) -> str:
    """``url`` without its password, for messages and logs."""
    return re.sub(r"(://[^:/@]*):[^@/]*@", r"\1:***@", url)


def default_store_target() -> StoreTarget:
    """``TOOLROUTE_STORE`` (a directory or a URL), else the per-user data dir."""
    env = os.environ.get("TOOLROUTE_STORE")
    return parse_store_target(env) if env else default_store_dir()


def config_key(config_path: Path) -> Path:
    """The path a config is known by: its folder's real path (``..``, symlinked folders and
    the working directory resolved) and its file name as given, so every way of reaching one
    file names one config, while a config file that is itself a symlink swapped to a new
    target stays the same config."""
    path = Path(config_path).expanduser()
    if path.name in ("", ".", ".."):
        return Path(os.path.realpath(path))
    return Path(os.path.realpath(path.parent)) / path.name


def config_store_dir(root: Path, config_path: Path) -> Path:
    """The store of one config's gateway under a data directory ``root``: one folder per
    config file (its name and a digest of its path), so configs sharing a root never see
    each other's catalog."""
    digest = hashlib.sha256(str(config_path).encode()).hexdigest()[:12]
    return root / "gateways" / f"{config_path.stem}-{digest}"


def private_dir(path: Path) -> None:
    """Create ``path`` and any missing parents with mode 0700 (only the owner may list or
    enter them); folders that exist are left as they are."""
    missing = []
    for p in (path, *path.parents):
        if p.exists():
            break
        missing.append(p)
    for p in reversed(missing):
        with suppress(FileExistsError):  # made meanwhile by another process
            p.mkdir(mode=0o700)


def private_tree(root: Path) -> None:
    """Give ``root`` and everything under it owner-only modes (folders 0700, files 0600),
    whatever the umask they were written under: a folder built aside (a snapshot, derived
    arrays) gets them before it is renamed into the store, so it is never readable by others."""
    for folder, _, files in os.walk(root):
        os.chmod(folder, 0o700)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o600)


def open_private(path: Path, flags: int) -> int:
    """``os.open`` of ``path``, created with mode 0600 when missing whatever the umask (a
    file that exists keeps the mode its owner gave it)."""
    return os.open(path, flags | os.O_CREAT, 0o600)


def default_store_dir() -> Path:
    """Per-user data dir (e.g. ``~/.local/share/toolroute``); ``TOOLROUTE_STORE`` overrides it
    when it names a directory (a URL names no directory: the per-user dir is kept)."""
    env = os.environ.get("TOOLROUTE_STORE")
    if env and not is_store_url(env):
        return Path(env).expanduser()
    return Path(user_data_dir("toolroute", appauthor=False))


@dataclass(frozen=True, slots=True)
class SyncReport:
    """What a catalog sync changed (ScaleMCP Alg. 1: create/update/delete what changed)."""

    added: int
    updated: int
    removed: int
    unchanged: int
    changed_keys: frozenset[ToolKey]

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)


class StoreInterface(ClosableSink, Protocol):
    """What the router, the stats book and the gateway need of a store (both backends): the
    stats book's sink (:class:`~toolroute.stats.ClosableSink`: ``record_outcome``, ``close``)
    and the rest below."""

    directory: Path
    """A local directory for per-process files (the LLM answer cache)."""
    shared: bool
    """True when other gateway replicas may write the same store (PostgreSQL)."""

    def get_meta(self, key: str) -> str | None: ...
    def set_meta(self, items: Mapping[str, str]) -> None: ...
    def tool_hashes(self) -> dict[ToolKey, str]: ...
    def sync_lock(self) -> AbstractContextManager[None]: ...
    def sync_catalog(self, catalog: Catalog, *, digest: str | None = None) -> SyncReport: ...
    def load_catalog(self) -> Catalog: ...
    def catalog_version(self) -> int: ...
    def get_vectors(self, model: str, keys: Iterable[str], dim: int) -> dict[str, Matrix]: ...
    def put_vectors(self, model: str, items: Mapping[str, Matrix]) -> None: ...
    def load_stats(self) -> tuple[dict[str, ServerStats], dict[ToolKey, ToolStats]]: ...
    def outcome_counts(self) -> list[tuple[str, str, int, int, int]]: ...
    def outcome_count(self) -> int: ...
    def last_outcome_id(self) -> int: ...
    def get_questions(self, generator: str, tool_hash: str) -> list[str] | None: ...
    def put_questions(self, generator: str, tool_hash: str, questions: list[str]) -> None: ...
    def record_event(self, event_json: str) -> None: ...
    def events(self, last: int | None = None) -> list[str]: ...
    def prune_events(self, keep: int, max_age_s: float) -> int: ...
    def promote(self, client: str, names: Iterable[str], expires: float) -> None: ...
    def is_promoted(self, client: str, name: str) -> bool: ...
    def promotions(self, client: str, limit: int = 1000) -> list[str]: ...
    def charge(
        self, client: str, day: str, usd: float, limit: float | None = None
    ) -> tuple[bool, float]: ...
    def spent(self, client: str, day: str) -> tuple[float, int]: ...
    def prune_spend(self, before_day: str) -> None: ...


def catalog_digest(catalog: Catalog) -> str:
    """SHA-256 of everything a sync stores (servers in order, tools in order with their hash):
    equal digests mean a replica's in-memory catalog is the stored one."""
    h = hashlib.sha256()
    for s in catalog.servers:
        h.update(json.dumps([s.id, s.name, s.description, server_extra(s)]).encode())
        for t in s.tools:
            h.update(json.dumps([t.server, t.name, t.hash, tool_extra(t)]).encode())
    return h.hexdigest()


def tool_extra(t: Tool) -> dict[str, float | str]:
    fields = {"price": t.price, "latency_s": t.latency_s, "success_rate": t.success_rate}
    extra: dict[str, float | str] = {k: v for k, v in fields.items() if v is not None}
    if t.title:
        extra["title"] = t.title
    return extra


def server_extra(s: Server) -> dict[str, float]:
    fields = {
        "ask_cost": s.ask_cost,
        "connect_latency_s": s.connect_latency_s,
        "failure_rate": s.failure_rate,
    }
    return {k: v for k, v in fields.items() if v is not None}


def chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
