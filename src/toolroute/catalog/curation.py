"""Tool curation from toolroute.toml: rename a downstream tool, override its description or
annotations, hide it, or pin it so every shortlist holds it.

    [tools."github__search_code"]
    name = "code_search"               # exposed and indexed as github__code_search
    description = "Search code in the company's repositories (not the public web)."
    annotations = { readOnlyHint = true }
    pin = true                         # always in find_tools' shortlist, always callable
    [tools."github__delete_repo"]
    hidden = true                      # never indexed, listed nor callable

A downstream's listing is rewritten as it is read (:meth:`ServerCuration.apply`): what the
router indexes, ``find_tools`` and ``tools/list`` show and allow-lists match is the curated
tool; a call by the new name goes to the original tool (:meth:`ServerCuration.original`).
The original description and schema stay what the rug-pull check pins
(:mod:`toolroute.gateway.calls.quarantine` reviews the listing before curation).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the MCP types load in half a second: the CLI reads settings without them
    import mcp.types as types

__all__ = ["Curation", "ServerCuration", "ToolOverride"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ToolOverride:
    """What toolroute.toml changes about one downstream tool."""

    name: str | None = None
    """The tool's exposed name on its server (``<server>__<name>``); None: its own."""
    description: str | None = None
    annotations: Mapping[str, Any] | None = None
    """Replaces the tool's annotations (MCP ``ToolAnnotations`` fields)."""
    hidden: bool = False
    pin: bool = False


@dataclass(frozen=True, slots=True)
class ServerCuration:
    """The overrides of one server's tools, by their downstream (original) name."""

    overrides: Mapping[str, ToolOverride] = field(default_factory=dict)

    def apply(
        self, tools: Sequence[types.Tool], server: str = ""
    ) -> tuple[tuple[types.Tool, ...], dict[str, str]]:
        """The curated listing and its renames (exposed name → original name). A rename onto
        a name the server already lists is refused with a warning (the tool keeps its own)."""
        if not self.overrides:
            return tuple(tools), {}
        taken = {t.name for t in tools if not self._renamed(t.name)}
        out: list[types.Tool] = []
        renames: dict[str, str] = {}
        for tool in tools:
            o = self.overrides.get(tool.name)
            if o is None:
                out.append(tool)
                continue
            if o.hidden:
                continue
            update: dict[str, Any] = {}
            if o.name is not None and o.name != tool.name:
                if o.name in taken or o.name in renames:
                    log.warning(
                        "server %s: tool %r not renamed to %r: the server has a tool by that name",
                        server,
                        tool.name,
                        o.name,
                    )
                else:
                    update["name"] = o.name
                    renames[o.name] = tool.name
            if o.description is not None:
                update["description"] = o.description
            if o.annotations is not None:
                from mcp.types import ToolAnnotations

                update["annotations"] = ToolAnnotations.model_validate(dict(o.annotations))
            out.append(tool.model_copy(update=update))
        return tuple(out), renames

    def _renamed(self, name: str) -> bool:
        o = self.overrides.get(name)
        return o is not None and (o.hidden or (o.name is not None and o.name != name))


@dataclass(frozen=True, slots=True)
class Curation:
    """Every ``[tools."<server>__<tool>"]`` override, by server."""

    servers: Mapping[str, ServerCuration] = field(default_factory=dict)

    @classmethod
    def of(cls, overrides: Mapping[tuple[str, str], ToolOverride]) -> Curation:
        """From overrides keyed by (server, original tool name)."""
        by_server: dict[str, dict[str, ToolOverride]] = {}
        for (server, tool), o in overrides.items():
            by_server.setdefault(server, {})[tool] = o
        return cls({s: ServerCuration(o) for s, o in by_server.items()})

    def server(self, name: str) -> ServerCuration:
        return self.servers.get(name) or ServerCuration()

    def exposed(self, server: str, tool: str) -> str:
        """The name a downstream tool is exposed under on its server (its own if not renamed)."""
        o = self.server(server).overrides.get(tool)
        return o.name if o is not None and o.name else tool

    def pinned(self, separator: str) -> tuple[str, ...]:
        """``<server>__<exposed name>`` of every tool marked ``pin = true`` and not hidden."""
        return tuple(
            f"{server}{separator}{self.exposed(server, tool)}"
            for server, sc in sorted(self.servers.items())
            for tool, o in sorted(sc.overrides.items())
            if o.pin and not o.hidden
        )


MAX_NAMED_SERVERS = 12
"""Past this many servers, find_tools' description names the largest ones and counts the rest."""


def servers_line(servers: Sequence[tuple[str, int]]) -> str:
    """One line naming the servers behind the gateway, for find_tools' description: ``(id,
    tool count)`` pairs; past :data:`MAX_NAMED_SERVERS`, the largest and a count of the rest."""
    live = [(s, n) for s, n in servers if n]
    if not live:
        return "No server has tools yet."
    total = sum(n for _, n in live)
    ranked = sorted(live, key=lambda p: (-p[1], p[0]))
    shown = ranked[:MAX_NAMED_SERVERS]
    names = ", ".join(f"{s} ({n})" for s, n in sorted(shown))
    rest = len(ranked) - len(shown)
    more = f" and {rest} more" if rest else ""
    return f"Behind it: {len(live)} servers, {total} tools: {names}{more}."
