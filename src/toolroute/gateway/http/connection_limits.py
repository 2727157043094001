"""What one HTTP connection to the gateway may hold: limits on uvicorn's httptools protocol.

uvicorn bounds none of these for httptools, so an unauthenticated peer could pin memory and
descriptors before the guard (:mod:`toolroute.gateway.http.auth`) ever sees a request:

- **Head size and count**: the request line and headers of one request may take at most
  :attr:`HttpLimits.max_head_bytes` (a header value that never ends is cut there, ``431``) and
  :attr:`HttpLimits.max_headers` fields (``400``).
- **Head timeout**: a request's head must arrive within :attr:`HttpLimits.head_timeout_s` of
  the connection opening or the request starting (slowloris; a connection that never sends a
  byte); else the connection is closed (``408`` when part of a head had come).
- **Idle keep-alive**: uvicorn's ``timeout_keep_alive`` between requests.
- **Waiting connections per address**: a connection is *waiting* while no request head has
  completed on it: opened and silent, part of a head sent (one byte is enough to be in a
  request, and is not enough to be spared), or kept alive between requests. One address keeps
  at most :attr:`HttpLimits.max_idle_per_address` waiting (by default a quarter of the open
  connections, 8 at least: clients behind one proxy share an address); one more closes that
  address's longest waiting one. So a peer that keeps re-opening connections, silent or
  trickling a head, holds a bounded share, never the whole cap.
- **A share for authenticated clients**: a connection is *trusted* once a request on it has
  passed the guard (:mod:`toolroute.gateway.http.auth`: a valid bearer token where ``[auth]``
  gives tokens). Connections not trusted hold at most ``max_connections`` less
  :attr:`HttpLimits.reserved_for_trusted` (by default a quarter); the rest is kept for trusted
  ones, and a trusted connection waiting between requests is closed to make room only when no
  untrusted one is waiting.
- **Open connections**: at most :attr:`HttpLimits.max_connections` (by default half the
  process's descriptor limit); at the cap (or at the untrusted share), a new connection closes
  the longest waiting untrusted one of the address with the most, then (at the cap only) the
  longest waiting trusted one, and only when none is waiting is it answered ``503`` and
  closed at once, with a warning logged at most every 10 s saying how many were refused.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from dataclasses import dataclass, field
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["TRUST_SCOPE_KEY", "HttpLimits", "limited_protocol"]

log = logging.getLogger(__name__)

TRUST_SCOPE_KEY = "toolroute.trust"
"""In an HTTP request's ASGI scope: a callable the guard calls once the request has passed it,
marking its connection trusted (module docstring)."""


def _default_connections() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 1024
    return max(16, min(4096, soft // 2))  # the rest: downstream pipes, the store, sockets out


@dataclass(frozen=True, slots=True)
class HttpLimits:
    """The bounds of one HTTP server (see the module docstring)."""

    max_head_bytes: int = 64 * 1024
    max_headers: int = 100
    head_timeout_s: float = 5.0
    keep_alive_s: int = 5
    max_connections: int = field(default_factory=_default_connections)
    max_idle_per_address: int | None = None
    """Waiting connections of one address. None: a quarter of ``max_connections``, 8 at
    least."""
    reserved_for_trusted: int | None = None
    """Connections untrusted ones may never hold. None: a quarter of ``max_connections``."""


class _TooManyHeaders(Exception):
    pass


class _Refusals:
    """Connections refused at the cap since the last warning (one line per 10 s at most)."""

    def __init__(self) -> None:
        self.count = 0
        self.logged_at = 0.0

    def note(self, cap: int) -> None:
        self.count += 1
        now = time.monotonic()
        if now - self.logged_at >= 10:
            log.warning(
                "refused %d connection(s): %d are open, the limit (max_connections)",
                self.count,
                cap,
            )
            self.count, self.logged_at = 0, now


class _Waiting:
    """The waiting connections of one server (silent, mid-head or kept alive), by peer
    address, longest waiting first."""

    def __init__(self) -> None:
        self.by_address: dict[str, dict[Any, None]] = {}
        self.evicted = 0
        self.logged_at = 0.0

    def add(self, address: str, conn: Any, cap: int) -> None:
        waiting = self.by_address.setdefault(address, {})
        waiting[conn] = None
        while len(waiting) > cap:
            self._close(address, next(iter(waiting)))

    def discard(self, address: str, conn: Any) -> None:
        waiting = self.by_address.get(address)
        if waiting is not None:
            waiting.pop(conn, None)
            if not waiting:
                del self.by_address[address]

    def evict_one(self) -> bool:
        """Close the longest waiting connection of the address with the most waiting."""
        if not self.by_address:
            return False
        address = max(self.by_address, key=lambda a: len(self.by_address[a]))
        self._close(address, next(iter(self.by_address[address])))
        return True

    def _close(self, address: str, conn: Any) -> None:
        self.discard(address, conn)
        conn.transport.close()
        self.evicted += 1
        now = time.monotonic()
        if now - self.logged_at >= 10:
            log.warning(
                "closed %d waiting connection(s) (idle, or a request head not finished) to "
                "make room for new ones (the last from %s)",
                self.evicted,
                address,
            )
            self.evicted, self.logged_at = 0, now


def _response(status: int, reason: str) -> bytes:
    body = reason.encode()
    return (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain; charset=utf-8\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode() + body


def limited_protocol(limits: HttpLimits) -> type[asyncio.Protocol]:
    """uvicorn's httptools protocol with ``limits`` (pass it as ``uvicorn.Config(http=...)``)."""
    refusals = _Refusals()
    untrusted, trusted = _Waiting(), _Waiting()
    untrusted_open: set[Any] = set()
    idle_cap = limits.max_idle_per_address or max(8, limits.max_connections // 4)
    reserved = limits.reserved_for_trusted
    untrusted_cap = limits.max_connections - (
        limits.max_connections // 4 if reserved is None else reserved
    )

    class LimitedHttpTools(HttpToolsProtocol):
        _head_bytes = 0
        _header_count = 0
        _reading_head = True
        _head_timer: asyncio.TimerHandle | None = None
        _address = ""
        _trusted = False

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._address = self.client[0] if self.client else ""
            untrusted_open.add(self)
            full = len(self.connections) > limits.max_connections
            over_share = len(untrusted_open) > untrusted_cap
            if (full or over_share) and not (
                untrusted.evict_one() or (full and not over_share and trusted.evict_one())
            ):
                refusals.note(limits.max_connections)
                self._refuse(503, "Service Unavailable")
                return
            self._start_timer()
            untrusted.add(self._address, self, idle_cap)  # silent so far

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_timer()
            self._not_waiting()
            untrusted_open.discard(self)
            super().connection_lost(exc)

        def _not_waiting(self) -> None:
            untrusted.discard(self._address, self)
            trusted.discard(self._address, self)

        def _trust(self) -> None:
            """A request on this connection passed the guard (TRUST_SCOPE_KEY)."""
            self._trusted = True
            untrusted_open.discard(self)

        def _start_timer(self) -> None:
            self._stop_timer()
            self._head_timer = self.loop.call_later(limits.head_timeout_s, self._head_late)

        def _stop_timer(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_late(self) -> None:
            self._head_timer = None
            if self._reading_head and not self.transport.is_closing():
                if self._head_bytes:
                    self._refuse(408, "Request Timeout")
                else:
                    self.transport.close()

        def _refuse(self, status: int, reason: str) -> None:
            self._stop_timer()
            if not self.transport.is_closing():
                self.transport.write(_response(status, reason))
                self.transport.close()

        def data_received(self, data: bytes) -> None:
            if self._reading_head:
                self._head_bytes += len(data)
            super().data_received(data)
            if self._reading_head and self._head_bytes > limits.max_head_bytes:
                self._refuse(431, "Request Header Fields Too Large")

        def on_message_begin(self) -> None:
            # still waiting: part of a head is no request yet, and one byte must not make a
            # connection unevictable
            if self._head_timer is None:  # a keep-alive connection's next request
                self._start_timer()
            super().on_message_begin()
            self.scope[TRUST_SCOPE_KEY] = self._trust  # type: ignore[literal-required]

        def on_header(self, name: bytes, value: bytes) -> None:
            self._header_count += 1
            if self._header_count > limits.max_headers:
                raise _TooManyHeaders  # the parser stops; uvicorn answers 400 and closes
            super().on_header(name, value)

        def on_headers_complete(self) -> None:
            self._reading_head = False
            self._stop_timer()
            self._not_waiting()  # a request is under way
            super().on_headers_complete()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._reading_head, self._head_bytes, self._header_count = True, 0, 0
                # waiting until the next request: uvicorn's keep-alive timer closes it
                (trusted if self._trusted else untrusted).add(self._address, self, idle_cap)

    return LimitedHttpTools
