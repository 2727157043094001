"""Serving: ``toolroute serve`` runs the gateway over stdio or streamable HTTP at once, while it
lists and indexes the servers, each routable as soon as it is indexed
(:mod:`toolroute.gateway.ops.startup`), then follows their changes (:mod:`.syncing`).
"""

from __future__ import annotations

import logging
import socket
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import anyio

from toolroute.catalog.models import Catalog
from toolroute.config import GatewayConfig
from toolroute.downstream.servers import DownstreamPool
from toolroute.downstream.sync import Listings
from toolroute.errors import ConfigError
from toolroute.gateway.health import snapshot
from toolroute.gateway.ops.app import build_router, gateway_embedder, make_gateway, make_pool
from toolroute.gateway.ops.follow import StoreWatch, follow_store
from toolroute.gateway.ops.status import write_status
from toolroute.gateway.ops.syncing import STATUS_RETRY_S, live_of, watch_changes
from toolroute.heap import freeze_heap, trim_heap
from toolroute.router import Router

if TYPE_CHECKING:
    from toolroute.gateway.http.auth import HttpGuard
    from toolroute.gateway.http.connection_limits import HttpLimits
    from toolroute.gateway.ops.reload import Live
    from toolroute.gateway.ops.startup import Warmup
    from toolroute.gateway.shell.server import Gateway

__all__ = ["http_app", "serve", "serve_http"]

log = logging.getLogger(__name__)


async def serve(
    config: GatewayConfig,
    transport: Literal["stdio", "http"] = "stdio",
    port: int = 8765,
    host: str = "127.0.0.1",
    reload: Callable[[], GatewayConfig] | None = None,
) -> None:
    """Serve the gateway at once, and list and index the servers behind it meanwhile, each
    routable as soon as it is indexed (:mod:`toolroute.gateway.ops.startup`); with ``reload``
    (what reads the config files again), follow edits of the config and SIGHUP
    (:mod:`toolroute.gateway.ops.reload`)."""
    from toolroute.gateway.ops.reload import follow_config
    from toolroute.gateway.ops.startup import Warmup

    pool = make_pool(config)
    async with anyio.create_task_group() as owners:
        await owners.start(pool.run)  # the servers connect while the gateway serves
        empty = build_router(config, Catalog(servers=()), gateway_embedder(config, transport))
        gateway = make_gateway(config, empty, pool)
        # what a call at start waits for: its server, or the quick ones, indexed (bounded)
        warmup = Warmup(config.settings.connect_timeout_s, pool.servers)
        gateway.warmup = warmup
        # `toolroute status` shows this gateway from its first second, not a previous one
        write_status(gateway.router.store.directory, gateway.status(), gateway.faults)
        live = live_of(config, reload, listings=Listings())
        try:
            async with gateway.continuations.serving(), anyio.create_task_group() as tg:
                watch = StoreWatch(lambda: gateway.router.store)  # approvals, other replicas
                fresh = config.servers and not empty.store.tool_hashes()
                if fresh and config.settings.expose != "all":
                    tg.start_soon(_load_model, empty)  # a fresh store: every tool is embedded
                tg.start_soon(_index_then_watch, live, pool, gateway, watch, warmup)
                tg.start_soon(follow_store, gateway, watch)  # replicas of a shared store
                if reload is not None:
                    tg.start_soon(follow_config, live, pool, gateway)
                if transport == "stdio":
                    from toolroute.gateway.shell import serve_stdio

                    # after EOF, requests under way may finish: a downstream call ends by
                    # call_timeout_s, the margin is for the gateway's own work around it
                    await serve_stdio(gateway.server, drain_s=config.settings.call_timeout_s + 10)
                else:
                    await serve_http(config, gateway, host, port, live=live)
                tg.cancel_scope.cancel()
        finally:
            gateway.record_answering()  # what the requests still answering left behind
            local_dir = gateway.router.store.directory
            gateway.router.close()
            pool.stop()
            write_status(local_dir, snapshot(pool, running=False), gateway.faults)


async def _index_then_watch(
    live: Live, pool: DownstreamPool, gateway: Gateway, watch: StoreWatch, warmup: Warmup
) -> None:
    """Index every server as it is listed, then follow their changes; the status file
    follows the start's progress meanwhile."""
    from toolroute.gateway.ops.startup import index_at_start

    async with anyio.create_task_group() as tg:
        tg.start_soon(_write_status_on_change, pool, gateway)
        connects = await index_at_start(live, pool, gateway, warmup)
        tg.cancel_scope.cancel()
    trim_heap()  # what indexing freed goes back to the OS
    freeze_heap()
    await watch_changes(live, pool, gateway, None, watch, connects)


async def _load_model(router: Router) -> None:
    """Load the embedding model in a worker thread while the servers start, so the first
    server listed is not indexed behind the model's loading."""
    try:
        await anyio.to_thread.run_sync(router.embedder.embed, ["toolroute"])
    except Exception:  # indexing loads it again, and reports what fails
        log.exception("loading the embedding model failed")


async def _write_status_on_change(pool: DownstreamPool, gateway: Gateway) -> None:
    """Write ``status.json`` whenever the pool notes a change (until cancelled: the change
    watcher does it after the start), at most every :data:`STATUS_RETRY_S`."""
    written: dict[str, Any] | None = None
    while True:
        pool.take_changes()
        status = gateway.status()
        if status != written and write_status(
            gateway.router.store.directory, status, gateway.faults
        ):
            written = status
        await anyio.sleep(STATUS_RETRY_S)
        await pool.wait_change(STATUS_RETRY_S)


def http_app(config: GatewayConfig, gateway: Gateway, url: str | None = None) -> HttpGuard:
    """The gateway's whole Starlette app (streamable HTTP at /mcp), inside the HTTP guard:
    Host, Origin and bearer-token checks on every route (:mod:`toolroute.gateway.http.auth`).
    ``url``: where it is served, for ``toolroute status --open``'s links."""
    from mcp.server.transport_security import (
        DEFAULT_MAX_REQUEST_BODY_SIZE,
        TransportSecuritySettings,
    )

    from toolroute.gateway.http.auth import HttpGuard as Guard
    from toolroute.gateway.http.status_page import mount_status_page
    from toolroute.gateway.ops._metrics import mount_metrics

    app = gateway.server.streamable_http_app(
        streamable_http_path="/mcp",
        # one JSON body per POST instead of an SSE stream: cheaper, but no progress, log or
        # sampling relay during a call (the request's back-channel); off by default
        json_response=config.http_json_response,
        # an abandoned session is ended, not kept until the process exits
        session_idle_timeout=config.http_session_idle_s,
        max_request_body_size=DEFAULT_MAX_REQUEST_BODY_SIZE,  # the guard's limit, read first
        # the guard checks Host and Origin for every route, with the configured lists
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    logins = mount_status_page(app, gateway, url)  # /status*: behind the same guard
    mount_metrics(app, gateway)  # /metrics (gateway/ops/_metrics.py): behind the same guard
    guard = Guard(
        app,
        clients=config.clients,
        allowed_hosts=config.allowed_hosts,
        allowed_origins=config.allowed_origins,
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
    import uvicorn

    from toolroute.gateway.http.auth import is_loopback
    from toolroute.gateway.http.connection_limits import HttpLimits, limited_protocol
    from toolroute.gateway.ops.reload import note_auth

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
        proxy_headers=bool(config.forwarded_allow_ips),
        forwarded_allow_ips=list(config.forwarded_allow_ips) or None,
        timeout_keep_alive=limits.keep_alive_s,
    )
    with sock:
        await uvicorn.Server(cfg).serve(sockets=[sock])
