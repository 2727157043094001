"""Pass-through exposure (``expose = "all"``): every downstream tool in the gateway's own
``tools/list``, no routing — the baseline every peer gateway offers.

A tool keeps its own name where only one server has it and is namespaced ``<server>__<tool>``
where names collide (:func:`~toolroute.gateway.relay.exposed_names`); the namespaced name is
always accepted too. The definitions are the servers' own (title, annotations, output schema and
every JSON Schema keyword), listed live and kept until a server's tools change.
"""

from __future__ import annotations

import logging

import anyio
import mcp.types as types

from toolroute.catalog.name import qualified_name, split_name
from toolroute.gateway.relay import exposed_names
from toolroute.sources.pool import DownstreamError, DownstreamPool

__all__ = ["PassThrough"]

log = logging.getLogger(__name__)


class PassThrough:
    """The merged tool list of every downstream server under collision-safe names."""

    def __init__(self, pool: DownstreamPool) -> None:
        self.pool = pool
        self._tools: dict[str, tuple[str, types.Tool]] | None = None
        self._lock = anyio.Lock()

    def invalidate(self) -> None:
        self._tools = None

    async def _load(self) -> dict[str, tuple[str, types.Tool]]:
        async with self._lock:
            if self._tools is not None:
                return self._tools
            listed: dict[str, tuple[types.Tool, ...]] = {}

            async def one(server: str) -> None:
                try:
                    listed[server] = (await self.pool[server].list_tools()).tools
                except DownstreamError as e:  # a down server lists nothing until it is back
                    log.warning("pass-through: %s", e)

            async with anyio.create_task_group() as tg:
                for server in self.pool.servers:
                    tg.start_soon(one, server)
            pairs = [(s, t) for s in self.pool.servers for t in listed.get(s, ())]
            names = exposed_names((s, t.name) for s, t in pairs)
            by_pair = {(s, t.name): t for s, t in pairs}
            self._tools = {exposed: (s, by_pair[(s, n)]) for exposed, (s, n) in names.items()}
            return self._tools

    async def listed(self) -> list[tuple[types.Tool, str]]:
        """The tools to list, each under its exposed name, with its ``<server>__<tool>`` name
        (what allow-lists and preconditions name)."""
        tools = await self._load()
        return [
            (t.model_copy(update={"name": name}), qualified_name(server, t.name))
            for name, (server, t) in tools.items()
        ]

    async def resolve(self, name: str) -> str | None:
        """The catalog name ``<server>__<tool>`` of an exposed (or namespaced) name, or None."""
        tools = await self._load()
        if name in tools:
            server, tool = tools[name]
            return qualified_name(server, tool.name)
        server, rest = split_name(name)
        if rest and any(s == server and t.name == rest for s, t in tools.values()):
            return name
        return None

    async def original(self, name: str) -> types.Tool | None:
        """The server's own definition of the tool ``<server>__<tool>`` (every field), or
        None when its server does not list it now."""
        server, tool = split_name(name)
        for s, t in (await self._load()).values():
            if s == server and t.name == tool:
                return t
        return None
