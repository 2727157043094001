"""The one error tree of toolroute.

    ToolrouteError
    ├── CatalogError        a catalog or queries file is missing or malformed
    ├── EmbedError          an embedding model cannot be loaded or called
    ├── StoreError          a store cannot be opened, reached, or is of a newer format
    ├── SearchIndexError    the index is empty, stale or asked for something it lacks
    └── ConfigError         a bad option value (unknown strategy, bad weights, k < 1)

Library code raises these; only ``toolroute.cli`` turns them into one line and exit code 2.
"""

from __future__ import annotations

__all__ = [
    "CatalogError",
    "ConfigError",
    "EmbedError",
    "SearchIndexError",
    "StoreError",
    "ToolrouteError",
]


class ToolrouteError(Exception):
    """Base of every error toolroute raises on purpose."""


class CatalogError(ToolrouteError):
    """A catalog or queries file is missing or malformed; the message names file and JSON path."""


class EmbedError(ToolrouteError):
    """An embedding model cannot be loaded, fails its checksum, or its endpoint fails."""


class StoreError(ToolrouteError):
    """The store cannot be opened, or it was written by an incompatible format version."""


class SearchIndexError(ToolrouteError):
    """The index cannot answer: empty, or built with another embedder."""


class ConfigError(ToolrouteError):
    """An option has a value toolroute cannot use."""
