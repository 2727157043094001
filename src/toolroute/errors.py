"""The one error tree of toolroute.

    ToolrouteError
    ├── CatalogError        a catalog or queries file is missing or malformed
    ├── EmbedError          an embedding model cannot be loaded or called
    ├── StoreError          a store cannot be opened, reached, or is of a newer format
    ├── SearchIndexError    the index is empty, stale or asked for something it lacks
    ├── ConfigError         a bad option value (unknown strategy, bad weights, k < 1)
    └── RegistryError       an MCP registry cannot be reached or answered badly; an entry
                            that cannot be added as asked

Library code raises these; only ``toolroute.cli`` turns them into one line and exit code 2.

What an *agent* reads when the gateway refuses or fails a tool call is not an exception but an
``isError`` result whose JSON names one :class:`ErrorCode`; :func:`error_payload` builds it.
"""

from __future__ import annotations

import logging
import sqlite3
import sys
from enum import StrEnum
from typing import Any

__all__ = [
    "log_failure",
    "CatalogError",
    "ConfigError",
    "EmbedError",
    "RegistryError",
    "ErrorCode",
    "SearchIndexError",
    "StoreError",
    "ToolrouteError",
    "error_payload",
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


class RegistryError(ToolrouteError):
    """An MCP registry cannot be reached or answered badly (status, size, shape, time), or a
    server of it cannot be added as asked (not allow-listed, unpinned, a look-alike)."""


class ErrorCode(StrEnum):
    """The ``error`` of an ``isError`` tool result: what went wrong, for the agent to act on."""

    INVALID_ARGUMENTS = "invalid_arguments"
    INVALID_SCHEMA = "invalid_schema"
    """The tool's own input schema cannot be used (toolroute refuses the tool)."""
    UNKNOWN_TOOL = "unknown_tool"
    UNKNOWN_SERVER = "unknown_server"
    """An inventory (find_tools with ``server``) of a server the client cannot see."""
    TOOL_NOT_AVAILABLE = "tool_not_available"
    """The call gate: find_tools has not returned the tool to this session."""
    PRECONDITION_FAILED = "precondition_failed"
    QUARANTINED = "quarantined"
    CAPABILITY_LIMIT = "capability_limit"
    STORE_FAILED = "store_failed"
    # a downstream call that failed (DownstreamError.code)
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    UNAVAILABLE = "unavailable"
    PROTOCOL = "protocol"
    TOO_LARGE = "too_large"
    AUTH_REQUIRED = "auth_required"
    # code mode (codemode/): a script that failed, hit a limit, or a handle that is gone
    SCRIPT_ERROR = "script_error"
    SCRIPT_LIMIT = "script_limit"
    UNKNOWN_HANDLE = "unknown_handle"


def error_payload(
    code: ErrorCode, message: str | None, *, tool: str | None = None, **extra: Any
) -> dict[str, Any]:
    """``{"error": code, "tool"?: tool, "message"?: message, **extra}``: the JSON of every
    ``isError`` result the gateway writes itself (keys in this order)."""
    out: dict[str, Any] = {"error": code.value}
    if tool is not None:
        out["tool"] = tool
    if message is not None:
        out["message"] = message
    out.update(extra)
    return out


def log_failure(logger: logging.Logger, message: str, *args: Any) -> None:
    """Log the exception being handled: one line when the disk or the store fails (a full
    disk fails every call the same way, and a traceback per call buries the log), the whole
    traceback for anything else."""
    e = sys.exc_info()[1]
    if isinstance(e, sqlite3.Error | OSError | StoreError):
        detail = (str(e).strip().splitlines() or [type(e).__name__])[0]
        logger.warning(message + ": %s", *args, detail[:300])
    else:
        logger.exception(message, *args)
