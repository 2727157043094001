"""Pass-through exposure (``expose = "all"``): every downstream tool in the gateway's own
``tools/list``, no routing — the baseline every peer gateway offers.

One name, one tool. The rule, applied on every listing and stated in the status
(``names``) and the log:

- a tool keeps its own name where one server alone lists it; its namespaced name
  ``<server>__<tool>`` is always accepted too, and is the only one in the other cases;
- a name two servers list is *retired* for the gateway's lifetime: each server's tool is
  reachable by its namespaced name only, and the plain name by neither, even after one of
  them stops listing it (so a tool's old name, freed by a rename or a server going down,
  is never handed to the other);
- likewise a plain name once exposed for one server, or the server's own name of a tool
  the config renames (:mod:`toolroute.catalog.curation`), is never handed to another;
- a name written inside another server's namespace (server ``evil`` listing
  ``time__get_current_time``, ``time.get_current_time`` or ``time/get_current_time``, the
  server in any case or look-alike form) or equal to one of the gateway's own tools is never
  exposed as is: ``evil``'s tool is ``evil__time.get_current_time``, and a warning is logged;
- a quarantined tool (:mod:`toolroute.gateway.calls.quarantine`: changed, poisoned, or with a name
  that looks like another's) is not listed, nor are the tools of a server not reviewed yet
  (still being listed or indexed at start, :mod:`toolroute.gateway.ops.startup`).

The definitions are the servers' own (title, annotations, output schema and every JSON Schema
keyword), listed live and kept until a server's tools change.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Container

import anyio
import mcp.types as types

from toolroute.catalog.name import namespace_of, qualified_name, split_name
from toolroute.downstream.servers import DownstreamError, Downstreams
from toolroute.gateway.shell._relay import exposed_names

__all__ = ["RESERVED", "PassThrough"]

log = logging.getLogger(__name__)

RESERVED = frozenset({"find_tools", "call_tool", "request_capability", "set_milestone"})
"""The gateway's own tool names: a downstream tool of the same name is namespaced."""


class PassThrough:
    """The merged tool list of every downstream server under collision-safe names."""

    def __init__(
        self, downstreams: Downstreams, held: Callable[[], Container[str]] | None = None
    ) -> None:
        """``held``: the names (``<server>__<tool>``) of the quarantined tools, left out."""
        self.downstreams = downstreams
        self.held = held or (lambda: ())
        self._tools: dict[str, tuple[str, types.Tool]] | None = None
        self._lock = anyio.Lock()
        self.claims: dict[str, str] = {}
        """Plain name → the server it was exposed for (kept: never handed to another)."""
        self.retired: dict[str, tuple[str, ...]] = {}
        """Plain name → the servers that listed it: exposed by neither, namespaced only."""

    def invalidate(self) -> None:
        self._tools = None

    async def _load(self) -> dict[str, tuple[str, types.Tool]]:
        async with self._lock:
            if self._tools is not None:
                return self._tools
            listed: dict[str, tuple[types.Tool, ...]] = {}
            # a server not reviewed yet (still listed or indexed at start) is left out, and
            # so not listed here either: a big or endless listing holds back no other's tools
            unreviewed = set(self.downstreams.notes.get("indexing", {}))

            async def one(server: str) -> None:
                try:
                    listed[server] = (await self.downstreams[server].list_tools()).tools
                except DownstreamError as e:  # a down server lists nothing until it is back
                    log.warning("pass-through: %s", e)

            async with anyio.create_task_group() as tg:
                for server in self.downstreams.servers:
                    if server not in unreviewed:
                        tg.start_soon(one, server)
            for (
                d
            ) in self.downstreams.servers.values():  # a curated tool's own name stays its server's
                for own in d.renames.values():
                    self.claims.setdefault(own, d.name)
            held = self.held()
            pairs = [
                (s, t)
                for s in self.downstreams.servers
                if s not in unreviewed
                for t in listed.get(s, ())
                if qualified_name(s, t.name) not in held
            ]
            self._retire([(s, t.name) for s, t in pairs])
            names = exposed_names(
                ((s, t.name) for s, t in pairs),
                self.downstreams.servers,
                refused={*RESERVED, *self.retired},
            )
            by_pair = {(s, t.name): t for s, t in pairs}
            self._tools = {exposed: (s, by_pair[(s, n)]) for exposed, (s, n) in names.items()}
            for exposed, (s, n) in names.items():
                if exposed == n:
                    self.claims.setdefault(n, s)
            self._note(pairs)
            return self._tools

    def _retire(self, pairs: list[tuple[str, str]]) -> None:
        """Retire each plain name two servers list now, or another than its claimant."""
        by_name: dict[str, list[str]] = {}
        for s, n in pairs:
            by_name.setdefault(n, []).append(s)
        for name, servers in by_name.items():
            owners = sorted({*servers, *([self.claims[name]] if name in self.claims else [])})
            if len(owners) < 2:
                continue
            before = self.retired.get(name, ())
            self.retired[name] = tuple(sorted({*before, *owners}))
            if self.retired[name] != before:
                log.warning(
                    "pass-through: %s is listed by %s: each is reachable only as "
                    "<server>__%s, the plain name by neither",
                    name,
                    " and ".join(self.retired[name]),
                    name,
                )

    def _note(self, pairs: list[tuple[str, types.Tool]]) -> None:
        """How each name that is not exposed as is was resolved, in the status (``names``)."""
        notes: dict[str, str] = {}
        for name, servers in self.retired.items():
            namespaced = ", ".join(qualified_name(s, name) for s in servers)
            notes[name] = f"listed by {' and '.join(servers)}: only {namespaced}"
        for s, t in pairs:
            owner = namespace_of(t.name, self.downstreams.servers)
            if owner is not None and owner != s:
                notes[t.name] = (
                    f"listed by {s} inside server {owner}'s namespace: "
                    f"only {qualified_name(s, t.name)}"
                )
            elif t.name in RESERVED:
                notes[t.name] = f"listed by {s}, a gateway tool's name: only " + qualified_name(
                    s, t.name
                )
        if notes != self.downstreams.notes.get("names", {}):
            before = self.downstreams.notes.get("names", {})
            for name, why in notes.items():
                if before.get(name) != why and "namespace" in why:
                    log.warning("pass-through: %r %s", name, why)
            self.downstreams.notes["names"] = notes
            self.downstreams.note_change()

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
