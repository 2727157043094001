"""Serving over streamable HTTP (``toolroute serve --transport http``): the gateway's Starlette
app inside the HTTP guard (:func:`http_app`) and the uvicorn server that runs it
(:func:`serve_http`). Apart from :mod:`.serving` so that a gateway over stdio never imports
this HTTP stack's own modules (the guard, the status page, the connection limits): serving
imports this module once it knows it serves HTTP.
"""

from __future__ import annotations

import logging
import socket
import sys
from typing import TYPE_CHECKING

import uvicorn
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings

from toolroute.config import GatewayConfig
from toolroute.errors import ConfigError
from toolroute.gateway.http.auth import HttpGuard, is_loopback
from toolroute.gateway.http.connection_limits import HttpLimits, limited_protocol
from toolroute.gateway.http.status_page import mount_status_page
from toolroute.gateway.ops._metrics import mount_metrics
from toolroute.gateway.ops.reload import note_auth

if TYPE_CHECKING:
    from toolroute.gateway.ops.reload import Live
    from toolroute.gateway.shell.server import Gateway

__all__ = ["http_app", "serve_http"]

log = logging.getLogger(__name__)


def http_app(config: GatewayConfig, gateway: Gateway, url: str | None = None) -> HttpGuard:
    """The gateway's whole Starlette app (streamable HTTP at /mcp), inside the HTTP guard:
    Host, Origin and bearer-token checks on every route (:mod:`toolroute.gateway.http.auth`).
    ``url``: where it is served, for ``toolroute status --open``'s links."""
    app = gateway.server.streamable_http_app(
        streamable_http_path="/mcp",
        # one JSON body per POST instead of an SSE stream: cheaper, but no progress, log or
        # sampling relay during a call (the request's back-channel); off by default
        json_response=config.http.json_response,
        # an abandoned session is ended, not kept until the process exits
        session_idle_timeout=config.http.session_idle_s,
        max_request_body_size=DEFAULT_MAX_REQUEST_BODY_SIZE,  # the guard's limit, read first
        # the guard checks Host and Origin for every route, with the configured lists
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    logins = mount_status_page(app, gateway, url)  # /status*: behind the same guard
    mount_metrics(app, gateway)  # /metrics (gateway/ops/_metrics.py): behind the same guard
    guard = HttpGuard(
        app,
        clients=config.clients,
        allowed_hosts=config.http.allowed_hosts,
        allowed_origins=config.http.allowed_origins,
        logins=logins,
    )
    return guard


async def serve_http(
    config: GatewayConfig,
    gateway: Gateway,
    host: str,
    port: int,
    limits: HttpLimits | None = None,
    live: Live | None = None,
) -> None:
    """Serve over streamable HTTP; once the socket listens, say where on stderr (port 0: any
    free port, the line gives the one taken). Each connection is bounded by ``limits``
    (:class:`~toolroute.gateway.http.connection_limits.HttpLimits`: head size, count and timeout,
    keep-alive, open connections); ``live``: the running config a reload swaps, which then
    swaps the front door's tokens and lists too."""
    limits = limits if limits is not None else HttpLimits()

    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
        sock.setblocking(False)
    except OSError as e:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    bound = sock.getsockname()[1]
    note_auth(config, gateway)  # [auth] enabled = false: a warning and a line in status
    if not is_loopback(host) and not config.clients:
        log.warning(
            "listening on %s without [auth] tokens: anyone who can reach it may call your tools",
            host,
        )
    shown = f"[{host}]" if ":" in host else host
    print(f"toolroute: listening on http://{shown}:{bound}/mcp", file=sys.stderr, flush=True)
    local = {"0.0.0.0": "127.0.0.1", "::": "[::1]"}.get(host, shown)  # a browser's address
    app = http_app(config, gateway, f"http://{local}:{bound}")
    if live is not None:
        live.http = app
    cfg = uvicorn.Config(
        app,
        log_level="warning",
        timeout_graceful_shutdown=5,
        http=limited_protocol(limits),  # httptools' parser, ~1 ms of CPU less than h11
        # X-Forwarded-For names the client only from a configured proxy: uvicorn's default
        # trusts it from loopback, where anyone on the machine (or a local proxy passing it
        # on) could forge the address the status sign-in throttle keys on
        proxy_headers=bool(config.http.forwarded_allow_ips),
        forwarded_allow_ips=list(config.http.forwarded_allow_ips) or None,
        timeout_keep_alive=limits.keep_alive_s,
    )
    with sock:
        await uvicorn.Server(cfg).serve(sockets=[sock])
