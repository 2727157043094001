"""Catalog models: servers and their tools, frozen and hashable.

The wire format is shared/benchmarks' ``catalog.json`` (see ``toolroute.catalog.loader``);
inside the library everything is a frozen dataclass.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Catalog", "Server", "Tool", "ToolKey", "tool_hash"]

ToolKey = tuple[str, str]
"""(server id, tool name): the identity of a tool inside one catalog."""


@dataclass(frozen=True, slots=True)
class Tool:
    """One MCP tool. ``input_schema`` is the JSON schema, kept as parsed JSON."""

    server: str
    name: str
    description: str
    input_schema: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    price: float | None = None
    latency_s: float | None = None
    success_rate: float | None = None

    @property
    def key(self) -> ToolKey:
        return (self.server, self.name)

    @property
    def hash(self) -> str:
        return tool_hash(self.name, self.description, self.input_schema)


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
    """SHA-256 of name + description + schema (seed 001, Alg. 1), schema canonicalised."""
    schema = json.dumps(input_schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    payload = "\x1f".join((name, description, schema))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()
