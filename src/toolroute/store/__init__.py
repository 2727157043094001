"""The store: catalog, tool hashes, embeddings, online statistics and routing events.

``open_store(target)`` opens the embedded SQLite store of a directory (the default) or the
shared PostgreSQL store of a ``postgresql://`` URL, where several gateway replicas keep one catalog,
one embedding cache and one set of statistics. Both have the same tables (schema version in
``meta.schema_version``, forward migrations in :mod:`toolroute.store.sql`):

- ``servers``/``tools``: the indexed catalog; ``tools.hash`` is SHA-256 of name + description +
  schema, the key of incremental re-indexing (the auto-synchronisation of Alg. 1 of *ScaleMCP:
  Dynamic and Auto-Synchronizing Model Context Protocol Tools for LLM Agents*, ScaleMCP);
- ``embeddings``: vectors keyed by (model id, SHA-256 of the text): an unchanged text is never
  embedded twice, whatever tool, catalog or replica it came from;
- ``meta``: key/value metadata (embedder, document settings, catalog version and digest);
- ``outcomes`` (append-only), ``server_stats``, ``tool_stats``: every executed call and the
  online statistics it produced (EHRR eq. 8), written together in one transaction;
- ``routing_events``, ``questions``: routing audit events and cached synthetic questions;
- ``promotions``: which tools find_tools returned to which client, until when (the call gate
  across gateway processes and replicas: :mod:`toolroute.gateway.calls.access`).
"""

from __future__ import annotations

from typing import Any

from toolroute.errors import StoreError
from toolroute.store.base import (
    StoreInterface,
    StoreTarget,
    SyncReport,
    catalog_digest,
    default_store_dir,
    default_store_target,
    is_store_url,
    parse_store_target,
    redact_url,
)
from toolroute.store.common import Store
from toolroute.store.sql import SCHEMA_VERSION
from toolroute.store.sqlite import SqliteStore

__all__ = [
    "FORMAT_VERSION",
    "SCHEMA_VERSION",
    "Store",
    "StoreInterface",
    "StoreTarget",
    "SyncReport",
    "catalog_digest",
    "default_store_dir",
    "default_store_target",
    "is_store_url",
    "open_store",
    "parse_store_target",
    "redact_url",
]


def open_store(target: StoreTarget, **options: Any) -> Store:
    """The store of ``target``: :class:`~toolroute.store.sqlite.SqliteStore` for a directory,
    :class:`~toolroute.store.postgres.PostgresStore` for a ``postgresql://`` URL (``options``
    go to its constructor: ``stats_update``, ``connect_timeout_s``)."""
    if is_store_url(target):
        try:
            from toolroute.store.postgres import PostgresStore
        except ImportError:
            raise StoreError(
                "a postgresql:// store needs psycopg: pip install 'toolroute[postgres]'"
            ) from None
        return PostgresStore(str(target), **options)

    return SqliteStore(target, **options)


FORMAT_VERSION = str(SCHEMA_VERSION)
"""The schema version this toolroute writes, as text (kept for older callers)."""


def _satisfies_the_interface(store: Store) -> StoreInterface:
    """Never called: mypy checks here that both backends (one ``Store``) are a StoreInterface."""
    return store
