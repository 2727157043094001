"""The HTTP front door: one ASGI middleware around the gateway's whole Starlette app.

Every HTTP request, whatever its route (``/mcp`` and any page added beside it), passes, in order:

1. **Host** (DNS rebinding): the ``Host`` header must be a loopback name (``127.0.0.1``,
   ``localhost``, ``[::1]``, any port) or one of ``[http] allowed_hosts``; else ``421``.
2. **Origin** (MCP 2025-11-25, streamable HTTP security: "Servers MUST validate the Origin
   header"): when present it must be a loopback origin or one of ``[http] allowed_origins``;
   else ``403``.
3. **Bearer token**, when ``[auth]`` gives tokens: ``Authorization: Bearer <token>`` must be
   one of them (compared in constant time, every token each time); else ``401`` with
   ``WWW-Authenticate: Bearer``. The client id goes on the request's ASGI scope
   (:data:`~toolroute.gateway.calls.access.CLIENT_SCOPE_KEY`).
4. **Principal**: the request's ``scope["user"]`` is the token's client id (without ``[auth]``:
   the peer's address), which the SDK's session manager compares with the principal that opened
   an ``Mcp-Session-Id``: every request on a session (POST, the GET stream, DELETE, and so a
   relayed elicitation's or sampling's answer) from anyone else gets ``404 Session not found``,
   as if the session did not exist.

5. **Body size**: a request body (``POST``, ``PUT``, ``PATCH``) of at most
   :data:`MAX_BODY_BYTES`, read here before anything parses it (a larger ``Content-Length``
   is refused at once); else ``413``. What is behind the guard parses each body once with a
   depth-limited parser (the SDK's), so a hostile body is a JSON-RPC error, never a crash.

A request that passes with a token (or any that passes, without ``[auth]`` tokens) marks its
connection trusted (:data:`~toolroute.gateway.http.connection_limits.TRUST_SCOPE_KEY`): a
share of the connections is kept for such clients, so unauthenticated peers cannot take them
all.

A request with no ``Authorization`` header at all may instead be admitted by the status page's
:class:`~toolroute.gateway.http.login.LoginBook`: a browser's session cookie, on the status page's
own routes only (never ``/mcp``), and the login form itself, which shows no data.

The ``Authorization`` header is removed from every request that passes, so nothing behind this
middleware sees the token, let alone forwards it to a downstream server (MCP authorization
spec: no token passthrough).

Patterns are ``host:port`` / ``scheme://host:port`` or end in ``:*`` for any port.
"""

from __future__ import annotations

import hashlib
import hmac
from collections import deque
from collections.abc import Sequence
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolroute.gateway.calls.access import CLIENT_SCOPE_KEY, ClientAccess
from toolroute.gateway.http.connection_limits import TRUST_SCOPE_KEY
from toolroute.gateway.http.login import LOGIN_SCOPE_KEY, LoginBook

__all__ = [
    "LOOPBACK_HOSTS",
    "LOOPBACK_ORIGINS",
    "MAX_BODY_BYTES",
    "HttpGuard",
    "is_loopback",
    "principal",
]

MAX_BODY_BYTES = DEFAULT_MAX_REQUEST_BODY_SIZE
"""The MCP SDK's own limit on a streamable HTTP body (4 MiB), so the guard and the SDK behind
it refuse the same bodies."""
"""Largest request body passed on (bytes); a larger one is answered ``413``."""
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})

LOOPBACK_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]")
LOOPBACK_ORIGINS = tuple(
    f"{scheme}://{host}" for scheme in ("http", "https") for host in LOOPBACK_HOSTS
)


def is_loopback(host: str) -> bool:
    return host in ("127.0.0.1", "localhost", "::1") or host.startswith("127.")


def _matches(value: str, patterns: Sequence[str]) -> bool:
    for pattern in patterns:
        if value == pattern:
            return True
        if pattern.endswith(":*"):
            base, _, port = value.rpartition(":")
            if base == pattern[:-2] and port.isdigit():
                return True
    return False


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


def principal(client: str | None, scope: Scope) -> AuthenticatedUser:
    """Who owns the sessions this request opens: a token's client, else the peer's address."""
    if client is not None:
        owner = f"token:{client}"
    else:
        peer = scope.get("client")
        owner = f"peer:{peer[0]}" if peer else "peer:unknown"
    # the token itself is not kept: the guard has checked it, and it must go no further
    return AuthenticatedUser(AccessToken(token="", client_id=owner, scopes=[]))


class HttpGuard:
    """ASGI middleware: Host, Origin and bearer-token checks for every HTTP request."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        clients: Sequence[ClientAccess] = (),
        allowed_hosts: Sequence[str] = (),
        allowed_origins: Sequence[str] = (),
        logins: LoginBook | None = None,
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        self.app = app
        self.logins = logins
        self.max_body_bytes = max_body_bytes
        self.reconfigure(clients, allowed_hosts, allowed_origins)

    def reconfigure(
        self,
        clients: Sequence[ClientAccess],
        allowed_hosts: Sequence[str],
        allowed_origins: Sequence[str],
    ) -> None:
        """New tokens and Host/Origin lists (live reconfiguration, gateway/ops/reload.py)."""
        self.hosts = (*LOOPBACK_HOSTS, *allowed_hosts)
        self.origins = (*LOOPBACK_ORIGINS, *allowed_origins)
        self._tokens = [(_digest(c.token), c.client_id) for c in clients]
        if self.logins is not None:  # the status page's sign-ins follow the same tokens
            self.logins.reconfigure({c.client_id: c.token for c in clients})

    def _client(self, authorization: str | None) -> str | None:
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        given = _digest(token.strip())
        found = None
        for digest, client in self._tokens:  # no early exit: same work whichever matches
            if hmac.compare_digest(given, digest):
                found = client
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):  # lifespan
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        denied: PlainTextResponse | None = None
        client: str | None = None
        login: dict[str, Any] | None = None
        if not _matches(headers.get("host", ""), self.hosts):
            denied = PlainTextResponse("Invalid Host header", status_code=421)
        elif "origin" in headers and not _matches(headers["origin"], self.origins):
            denied = PlainTextResponse("Invalid Origin header", status_code=403)
        elif self._tokens:
            client = self._client(headers.get("authorization"))
            if client is None and "authorization" not in headers and self.logins is not None:
                method = scope.get("method", "WEBSOCKET")
                login = self.logins.admit(method, scope["path"], headers.get("cookie"))
                if login is not None and LOGIN_SCOPE_KEY in login:
                    client = login[LOGIN_SCOPE_KEY].client  # None: the operator
            if client is None and login is None:
                given = "authorization" in headers
                denied = PlainTextResponse(
                    "Invalid bearer token" if given else "Missing bearer token",
                    status_code=401,
                    headers={
                        "WWW-Authenticate": 'Bearer realm="toolroute"'
                        + (', error="invalid_token"' if given else "")
                    },
                )
        if denied is not None:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
            else:
                await denied(scope, receive, send)
            return
        if client is not None or not self._tokens:  # its connection is trusted from now on
            trust = scope.get(TRUST_SCOPE_KEY)  # (the status page's own login form is not)
            if trust is not None:
                trust()
        scope = {  # the token stops here, with or without [auth]
            **scope,
            "headers": [(k, v) for k, v in scope["headers"] if k.lower() != b"authorization"],
        }
        scope.update(login or {})
        if client is not None:
            scope[CLIENT_SCOPE_KEY] = client
        scope["user"] = principal(client, scope)  # the SDK binds each session to it
        if scope["type"] == "http" and scope.get("method") in _BODY_METHODS:
            body = await _bounded_body(headers, receive, self.max_body_bytes)
            if body is None:
                too_big = f"Request body over {self.max_body_bytes} bytes"
                await PlainTextResponse(too_big, status_code=413)(scope, receive, send)
                return
            receive = _replay(body, receive)
        await self.app(scope, receive, send)


async def _bounded_body(headers: Headers, receive: Receive, limit: int) -> list[Message] | None:
    """The request's body messages, read whole, or None when they come to over ``limit``
    bytes (a ``Content-Length`` over it is refused before reading)."""
    declared = headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    messages: list[Message] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":  # the client went away
            return messages
        size += len(message.get("body", b""))
        if size > limit:
            return None
        if not message.get("more_body", False):
            return messages


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """A ``receive`` giving ``messages`` first, then what the connection sends next."""
    pending = deque(messages)

    async def replay() -> Message:
        return pending.popleft() if pending else await receive()

    return replay
