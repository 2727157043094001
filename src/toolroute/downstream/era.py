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

So the gateway keeps one session per server, in the SDK's ``auto`` mode (2026-07-28 where the
server speaks it: input-required results reach every caller, answered through a 2025-11-25
caller's callbacks), until the server's code shows it asks by request: a call answered with
the SDK's "no back-channel" (:data:`NO_BACK_CHANNEL`). From then on that server's callers go
to a handshake *companion* session to the same server (for stdio, a second process, as a
second client connected directly would start), 2026-07-28 callers bridged through it
(gateway/shell/_continuation.py), and the call that showed it is retried there once unless its
caller speaks 2026-07-28 (the tool never got its answer). What the companion cannot carry (a
handler's input-required result) goes back to the 2026-07-28 session, and a handshake-only
method (``resources/subscribe``) the 2026-07-28 session does not know goes to the companion.

Change announcements: a handshake session hears a server's ``list_changed`` only if the server
declared ``tools.listChanged``, and a 2026-07-28 session only what comes on
``subscriptions/listen``. So a server is re-listed after a call on a session that may not have
heard a change the call made: a handshake one whose server declared no ``tools.listChanged``,
or the 2026-07-28 one of a server that may also speak the handshake (its code may announce on
the session); a stdio companion's listing counts too (a tool changed in its process). A
2026-07-28 list's ``ttlMs`` is honoured: the server is re-listed when its list expires (see
:func:`list_expiry_s`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import mcp.types as types
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

__all__ = [
    "INVALID_RESULT",
    "MIN_LIST_TTL_S",
    "NO_BACK_CHANNEL",
    "asked_by_request",
    "announces_tool_changes",
    "handshake_refused",
    "list_expiry_s",
    "modern",
    "needs_modern",
]

INVALID_RESULT = "Handler returned an invalid result"
"""The SDK 2.x server's error when a handler's result has no form in the session's era: on a
handshake session, an input-required result."""

NO_BACK_CHANNEL = "has no back-channel for server-initiated requests"
"""The SDK 2.x server's words when its code asks the client by request at 2026-07-28."""

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
    """A handshake session's request failed because the handler answered input-required
    (the SDK 2.x server's words for it: :data:`INVALID_RESULT`)."""
    return (
        not modern(client)
        and e.error.code == types.INTERNAL_ERROR
        and e.error.message == INVALID_RESULT
    )


def asked_by_request(answer: Any) -> bool:
    """A 2026-07-28 call's answer (a result, or an error's message) says the server's code
    asked the client by request: the SDK's error, let through or caught and returned as text."""
    if isinstance(answer, str):
        return NO_BACK_CHANNEL in answer
    content = getattr(answer, "content", None) or []
    return any(NO_BACK_CHANNEL in (getattr(c, "text", None) or "") for c in content)


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
