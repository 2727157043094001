"""Which protocol era the gateway speaks to a downstream server, and what each era cannot carry.

A server built on the ``mcp`` SDK 2.x serves both eras, one per connection, chosen by the
client's first request. What works depends on how its code was written as much as on the era:

- code that asks the client *during* a call (``ctx.session.create_message``, ``elicit_form``)
  or announces changes on the session (``send_tool_list_changed``) needs a handshake-era
  (2025-11-25) connection: at 2026-07-28 there is no back-channel and the request fails, the
  notification is dropped;
- code that answers with an *input-required* result (2026-07-28 multi-round-trip) needs a
  2026-07-28 connection: on a handshake connection that result has no form, and the SDK
  answers ``Handler returned an invalid result``.

So the gateway opens the handshake first (the server answers as its pre-2026 clients saw it)
and opens a 2026-07-28 *companion* session to the same server only when a request needs it:
a request refused that way is retried there once (a handler that returns input-required has
done nothing the retry repeats: the protocol re-runs it on every round). A server that refuses
the handshake (2026-07-28 only) is spoken to in the SDK's ``auto`` mode from then on.

Change announcements: a handshake session hears a server's ``list_changed`` only if the server
declared ``tools.listChanged``; one that did not (an SDK 2.x server announces on
``subscriptions/listen`` streams, which only 2026-07-28 sessions open) is re-listed after each
of its calls, so a tool changed inside a call is seen before it is served again. A 2026-07-28
list's ``ttlMs`` is honoured: the server is re-listed when its list expires (see
:func:`list_expiry_s`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

import mcp.types as types
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

__all__ = [
    "INVALID_RESULT",
    "MIN_LIST_TTL_S",
    "ConnectMode",
    "announces_tool_changes",
    "handshake_refused",
    "list_expiry_s",
    "modern",
    "needs_modern",
]

ConnectMode = Literal["legacy", "auto"]
"""How a downstream session opens: the handshake (``legacy``), or the SDK's probe (``auto``)."""

INVALID_RESULT = "Handler returned an invalid result"
"""The SDK 2.x server's error when a handler's result has no form in the session's era: on a
handshake session, an input-required result."""

MIN_LIST_TTL_S = 1.0
"""A positive ``ttlMs`` below this is taken as this (the gateway's own re-list debounce)."""


def modern(client: Client) -> bool:
    """The session speaks 2026-07-28."""
    return client.session.protocol_version in MODERN_PROTOCOL_VERSIONS


def _errors(e: BaseException) -> Iterator[BaseException]:
    """``e`` and, for an exception group (the SDK's task groups wrap connect errors), every
    exception inside it."""
    yield e
    for inner in getattr(e, "exceptions", ()):
        yield from _errors(inner)


def handshake_refused(e: BaseException) -> bool:
    """The server refused ``initialize`` naming the versions it serves (2026-07-28 only)."""
    return any(
        isinstance(x, MCPError) and x.error.code == types.UNSUPPORTED_PROTOCOL_VERSION
        for x in _errors(e)
    )


def needs_modern(client: Client, e: MCPError) -> bool:
    """A handshake session's request failed because the handler answered input-required."""
    return (
        not modern(client)
        and e.error.code == types.INTERNAL_ERROR
        and e.error.message == INVALID_RESULT
    )


def announces_tool_changes(client: Client) -> bool:
    """Whether the server will tell this session when its tools change: a 2026-07-28 session
    listens on ``subscriptions/listen``; a handshake one only hears a server that declared
    ``tools.listChanged``."""
    if modern(client):
        return True
    tools = client.server_capabilities.tools
    return bool(tools is not None and tools.list_changed)


def list_expiry_s(page: Any) -> float | None:
    """Seconds a tools/list page stays fresh by its ``ttlMs`` (None: no positive hint, so the
    gateway's own re-list interval applies; a 0 is the SDK's default, "no lifetime offered")."""
    if "ttl_ms" not in getattr(page, "model_fields_set", ()):
        return None
    ttl_ms = getattr(page, "ttl_ms", None)
    if not isinstance(ttl_ms, int) or ttl_ms <= 0:
        return None
    return max(ttl_ms / 1000, MIN_LIST_TTL_S)
