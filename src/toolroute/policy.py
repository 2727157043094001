"""Who may use what: a client's allow-list and the call gate's scope.

The config's types for :mod:`toolroute.gateway.access` (which enforces them per request):
they sit below both :mod:`toolroute.config` and the gateway, so neither imports the other.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Literal

from toolroute.catalog.name import server_of
from toolroute.errors import ConfigError

__all__ = ["CallGateScope", "ClientAccess", "gate_scope"]

CallGateScope = Literal["connection", "client", "off"]


def gate_scope(value: bool | str) -> CallGateScope:
    """``call_gate`` as a scope: ``true`` is ``"connection"``, ``false`` is ``"off"``."""
    if value is True:
        return "connection"
    if value is False:
        return "off"
    if value in ("connection", "client", "off"):
        return value  # type: ignore[return-value]
    raise ConfigError(
        f"call_gate: {value!r} is not one of connection, client, off (or true / false)"
    )


@dataclass(frozen=True, slots=True)
class ClientAccess:
    """One client of the HTTP gateway: its id, its token and what it may use.

    ``servers`` and ``tools`` are allow-lists (``fnmatch`` patterns, ``tools`` on the
    ``server__tool`` name); a tool is allowed when its server or its name matches one. With
    both empty the client may use every tool.
    """

    client_id: str
    token: str = field(repr=False)
    servers: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()

    @property
    def restricted(self) -> bool:
        return bool(self.servers or self.tools)

    def allows(self, name: str) -> bool:
        """Whether this client may see and call the tool ``server__tool``."""
        if not self.restricted:
            return True
        server = server_of(name)
        return any(fnmatch.fnmatchcase(server, p) for p in self.servers) or any(
            fnmatch.fnmatchcase(name, p) for p in self.tools
        )
