"""Serving: ``toolroute serve`` runs the gateway over stdio or streamable HTTP at once, while it
lists and indexes the servers, each routable as soon as it is indexed
(:mod:`toolroute.gateway.ops.startup`), then follows their changes (:mod:`.syncing`). The HTTP
front is in :mod:`.serving_http`, imported only when the gateway serves HTTP.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import anyio

from toolroute.catalog.models import Catalog
from toolroute.config import GatewayConfig
from toolroute.downstream.servers import Downstreams
from toolroute.downstream.sync import Listings
from toolroute.gateway.health import snapshot
from toolroute.gateway.ops.app import build_router, gateway_embedder, make_downstreams, make_gateway
from toolroute.gateway.ops.follow import StoreWatch, follow_store
from toolroute.gateway.ops.reload import follow_config
from toolroute.gateway.ops.startup import Warmup, index_at_start
from toolroute.gateway.ops.status import write_status
from toolroute.gateway.ops.syncing import STATUS_RETRY_S, live_of, watch_changes
from toolroute.gateway.shell import serve_stdio
from toolroute.heap import freeze_heap, trim_heap
from toolroute.router import Router

if TYPE_CHECKING:
    from toolroute.gateway.ops.reload import Live
    from toolroute.gateway.shell.server import Gateway

__all__ = ["serve"]

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
    downstreams = make_downstreams(config)
    async with anyio.create_task_group() as owners:
        await owners.start(downstreams.run)  # the servers connect while the gateway serves
        empty = build_router(config, Catalog(servers=()), gateway_embedder(config, transport))
        # what a call at start waits for: its server, or the quick ones, indexed (bounded)
        warmup = Warmup(config.settings.connect_timeout_s, downstreams.servers)
        gateway = make_gateway(config, empty, downstreams, warmup)
        shared = gateway.shared
        # `toolroute status` shows this gateway from its first second, not a previous one
        write_status(shared.router.store.directory, gateway.status(), shared.faults)
        live = live_of(config, reload, listings=Listings())
        try:
            async with gateway.continuations.serving(), anyio.create_task_group() as tg:
                watch = StoreWatch(lambda: shared.router.store)  # approvals, other replicas
                fresh = config.servers and not empty.store.tool_hashes()
                if fresh and config.settings.expose != "all":
                    tg.start_soon(_load_model, empty)  # a fresh store: every tool is embedded
                tg.start_soon(_index_then_watch, live, downstreams, gateway, watch, warmup)
                tg.start_soon(follow_store, gateway, watch)  # replicas of a shared store
                if reload is not None:
                    tg.start_soon(follow_config, live, downstreams, gateway)
                if transport == "stdio":
                    # after EOF, requests under way may finish: a downstream call ends by
                    # call_timeout_s, the margin is for the gateway's own work around it
                    await serve_stdio(gateway.server, drain_s=config.settings.call_timeout_s + 10)
                else:  # the HTTP stack's own modules: only a gateway over HTTP imports them
                    from toolroute.gateway.ops.serving_http import serve_http

                    await serve_http(config, gateway, host, port, live=live)
                tg.cancel_scope.cancel()
        finally:
            gateway.record_answering()  # what the requests still answering left behind
            local_dir = shared.router.store.directory
            shared.router.close()
            downstreams.stop()
            write_status(local_dir, snapshot(downstreams, running=False), shared.faults)


async def _index_then_watch(
    live: Live, downstreams: Downstreams, gateway: Gateway, watch: StoreWatch, warmup: Warmup
) -> None:
    """Index every server as it is listed, then follow their changes; the status file
    follows the start's progress meanwhile."""
    async with anyio.create_task_group() as tg:
        tg.start_soon(_write_status_on_change, downstreams, gateway)
        connects = await index_at_start(live, downstreams, gateway, warmup)
        tg.cancel_scope.cancel()
    trim_heap()  # what indexing freed goes back to the OS
    freeze_heap()
    await watch_changes(live, downstreams, gateway, None, watch, connects)


async def _load_model(router: Router) -> None:
    """Load the embedding model in a worker thread while the servers start, so the first
    server listed is not indexed behind the model's loading."""
    try:
        await anyio.to_thread.run_sync(router.embedder.embed, ["toolroute"])
    except Exception:  # indexing loads it again, and reports what fails
        log.exception("loading the embedding model failed")


async def _write_status_on_change(downstreams: Downstreams, gateway: Gateway) -> None:
    """Write ``status.json`` whenever the downstreams note a change (until cancelled: the change
    watcher does it after the start), at most every :data:`STATUS_RETRY_S`."""
    written: dict[str, Any] | None = None
    while True:
        downstreams.take_changes()
        status = gateway.status()
        if status != written and write_status(
            gateway.shared.router.store.directory, status, gateway.shared.faults
        ):
            written = status
        await anyio.sleep(STATUS_RETRY_S)
        await downstreams.wait_change(STATUS_RETRY_S)
