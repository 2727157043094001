"""In-process downstream servers: an MCP SDK server object in this process, beside stdio and
HTTP (the transport seam of the house style: httpx's ``MockTransport``, the SDK's
``Client(server)``).

A :class:`MemorySpec` names a ``Server`` or ``MCPServer`` object; the downstreams'
:class:`~toolroute.downstream.servers.Downstream` connects to it with the SDK's own in-memory
connection, so the whole gateway (sync, routing, the call gate, execution, recording) runs
against real MCP servers with no process, pipe or socket. ``era="2026-07-28"`` talks to it the
way the SDK's ``Client(server)`` does by default (per-request, no handshake);
``era="2025-11-25"`` runs the server's stream loop behind the ``initialize`` handshake, as a
stdio or HTTP server of that era is spoken to.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

# the SDK's server classes only annotate what a spec holds: toolroute.config imports this
# module, and loading them would cost every command that reads a config most of a second
if TYPE_CHECKING:
    from mcp.server import Server
    from mcp.server.mcpserver import MCPServer

__all__ = ["MemorySpec", "memory_specs"]

Era = Literal["2026-07-28", "2025-11-25"]


@dataclass(frozen=True, slots=True)
class MemorySpec:
    """A downstream server that is an SDK server object in this process."""

    server: Server[Any] | MCPServer
    era: Era = "2026-07-28"
    """The protocol era the gateway speaks to it in (the SDK server serves both)."""

    @property
    def mode(self) -> Literal["legacy", "auto"]:
        """The SDK ``Client`` mode that speaks :attr:`era` (the server would answer both)."""
        return "legacy" if self.era == "2025-11-25" else "auto"


def memory_specs(
    servers: Mapping[str, Server[Any] | MCPServer], era: Era = "2026-07-28"
) -> dict[str, MemorySpec]:
    """``{name: MemorySpec}`` for a mapping of server objects, all in one era."""
    return {name: MemorySpec(s, era) for name, s in servers.items()}
