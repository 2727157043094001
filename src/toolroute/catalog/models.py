"""Catalog models: servers and their tools, frozen and hashable.

The wire format is the ``catalog.json`` of :mod:`toolroute.catalog.loader`; inside the library
everything is a frozen dataclass.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Catalog", "Server", "Tool", "ToolKey", "compact_json", "tool_hash"]

ToolKey = tuple[str, str]
"""(server id, tool name): the identity of a tool inside one catalog."""


@dataclass(frozen=True, slots=True, init=False)
class Tool:
    """One MCP tool. ``input_schema`` is the JSON schema, kept as compact JSON text.

    A 100k-tool catalog's schemas parsed into dicts take several times the memory of their
    text, and routing reads none of them: only a presented tool's schema is parsed, on access
    (Tool Attention's lazy schema loading). ``input_schema`` returns a fresh dict every time, so a
    caller cannot change the catalog by mutating it.
    """

    server: str
    name: str
    description: str
    schema_json: str = field(hash=False, compare=False, repr=False)
    """``input_schema`` as compact JSON text (key order kept)."""
    price: float | None = None
    latency_s: float | None = None
    success_rate: float | None = None
    title: str = ""
    """The server's display name for the tool (MCP's ``title``), an exact name like ``name``."""
    _hash: str | None = field(default=None, init=False, hash=False, compare=False, repr=False)

    def __init__(
        self,
        server: str,
        name: str,
        description: str,
        input_schema: Mapping[str, Any] | None = None,
        price: float | None = None,
        latency_s: float | None = None,
        success_rate: float | None = None,
        *,
        schema_json: str | None = None,
        title: str = "",
    ) -> None:
        if schema_json is None:
            schema_json = compact_json(input_schema or {})
        object.__setattr__(self, "server", server)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "description", description)
        object.__setattr__(self, "schema_json", schema_json)
        object.__setattr__(self, "price", price)
        object.__setattr__(self, "latency_s", latency_s)
        object.__setattr__(self, "success_rate", success_rate)
        object.__setattr__(self, "title", title)
        object.__setattr__(self, "_hash", None)  # a copy (``replace``) computes its own

    @property
    def input_schema(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.schema_json)
        return value

    @property
    def key(self) -> ToolKey:
        return (self.server, self.name)

    @property
    def hash(self) -> str:
        """:func:`tool_hash`, computed once per tool (a sync and a digest both need it)."""
        if self._hash is None:
            value = tool_hash(self.name, self.description, self.input_schema)
            object.__setattr__(self, "_hash", value)
            return value
        return self._hash


def compact_json(value: Mapping[str, Any]) -> str:
    """``value`` as compact JSON text, key order kept (the text ``Tool`` stores)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class Server:
    """One MCP server and its tools."""

    id: str
    name: str
    description: str
    tools: tuple[Tool, ...]
    ask_cost: float | None = None
    connect_latency_s: float | None = None
    failure_rate: float | None = None


@dataclass(frozen=True, slots=True)
class Catalog:
    """A set of servers; tool order is stable (server order, then tool order)."""

    servers: tuple[Server, ...]

    def tools(self) -> Iterator[Tool]:
        for server in self.servers:
            yield from server.tools

    def server(self, server_id: str) -> Server:
        for server in self.servers:
            if server.id == server_id:
                return server
        raise KeyError(server_id)

    @property
    def tool_count(self) -> int:
        return sum(len(s.tools) for s in self.servers)


def tool_hash(name: str, description: str, input_schema: Mapping[str, Any]) -> str:
    """SHA-256 of name + description + schema (ScaleMCP Alg. 1), schema canonicalised."""
    schema = json.dumps(input_schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    payload = "\x1f".join((name, description, schema))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()
