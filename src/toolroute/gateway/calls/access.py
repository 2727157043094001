"""Who is calling, what they may use, and whose session a request belongs to.

- :class:`ClientAccess`: one HTTP client of the gateway, known by its bearer token
  (``[auth.clients.<id>]`` in toolroute.toml), with an optional allow-list of servers and tools.
  ``find_tools`` never shows it a tool outside its list, and ``call_tool``, bound tools and
  ``request_capability`` check the list again.
- The call gate's scope (``call_gate`` in toolroute.toml) says whose promotions by
  ``find_tools`` a call may use: ``"client"`` (the default, ``true``: every session of one
  client, keyed by the most stable identity the request carries, so clients that open a
  session or a process per call — LangChain's MCP adapters, the Inspector CLI — call what
  they found), ``"connection"`` (one MCP connection only: the strict scope) or ``"off"``
  (``false``: no gate).
- A 2026-07-28 client has no connection to speak of: each request stands alone (no
  ``initialize``, no session). Its requests are therefore always scoped by client, whatever
  ``call_gate`` says (``"connection"`` keeps its meaning for handshake-era sessions).
- The client of a request: the authenticated client id when the gateway has tokens; else the
  ``X-Toolroute-Client`` HTTP header when the client sends one; else the ``clientInfo.name`` it
  gave in ``initialize`` or, at 2026-07-28, in the request's ``_meta``; a handshake-era
  session that names itself in none of these ways keeps its promotions to its connection.
  Without tokens that identity is the client's own word, so it only keeps the gate's
  promotions together; it grants nothing (the allow-lists, not the gate, decide what a
  client may use).
- A client-scoped promotion is also written to the store (:data:`PROMOTION_TTL_S`), so the
  next request finds it in another gateway process: a client that starts a gateway per call
  (the Inspector CLI over stdio), or a stateless request that lands on another replica.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any

from mcp.server import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolroute.errors import log_failure
from toolroute.policy import CallGateScope, ClientAccess, gate_scope
from toolroute.route.preconditions import SessionState
from toolroute.sdk import connection_of
from toolroute.store.base import StoreInterface

Request = ServerRequestContext[Any, Any]
"""The SDK's context of one request to the gateway, as its handlers receive it."""

__all__ = [
    "ANONYMOUS",
    "CLIENT_HEADER",
    "CLIENT_SCOPE_KEY",
    "CallGate",
    "PROMOTION_TTL_S",
    "CallGateScope",
    "ClientAccess",
    "SessionStates",
    "authenticated_client",
    "client_identity",
    "gate_scope",
    "is_stateless",
]

log = logging.getLogger(__name__)

ANONYMOUS = "anonymous"
"""The identity of a request that carries none (no token, header or client name)."""
CLIENT_SCOPE_KEY = "toolroute.client"
"""Key of the authenticated client id in the ASGI scope (set by the HTTP front door)."""
CLIENT_HEADER = "x-toolroute-client"
"""HTTP header naming the client when the gateway has no tokens (call gate scope ``client``)."""
PROMOTION_TTL_S = 3600.0
"""How long a client-scoped promotion stays valid in the store (s)."""
MAX_CLIENT_STATES = 10_000
"""Client-scoped session states kept (least recently used dropped): a client names itself when
there are no tokens, so their number must be bounded."""


def _request_scope(ctx: Request) -> dict[str, Any] | None:
    scope = getattr(getattr(ctx, "request", None), "scope", None)
    return scope if isinstance(scope, dict) else None


def authenticated_client(ctx: Request) -> str | None:
    """The client id the auth middleware put on this request's HTTP scope, if any."""
    scope = _request_scope(ctx)
    client = scope.get(CLIENT_SCOPE_KEY) if scope is not None else None
    return client if isinstance(client, str) else None


def client_identity(ctx: Request) -> str:
    """Who sent this request: the authenticated id, else the ``X-Toolroute-Client`` header,
    else ``clientInfo.name`` from ``initialize``, else :data:`ANONYMOUS`."""
    authenticated = authenticated_client(ctx)
    if authenticated is not None:
        return f"token:{authenticated}"
    scope = _request_scope(ctx)
    if scope is not None:
        for key, value in scope.get("headers", ()):
            if key == CLIENT_HEADER.encode():
                return "header:" + bytes(value).decode("latin-1")[:200]
    params = getattr(getattr(ctx, "session", None), "client_params", None)
    name = getattr(getattr(params, "client_info", None), "name", None)
    return f"name:{name[:200]}" if isinstance(name, str) and name else ANONYMOUS


def is_stateless(ctx: Request) -> bool:
    """Whether the request speaks a 2026-07-28-era protocol (no session, no connection)."""
    return getattr(ctx, "protocol_version", None) in MODERN_PROTOCOL_VERSIONS


def _connection_of(ctx: Request) -> object:
    """The client connection a request belongs to: handlers get a per-request ServerSession
    that wraps the connection."""
    return connection_of(getattr(ctx, "session", None))


class SessionStates:
    """The :class:`SessionState` of each request, per call gate scope.

    ``connection`` (and ``off``): one state per MCP connection, dropped with it (held weakly,
    so a closed connection's promotions can never pass to a new one that reuses its address);
    ``client``: one state per client identity, kept for the gateway's life (at most
    :data:`MAX_CLIENT_STATES`, least recently used dropped first), and per connection for a
    handshake-era session with no identity.
    """

    def __init__(
        self,
        scope: CallGateScope,
        new: Callable[[], SessionState],
        store: Callable[[], StoreInterface | None] | None = None,
        ttl_s: float = PROMOTION_TTL_S,
    ) -> None:
        self.scope = scope
        self._new = new
        self._store = store or (lambda: None)
        self.ttl_s = ttl_s
        self._by_connection: weakref.WeakKeyDictionary[object, SessionState] = (
            weakref.WeakKeyDictionary()
        )
        self._by_client: OrderedDict[str, SessionState] = OrderedDict()
        self._unkeyed: SessionState | None = None

    def __len__(self) -> int:
        return len(self._by_connection) + len(self._by_client)

    def for_request(self, ctx: Request) -> SessionState:
        stateless = is_stateless(ctx)
        if self.scope == "client" or stateless:
            identity = client_identity(ctx)
            if identity != ANONYMOUS or stateless:
                return self.for_client(identity)
        return self.for_connection(_connection_of(ctx))

    def describe(self, state: SessionState) -> str:
        """The scope a state's promotions live in, in words (for refusals)."""
        if state.client is None:
            return "this connection"
        return f"client {state.client!r}"

    def promote(self, state: SessionState, names: Iterable[str]) -> None:
        """Admit ``names`` through the call gate for ``state`` (and, for a client-scoped
        state, for the same client in every gateway process sharing the store)."""
        names = list(names)
        state.promoted.update(names)
        store = self._store() if state.client is not None else None
        if store is None or not names:
            return
        try:
            store.promote(state.client or "", names, time.time() + self.ttl_s)
        except Exception:  # the gate must not break find_tools: this process still knows
            log_failure(log, "cannot record promotions for %s", state.client)

    def is_promoted(self, state: SessionState, name: str) -> bool:
        """Whether find_tools returned ``name`` to this state's client (here or, for a
        client-scoped state, in another process sharing the store)."""
        if name in state.promoted:
            return True
        store = self._store() if state.client is not None else None
        if store is None:
            return False
        try:
            found = store.is_promoted(state.client or "", name)
        except Exception:
            log_failure(log, "cannot read promotions of %s", state.client)
            return False
        if found:
            state.promoted.add(name)
        return found

    def promotions(self, state: SessionState) -> list[str]:
        """Every name promoted for ``state``, by name: its own and, for a client-scoped
        state, those made for the same client in other processes sharing the store."""
        names = set(state.promoted)
        store = self._store() if state.client is not None else None
        if store is not None:
            try:
                names.update(store.promotions(state.client or ""))
            except Exception:
                log_failure(log, "cannot read promotions of %s", state.client)
        return sorted(names)

    def for_client(self, client: str) -> SessionState:
        state = self._by_client.get(client)
        if state is None:
            state = self._by_client[client] = self._new()
            state.client = client
            while len(self._by_client) > MAX_CLIENT_STATES:
                self._by_client.popitem(last=False)
        else:
            self._by_client.move_to_end(client)
        return state

    def for_connection(self, connection: object) -> SessionState:
        if connection is None:
            if self._unkeyed is None:
                self._unkeyed = self._new()
            return self._unkeyed
        try:
            state = self._by_connection.get(connection)
        except TypeError:  # not weakly referable: one shared state rather than a leak
            return self.for_connection(None)
        if state is None:
            state = self._by_connection[connection] = self._new()
        return state


@dataclass(frozen=True, slots=True)
class CallGate:
    """The call gate's data: its scope, whether it applies, and the promotions it checks."""

    scope: CallGateScope
    applies: bool
    """On, and the tools not passed through (pass-through lists every tool to every client)."""
    sessions: SessionStates

    def admits(self, state: SessionState, name: str, pinned: Collection[str]) -> bool:
        """The call gate (Tool Attention, Alg. 1 line 8): ``name`` is pinned or was promoted
        to this caller (or the gate does not apply)."""
        return not self.applies or name in pinned or self.sessions.is_promoted(state, name)
