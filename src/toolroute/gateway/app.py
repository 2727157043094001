"""Wiring: config → downstream pool → sync (list, hash, index) → gateway server.

``sync_once`` is ``toolroute sync``; ``serve`` is ``toolroute serve``: it syncs, serves the
gateway over stdio or streamable HTTP, and resyncs a server when it sends
``notifications/tools/list_changed``.
"""

from __future__ import annotations

import hashlib
import logging
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio

from toolroute.config import GatewayConfig
from toolroute.errors import ConfigError
from toolroute.llm.client import ChatLLM, llm_cache_path
from toolroute.route.strategy import RouteParams
from toolroute.router import IndexReport, Router
from toolroute.sources.pool import Downstream, DownstreamPool
from toolroute.sources.sync import ServerStatus, catalog_from_listing, list_all
from toolroute.store import Store, default_store_dir

__all__ = [
    "SyncResult",
    "http_app",
    "make_gateway",
    "running_pool",
    "serve",
    "serve_http",
    "sync_once",
    "sync_router",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SyncResult:
    servers: list[ServerStatus]
    index: IndexReport

    def to_dict(self) -> dict[str, Any]:
        return {"servers": {s.name: s.to_dict() for s in self.servers}, **self.index.to_dict()}


def gateway_store_dir(config: GatewayConfig) -> Path:
    """Default store of a gateway: one per config file under the per-user data dir, so two
    gateways (or a gateway and `toolroute route`) never overwrite each other's catalog."""
    if config.path is None:
        return default_store_dir()
    digest = hashlib.sha256(str(config.path).encode()).hexdigest()[:12]
    return default_store_dir() / "gateways" / f"{config.path.stem}-{digest}"


def make_pool(config: GatewayConfig) -> DownstreamPool:
    return DownstreamPool(
        {
            name: Downstream(
                name,
                spec,
                connect_timeout_s=config.connect_timeout_s,
                call_timeout_s=config.call_timeout_s,
            )
            for name, spec in config.servers.items()
        }
    )


@asynccontextmanager
async def running_pool(config: GatewayConfig) -> AsyncIterator[DownstreamPool]:
    """Start every downstream owner task; stop them all on exit."""
    pool = make_pool(config)
    async with anyio.create_task_group() as tg:
        await tg.start(pool.run)
        try:
            await pool.wait_connected(config.connect_timeout_s)
            yield pool
        finally:
            pool.stop()


async def sync_router(
    config: GatewayConfig, pool: DownstreamPool, embedder: Any = None
) -> tuple[Router, SyncResult]:
    """List every server, index what changed, and return a ready router."""
    store_dir = config.store or gateway_store_dir(config)
    listing = await list_all(pool, config.connect_timeout_s)
    with Store(store_dir) as store:
        previous = store.load_catalog() if store.tool_hashes() else None
    catalog, statuses = catalog_from_listing(config, listing, previous)
    llm = ChatLLM(config.llm, cache_path=llm_cache_path(store_dir)) if config.llm else None
    router = Router(catalog, store=store_dir, embedder=embedder, params=RouteParams(llm=llm))
    report = router.index()
    return router, SyncResult(statuses, report)


async def sync_once(config: GatewayConfig) -> SyncResult:
    async with running_pool(config) as pool:
        router, result = await sync_router(config, pool)
        router.close()
    return result


async def serve(
    config: GatewayConfig,
    transport: Literal["stdio", "http"] = "stdio",
    port: int = 8765,
    host: str = "127.0.0.1",
) -> None:
    async with running_pool(config) as pool:
        router, result = await sync_router(config, pool)
        for s in result.servers:
            if s.status != "ok":
                log.warning("server %s: %s (its last known tools are kept)", s.name, s.error)
        gateway = make_gateway(config, router, pool)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_watch_changes, config, pool, gateway)
                if transport == "stdio":
                    from mcp.server.stdio import stdio_server

                    async with stdio_server() as (read, write):
                        await gateway.server.run(
                            read, write, gateway.server.create_initialization_options()
                        )
                else:
                    await serve_http(config, gateway, host, port)
                tg.cancel_scope.cancel()
        finally:
            gateway.router.close()


def http_app(config: GatewayConfig, gateway: Any) -> Any:
    """The gateway's whole Starlette app (streamable HTTP at /mcp), inside the HTTP guard:
    Host, Origin and bearer-token checks on every route (:mod:`toolroute.gateway.auth`)."""
    from mcp.server.transport_security import TransportSecuritySettings

    from toolroute.gateway.auth import HttpGuard
    from toolroute.gateway.status_page import mount_status_page

    app = gateway.server.streamable_http_app(
        streamable_http_path="/mcp",
        # the guard checks Host and Origin for every route, with the configured lists
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    mount_status_page(app, gateway)  # GET /status, /status.json: behind the same guard
    return HttpGuard(
        app,
        clients=config.clients,
        allowed_hosts=config.allowed_hosts,
        allowed_origins=config.allowed_origins,
    )


async def serve_http(config: GatewayConfig, gateway: Any, host: str, port: int) -> None:
    """Serve over streamable HTTP; once the socket listens, say where on stderr (port 0: any
    free port, the line gives the one taken)."""
    import uvicorn

    from toolroute.gateway.auth import is_loopback

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
    if not is_loopback(host) and not config.clients:
        log.warning(
            "listening on %s without [auth] tokens: anyone who can reach it may call your tools",
            host,
        )
    shown = f"[{host}]" if ":" in host else host
    print(f"toolroute: listening on http://{shown}:{bound}/mcp", file=sys.stderr, flush=True)
    cfg = uvicorn.Config(
        http_app(config, gateway), log_level="warning", timeout_graceful_shutdown=5
    )
    with sock:
        await uvicorn.Server(cfg).serve(sockets=[sock])


def make_gateway(config: GatewayConfig, router: Router, pool: DownstreamPool) -> Any:
    """The gateway with every setting of the config (gates, presentation, events)."""
    from toolroute.gateway.server import Gateway
    from toolroute.present.events import EventLog, OtelExporter
    from toolroute.present.presenter import PresentConfig, Presenter

    presenter = Presenter(
        router.catalog,
        PresentConfig(top_k=config.k, threshold=config.threshold, pinned=config.pinned),
    )
    return Gateway(
        router,
        pool,
        k=config.k,
        strategy=config.strategy,
        call_timeout_s=config.call_timeout_s,
        expose=config.expose,
        call_gate=config.call_gate,
        clients={c.client_id: c for c in config.clients},
        presenter=presenter,
        tool_gates=config.tool_gates,
        server_gates=config.server_gates,
        scopes=config.scopes,
        milestones=config.milestones,
        events=[
            *([EventLog(config.events_log)] if config.events_log else []),
            *([OtelExporter()] if config.otel else []),
        ],
    )


async def _watch_changes(config: GatewayConfig, pool: DownstreamPool, gateway: Any) -> None:
    """Resync when any server says its tools changed (notifications/tools/list_changed)."""
    while True:
        changed = [d for d in pool.servers.values() if d.tools_changed.is_set()]
        if not changed:
            await anyio.sleep(0.2)
            continue
        for d in changed:
            d.tools_changed = anyio.Event()
        try:
            router, result = await sync_router(config, pool, embedder=gateway.router.embedder)
        except Exception:  # keep serving the previous index rather than dying
            log.exception("resync after tools/list_changed failed; keeping the previous index")
            continue
        gateway.replace_router(router).close()
        log.info("resynced after tools/list_changed: %s", result.to_dict())
