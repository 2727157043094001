"""Wiring: config → downstream pool → sync (list, hash, index) → gateway server.

``sync_once`` is ``toolroute sync``; ``serve`` is ``toolroute serve``: it serves the gateway
over stdio or streamable HTTP at once while it lists and indexes the servers, each routable
as soon as it is indexed (:mod:`toolroute.gateway.ops.startup`), and re-lists the servers when one
sends
``notifications/tools/list_changed``, when one (re)connects (so a gateway started with no
server up picks them up as they come), when a quarantined tool is approved, and every
``relist_interval_s`` (a tool changed without a notification). Every sync reviews the tools
against their pins (:mod:`toolroute.gateway.calls.quarantine`); the servers' state is written to
``status.json`` in the store (:mod:`toolroute.gateway.ops.status`) whenever it changes.
"""

from __future__ import annotations

import hashlib
import logging
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio

from toolroute.catalog.models import Catalog, Tool
from toolroute.config import SEPARATOR, GatewayConfig
from toolroute.downstream.oauth import downstream_auth
from toolroute.downstream.servers import Downstream, DownstreamError, DownstreamPool, ListedServer
from toolroute.downstream.sync import Listings, ServerStatus, catalog_from_listing, list_all
from toolroute.errors import ConfigError
from toolroute.gateway.calls.quarantine import Held, Quarantine, revision
from toolroute.gateway.ops._metrics import attach_metrics_and_limits
from toolroute.gateway.ops.follow import StoreWatch, follow_store
from toolroute.gateway.ops.status import snapshot, write_status
from toolroute.heap import freeze_heap, trim_heap
from toolroute.index.warm import slices, warm_cache
from toolroute.llm.client import ChatLLM, llm_cache_path
from toolroute.registry.suggest import attach
from toolroute.route.adaptive import AdaptiveParams
from toolroute.route.strategy import RouteParams
from toolroute.router import IndexReport, Router
from toolroute.store import StoreTarget, default_store_target, is_store_url, open_store

if TYPE_CHECKING:
    from toolroute.embed.base import Embedder
    from toolroute.gateway.http._auth import HttpGuard
    from toolroute.gateway.http._connection_limits import HttpLimits
    from toolroute.gateway.ops.reload import Live
    from toolroute.gateway.ops.startup import Warmup
    from toolroute.gateway.shell.server import Gateway
    from toolroute.index.build import Progress

__all__ = [
    "SyncResult",
    "http_app",
    "make_gateway",
    "resync",
    "review",
    "running_pool",
    "serve",
    "serve_http",
    "sync_once",
    "sync_router",
]

log = logging.getLogger(__name__)

RELIST_DEBOUNCE_S = 1.0
"""A server is re-listed at most this often on its own list_changed or reconnect."""
SLICE_TOOLS = 1000
"""A big server is embedded this many tools at a time at start (between slices, a smaller
server's step goes first)."""
STATUS_RETRY_S = 1.0
"""How soon a status.json that could not be written (full disk, read-only) is tried again."""


@dataclass(frozen=True, slots=True)
class SyncResult:
    servers: list[ServerStatus]
    index: IndexReport
    quarantined: list[Held] = field(default_factory=list)
    listings: Listings | None = field(default=None, compare=False)
    """Each server's listing at this sync: the change watcher re-lists only what changed."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "servers": {s.name: s.to_dict() for s in self.servers},
            **self.index.to_dict(),
            "quarantined": {h.name: h.to_dict() for h in self.quarantined},
        }


def gateway_store_dir(config: GatewayConfig) -> StoreTarget:
    """Default store of a gateway: one per config file under the per-user data dir, so two
    gateways (or a gateway and `toolroute route`) never overwrite each other's catalog;
    ``TOOLROUTE_STORE=postgresql://…`` is shared as is (replicas)."""
    default = default_store_target()
    if config.path is None or is_store_url(default):
        return default
    digest = hashlib.sha256(str(config.path).encode()).hexdigest()[:12]
    return Path(default) / "gateways" / f"{config.path.stem}-{digest}"


def make_downstream(config: GatewayConfig, name: str) -> Downstream:
    spec = config.servers[name]
    d = Downstream(
        name,
        spec,
        connect_timeout_s=config.connect_timeout_s,
        call_timeout_s=config.call_timeout_s,
        max_result_bytes=config.max_result_bytes,
        auth=downstream_auth(name, spec, store_dir_of(config), config.path, config.store),
    )
    d.curation = config.curation.server(name)  # renames, overrides, hidden (catalog/curation)
    return d


def live_of(
    config: GatewayConfig,
    load: Callable[[], GatewayConfig] | None = None,
    listings: Listings | None = None,
) -> Live:
    """The running config of a gateway, with what a reload needs from this module (the
    reload module does not import it)."""
    from toolroute.gateway.ops.reload import Live

    return Live(config, load, listings=listings, make_downstream=make_downstream, resync=resync)


def make_pool(config: GatewayConfig) -> DownstreamPool:
    return DownstreamPool({name: make_downstream(config, name) for name in config.servers})


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


def store_dir_of(config: GatewayConfig) -> StoreTarget:
    return config.store or gateway_store_dir(config)


async def review(
    config: GatewayConfig,
    pool: DownstreamPool,
    listings: Listings | None = None,
    only: Collection[str] | None = None,
    among: Collection[str] | None = None,
) -> tuple[Catalog, list[ServerStatus], list[Held]]:
    """List every server and hold back the tools in quarantine: the catalog to index. With
    ``listings``, only the servers in ``only`` (None: all) are listed again, the others'
    last listing is reused. With ``among`` (and ``listings``), the catalog of those servers
    alone (the ones indexed so far at start), whose names are checked against every server
    listed so far: a look-alike of a tool a server still being indexed lists is held before
    it is ever routable. The review itself (hashes, pins, poisoned descriptions: seconds for
    tens of thousands of tools) runs in a worker thread, so the gateway answers meanwhile."""
    if listings is None:
        listing = await list_all(pool, config.connect_timeout_s)
    else:
        listing = await listings.refresh(pool, config.connect_timeout_s, only, among)
    others: list[Tool] = []
    # only a name not plain ASCII is ever flagged a look-alike (gateway/calls/_poison.py):
    # with none among the reviewed servers, the others' names are not needed
    if listings is not None and among is not None and not _plain(listing):
        others = [
            Tool(server=n, name=t.name, description="", input_schema={})
            for n, x in listings.last.items()
            if n not in among and n in pool.servers and isinstance(x, ListedServer)
            for t in x.listed
        ]
    catalog, statuses, held = await anyio.to_thread.run_sync(
        _review, config, listing, among, others
    )
    catalog = _without(catalog, held, pool)
    for s in statuses:
        pool[s.name].tools = s.tools
    pool.note_change()  # the tools counts (and the quarantine set next) are in the status
    return catalog, statuses, held


def _plain(listing: Mapping[str, ListedServer | DownstreamError]) -> bool:
    """Whether every tool name listed is printable ASCII."""
    return all(
        t.name.isascii() and t.name.isprintable()
        for x in listing.values()
        if isinstance(x, ListedServer)
        for t in x.listed
    )


def _review(
    config: GatewayConfig,
    listing: Mapping[str, ListedServer | DownstreamError],
    among: Collection[str] | None,
    others: Sequence[Tool],
) -> tuple[Catalog, list[ServerStatus], list[Held]]:
    """:func:`review`'s part in the store, on a connection of its own (a worker thread)."""
    with open_store(store_dir_of(config)) as store:
        previous = store.load_catalog() if store.tool_hashes() else None
        catalog, statuses = catalog_from_listing(config, listing, previous)
        if among is not None:
            catalog = Catalog(servers=tuple(s for s in catalog.servers if s.id in among))
            statuses = [s for s in statuses if s.name in among]
        # the rug-pull check pins what the servers listed, before curation rewrote it; a
        # server that did not answer now kept its reviewed (and curated) tools
        listed = {
            n: replace(x, tools=x.listed, original=None)
            for n, x in listing.items()
            if isinstance(x, ListedServer)
        }
        original, _ = catalog_from_listing(config, listed, None)
        _, held, _ = Quarantine(store, config.approved).review(original, others)
    return catalog, statuses, held


def _without(catalog: Catalog, held: list[Held], pool: DownstreamPool) -> Catalog:
    """The curated catalog without the tools whose original is held."""
    names = {h.name for h in held}
    if not names:
        return catalog
    return Catalog(
        servers=tuple(
            replace(
                s,
                tools=tuple(
                    t
                    for t in s.tools
                    if f"{s.id}{SEPARATOR}{_own(pool, s.id, t.name)}" not in names
                ),
            )
            for s in catalog.servers
        )
    )


def _own(pool: DownstreamPool, server: str, tool: str) -> str:
    d = pool.servers.get(server)
    return d.renames.get(tool, tool) if d is not None else tool


def held_by_name(held: list[Held], pool: DownstreamPool) -> dict[str, Held]:
    """The held tools by their own and their curated names (call_tool refuses either)."""
    out = {h.name: h for h in held}
    for d in pool.servers.values():
        for exposed, own in d.renames.items():
            if (h := out.get(f"{d.name}{SEPARATOR}{own}")) is not None:
                out[f"{d.name}{SEPARATOR}{exposed}"] = h
    return out


def describe_find_tools(gateway: Gateway) -> None:
    """find_tools' description names the servers behind the gateway (one line)."""
    from toolroute.catalog.curation import servers_line
    from toolroute.gateway.shell.server import FIND_TOOLS

    line = servers_line([(s.id, len(s.tools)) for s in gateway.router.catalog.servers])
    description = f"{FIND_TOOLS.description} {line}"
    gateway.find_tools_tool = FIND_TOOLS.model_copy(update={"description": description})


def build_router(
    config: GatewayConfig, catalog: Catalog, embedder: Embedder | None = None
) -> Router:
    target = store_dir_of(config)
    llm = None
    if config.llm:
        with open_store(target) as store:  # the LLM cache is a local file, even beside PostgreSQL
            llm = ChatLLM(config.llm, cache_path=llm_cache_path(store.directory))
    adaptive = AdaptiveParams(value_usd=config.value_usd, values=config.values)
    return Router(
        catalog,
        store=target,
        embedder=embedder,
        params=RouteParams(llm=llm, adaptive=adaptive, abstain=config.abstain),
    )


async def sync_router(
    config: GatewayConfig,
    pool: DownstreamPool,
    embedder: Embedder | None = None,
    progress: Progress | None = None,
) -> tuple[Router, SyncResult]:
    """List every server, index what changed, and return a ready router (over no tools at
    all when no server answered: the gateway still starts and picks them up later)."""
    listings = Listings()
    catalog, statuses, held = await review(config, pool, listings)
    router = build_router(config, catalog, embedder)
    report = index_for(config, router, catalog, progress)
    return router, SyncResult(statuses, report, held, listings)


def index_for(
    config: GatewayConfig, router: Router, catalog: Catalog, progress: Progress | None = None
) -> IndexReport:
    """Index ``catalog`` for routing; a gateway that does not route (pass-through,
    ``expose = "all"``) and a catalog with no tools only store the catalog, so no embedding
    model is loaded (a stray ``find_tools`` would index on its first query)."""
    if catalog.tool_count and config.expose != "all":
        return router.index(progress)
    sync = router.store.sync_catalog(catalog)
    return IndexReport(sync.added, sync.updated, sync.removed, sync.unchanged, 0)


async def sync_once(config: GatewayConfig, progress: Progress | None = None) -> SyncResult:
    async with running_pool(config) as pool:
        router, result = await sync_router(config, pool, progress=progress)
        router.close()
    return result


def gateway_embedder(config: GatewayConfig, transport: str = "stdio") -> Embedder:
    """The embedder of a serving gateway: the default model on one intra-op thread (it embeds
    one short query at a time beside the event loop; a second thread costs more CPU than it
    saves, as benchmarks/load.py shows), unless ``TOOLROUTE_THREADS`` says otherwise, behind
    an LRU of query vectors (``query_cache``). Over HTTP, ``TOOLROUTE_EMBED_WORKERS=N``
    embeds in N worker processes instead (embed/workers.py); stdio stays one process."""
    import os

    from toolroute.embed.onnx import OnnxEmbedder
    from toolroute.embed.recent import QueryMemo

    raw = os.environ.get("TOOLROUTE_EMBED_WORKERS", "0")
    if not raw.isdigit():
        raise ConfigError(f"TOOLROUTE_EMBED_WORKERS must be a whole number, got {raw!r}")
    if transport == "http" and int(raw) > 0:
        from toolroute.embed.workers import ProcessEmbedder

        return QueryMemo(ProcessEmbedder(int(raw)), size=config.query_cache)
    threads = None if os.environ.get("TOOLROUTE_THREADS") else 1
    return QueryMemo(OnnxEmbedder(threads=threads), size=config.query_cache)


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
        warmup = Warmup(config.connect_timeout_s, pool.servers)
        gateway.warmup = warmup
        # `toolroute status` shows this gateway from its first second, not a previous one
        write_status(gateway.router.store.directory, gateway.status(), gateway.faults)
        live = live_of(config, reload, listings=Listings())
        try:
            async with gateway.continuations.serving(), anyio.create_task_group() as tg:
                watch = StoreWatch(lambda: gateway.router.store)  # approvals, other replicas
                fresh = config.servers and not empty.store.tool_hashes()
                if fresh and config.expose != "all":
                    tg.start_soon(_load_model, empty)  # a fresh store: every tool is embedded
                tg.start_soon(_index_then_watch, live, pool, gateway, watch, warmup)
                tg.start_soon(follow_store, gateway, watch)  # replicas of a shared store
                if reload is not None:
                    tg.start_soon(follow_config, live, pool, gateway)
                if transport == "stdio":
                    from toolroute.gateway.shell._stdio_server import serve_stdio

                    # after EOF, requests under way may finish: a downstream call ends by
                    # call_timeout_s, the margin is for the gateway's own work around it
                    await serve_stdio(gateway.server, drain_s=config.call_timeout_s + 10)
                else:
                    await serve_http(config, gateway, host, port)
                tg.cancel_scope.cancel()
        finally:
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
    await _watch_changes(live, pool, gateway, None, watch, connects)


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
    Host, Origin and bearer-token checks on every route (:mod:`toolroute.gateway.http._auth`).
    ``url``: where it is served, for ``toolroute status --open``'s links."""
    from mcp.server.transport_security import (
        DEFAULT_MAX_REQUEST_BODY_SIZE,
        TransportSecuritySettings,
    )

    from toolroute.gateway.http._auth import HttpGuard as Guard
    from toolroute.gateway.http._status_page import mount_status_page
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
    gateway.http_guard = guard  # a config reload swaps its tokens and lists
    return guard


async def serve_http(
    config: GatewayConfig,
    gateway: Gateway,
    host: str,
    port: int,
    limits: HttpLimits | None = None,
) -> None:
    """Serve over streamable HTTP; once the socket listens, say where on stderr (port 0: any
    free port, the line gives the one taken). Each connection is bounded by ``limits``
    (:class:`~toolroute.gateway.http._connection_limits.HttpLimits`: head size, count and timeout,
    keep-alive, open connections)."""
    import uvicorn

    from toolroute.gateway.http._auth import is_loopback
    from toolroute.gateway.http._connection_limits import HttpLimits, limited_protocol
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
    cfg = uvicorn.Config(
        http_app(config, gateway, f"http://{local}:{bound}"),
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


def make_gateway(config: GatewayConfig, router: Router, pool: DownstreamPool) -> Gateway:
    """The gateway with every setting of the config (gates, presentation, events)."""
    from toolroute.gateway.shell.server import Gateway
    from toolroute.present.events import EventLog, OtelExporter
    from toolroute.present.presenter import PresentConfig, Presenter

    presenter = Presenter(
        router.catalog,
        PresentConfig(top_k=config.k, threshold=config.threshold, pinned=config.pinned),
    )
    gateway = Gateway(
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
        request_spans=config.otel,
    )
    attach_metrics_and_limits(gateway, config)  # gateway/ops/_metrics.py, gateway/calls/_limits.py
    describe_find_tools(gateway)
    if config.code_mode is not None:  # the sandbox is imported only where code mode is on
        from toolroute.codemode.execute import install as install_code_mode

        install_code_mode(gateway, config.code_mode)  # codemode/: execute, signatures
    if config.registry.url:  # servers suggested where no tool fits; unset: no registry asked
        registry = Path(router.store.directory) / "registry"
        attach(gateway, config, registry, store_dir_of(config))
    return gateway


async def _watch_changes(
    source: Live | GatewayConfig,
    pool: DownstreamPool,
    gateway: Gateway,
    listings: Listings | None = None,
    watch: StoreWatch | None = None,
    connects: Mapping[str, int] | None = None,
) -> None:
    """Re-list a server when it says its tools changed (notifications/tools/list_changed) or
    (re)connects, at most once per :data:`RELIST_DEBOUNCE_S` (notifications in between are
    coalesced: a server that announces a change on every listing cannot keep the gateway
    listing), reusing the other servers' last listing; re-review without listing when a
    held tool is approved; re-list every server each relist_interval_s (a tool changed
    without a notification). Swap the router only when the tools or the quarantine changed.
    Writes status.json on every change. With a :class:`~toolroute.gateway.ops.reload.Live`,
    its config is read each turn (a reload swaps it). A server re-listed only because its
    tools may have changed unannounced (after its calls, or when its list expired) that lists
    exactly what it listed before is not reviewed again: nothing would change.

    Between turns it sleeps on the pool's change event (a server's tools, connection or
    status, a fault, a store notification), waking on its own only when a debounced server
    is due, at the relist interval, to retry an unwritten status file, and, for a store no
    notification covers (SQLite), every ``file_check_s`` for :class:`StoreWatch`'s look."""
    from toolroute.gateway.ops.reload import Live

    live = source if isinstance(source, Live) else live_of(source, listings=listings)
    if live.listings is None:
        live.listings = Listings()
    listings = live.listings
    config = live.config
    watch = watch if watch is not None else StoreWatch(lambda: gateway.router.store)
    # each server's connection count at its last listing (``connects``: given by the start)
    connects = {d.name: d.connects for d in pool.servers.values()} | dict(connects or {})
    listed_at: dict[str, float] = {}
    rev = revision(gateway.router.store)
    next_relist = anyio.current_time() + config.relist_interval_s
    written: dict[str, Any] | None = None
    reviewed: GatewayConfig | None = None  # the config of this loop's last review
    watch.on_notify = pool.note_change
    faults = getattr(gateway, "faults", None)
    if faults is not None:
        faults.on_change = pool.note_change
    while True:
        pool.take_changes()  # before reading the state: a change from now on wakes the wait
        config = live.config
        status = gateway.status()
        if status != written and write_status(
            gateway.router.store.directory, status, gateway.faults
        ):  # not written (full disk, read-only): noted in the faults, tried again next turn
            written = status
        now = anyio.current_time()
        pending = {
            d.name: listed_at.get(d.name, -RELIST_DEBOUNCE_S) + RELIST_DEBOUNCE_S
            for d in pool.servers.values()
            if d.tools_changed.is_set() or connects.get(d.name) != d.connects
        }
        changed = [d for d in pool.servers.values() if pending.get(d.name, now + 1) <= now]
        # the store is read only when it may have changed (StoreWatch), not every turn
        new_rev = revision(gateway.router.store) if watch.changed() else rev
        due = now >= next_relist
        if not (changed or due or new_rev != rev):
            wake = min([next_relist, *pending.values()])  # a debounced server's turn
            if status != written:  # the status file could not be written: try again
                wake = min(wake, now + STATUS_RETRY_S)
            if not (gateway.router.store.shared and watch.listening):
                # no notification: look when StoreWatch's next look is due (it was just
                # asked, so a hair later than file_check_s from now)
                wake = min(wake, now + watch.file_check_s + 0.01)
            await pool.wait_change(wake - now)
            continue
        # nothing but a possible unannounced change: no reconnect, approval or new config,
        # and every server's last listing worked (a failed one is listed at every review)
        maybe = not due and new_rev == rev and config is reviewed
        maybe = maybe and all(connects.get(d.name) == d.connects for d in changed)
        maybe = maybe and all(isinstance(listings.last.get(n), ListedServer) for n in pool.servers)
        for d in pool.servers.values() if due else changed:
            d.tools_changed = anyio.Event()  # a notification from now on means another change
            connects[d.name] = d.connects
            listed_at[d.name] = now
        rev = new_rev
        if due:
            next_relist = now + config.relist_interval_s
        only = None if due else {d.name for d in changed}
        try:
            async with live.lock:
                if maybe and only:
                    if await _lists_as_before(pool, listings, only, config.connect_timeout_s):
                        continue
                    only = set()  # listed just now: the review reuses that listing
                await resync(config, pool, gateway, listings, only)
                reviewed = config
        except Exception:  # keep serving the previous index rather than dying
            log.exception("re-listing the servers failed; keeping the previous index")


async def _embed_new(
    config: GatewayConfig,
    router: Router,
    catalog: Catalog,
    progress: Callable[[int, int], None] | None,
) -> None:
    """Embed the texts of ``catalog``'s index the cache lacks, in a worker thread, with
    ``router``'s embedder, documents and questions."""
    r = router
    if not catalog.tool_count:
        return
    await anyio.to_thread.run_sync(
        warm_cache,
        catalog,
        store_dir_of(config),
        r.embedder,
        r.documents,
        getattr(r.questions, "name", None),
        progress,
    )


async def _lists_as_before(
    pool: DownstreamPool, listings: Listings, names: Collection[str], timeout_s: float
) -> bool:
    """List ``names`` again (kept in ``listings``): whether each listed exactly what it listed
    last time (a failed listing never counts as the same)."""
    before = {n: listings.last.get(n) for n in names}
    now = await listings.refresh(pool, timeout_s, names)
    return all(
        isinstance(now.get(n), ListedServer) and now.get(n) == was for n, was in before.items()
    )


async def resync(
    config: GatewayConfig,
    pool: DownstreamPool,
    gateway: Gateway,
    listings: Listings | None = None,
    only: Collection[str] | None = None,
    *,
    among: Collection[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    embed_only: bool = False,
    between: Callable[[], Awaitable[None]] | None = None,
) -> IndexReport | None:
    """List again (with ``listings``: only the servers in ``only``, None for all; ``among``:
    the catalog of those servers only, :func:`review`); rebuild and swap the gateway's
    router if the tools or quarantine changed (None if not). New texts are embedded in a
    worker thread (:func:`~toolroute.index.warm.warm_cache`, ``progress(done, total)``
    from that thread), so the gateway answers meanwhile; the index is then assembled from
    the cache. ``embed_only``: only embed ``among``'s last listed tools into the cache, no
    review and no swap (start-up does this outside the reload lock, so one server's long
    embedding holds back no other's swap), in slices of :data:`SLICE_TOOLS` tools, awaiting
    ``between()`` before each (start-up lets a small server's step go first there)."""
    if embed_only:
        if listings is not None and config.expose != "all":
            listed = {n: x for n, x in listings.last.items() if among is None or n in among}
            whole, _ = await anyio.to_thread.run_sync(catalog_from_listing, config, listed, None)
            done, total = 0, whole.tool_count
            for part in slices(whole, SLICE_TOOLS):
                if between is not None:
                    await between()
                n = part.tool_count

                def shown(d: int, t: int, done: int = done, n: int = n) -> None:
                    if progress is not None:  # in tools of the whole step
                        progress(done + n * d // max(t, 1), total)

                await _embed_new(config, gateway.router, part, shown)
                done += n
        return None
    catalog, statuses, held = await review(config, pool, listings, only, among)
    before = {(t.key, t.hash) for t in gateway.router.catalog.tools()}
    after = {(t.key, t.hash) for t in catalog.tools()}
    gateway.quarantined = held_by_name(held, pool)
    if before == after:
        return None
    router = build_router(config, catalog, gateway.router.embedder)
    try:
        # only new or changed tools have texts to embed; without them (tools removed or
        # held) nothing awaits between the quarantine above and the swap below
        routes = bool(catalog.tool_count) and config.expose != "all"
        if routes and not after <= before:
            await _embed_new(config, router, catalog, progress)
        # nothing to route (pass-through) or no tools: the catalog alone, no model
        report = router.index() if routes else index_for(config, router, catalog)
    except BaseException:
        router.close()
        raise
    gateway.replace_router(router).close()
    describe_find_tools(gateway)
    trim_heap()
    log.info("re-listed: %s", SyncResult(statuses, report, held).to_dict())
    return report
