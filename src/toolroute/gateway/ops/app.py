"""Wiring: a config's downstream downstreams, router and gateway (:func:`make_gateway`), and the
store and embedder a gateway uses. :mod:`.syncing` lists and indexes the servers behind it,
:mod:`.serving` serves it (``toolroute serve``).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from toolroute.catalog.curation import servers_line
from toolroute.catalog.models import Catalog
from toolroute.config import GatewayConfig
from toolroute.downstream.oauth import downstream_auth
from toolroute.downstream.servers import Downstream, Downstreams
from toolroute.embed.onnx import OnnxEmbedder
from toolroute.embed.recent import QueryMemo
from toolroute.errors import ConfigError
from toolroute.gateway.ops._metrics import GatewayMetrics
from toolroute.gateway.shell.server import FIND_TOOLS, Gateway, Warmup
from toolroute.llm.client import ChatLLM, llm_cache_path
from toolroute.present.events import EventLog, OtelExporter
from toolroute.registry.suggest import suggester_for
from toolroute.route.adaptive import AdaptiveParams
from toolroute.route.strategy import RouteParams
from toolroute.router import Router
from toolroute.store import StoreTarget, default_store_target, is_store_url, open_store

if TYPE_CHECKING:
    from toolroute.embed.base import Embedder

__all__ = [
    "build_router",
    "describe_find_tools",
    "gateway_embedder",
    "gateway_store_dir",
    "make_downstream",
    "make_gateway",
    "make_downstreams",
    "running_downstreams",
    "store_dir_of",
]


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
    spec, s = config.servers[name], config.settings
    auth = downstream_auth(name, spec, store_dir_of(config), config.path, config.store_target)
    d = Downstream(
        name,
        spec,
        connect_timeout_s=s.connect_timeout_s,
        call_timeout_s=s.call_timeout_s,
        max_result_bytes=s.max_result_bytes,
        auth=auth,
    )
    d.curation = config.curation.server(name)  # renames, overrides, hidden (catalog/curation)
    return d


def make_downstreams(config: GatewayConfig) -> Downstreams:
    return Downstreams({name: make_downstream(config, name) for name in config.servers})


@asynccontextmanager
async def running_downstreams(config: GatewayConfig) -> AsyncIterator[Downstreams]:
    """Start every downstream owner task; stop them all on exit."""
    downstreams = make_downstreams(config)
    async with anyio.create_task_group() as tg:
        await tg.start(downstreams.run)
        try:
            await downstreams.wait_connected(config.settings.connect_timeout_s)
            yield downstreams
        finally:
            downstreams.stop()


def store_dir_of(config: GatewayConfig) -> StoreTarget:
    return config.store_target or gateway_store_dir(config)


def describe_find_tools(gateway: Gateway) -> None:
    """find_tools' description names the servers behind the gateway (one line)."""
    catalog = gateway.shared.router.catalog
    line = servers_line([(s.id, len(s.tools)) for s in catalog.servers])
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
    s = config.settings
    adaptive = AdaptiveParams(value_usd=s.value_usd, values=config.values)
    return Router(
        catalog,
        store=target,
        embedder=embedder,
        params=RouteParams(llm=llm, adaptive=adaptive, abstain=s.abstain),
    )


def gateway_embedder(config: GatewayConfig, transport: str = "stdio") -> Embedder:
    """The embedder of a serving gateway: the default model on one intra-op thread (it embeds
    one short query at a time beside the event loop; a second thread costs more CPU than it
    saves, as benchmarks/load.py shows), unless ``TOOLROUTE_THREADS`` says otherwise, behind
    an LRU of query vectors (``query_cache``). Over HTTP, ``TOOLROUTE_EMBED_WORKERS=N``
    embeds in N worker processes instead (embed/workers.py); stdio stays one process."""
    raw = os.environ.get("TOOLROUTE_EMBED_WORKERS", "0")
    if not raw.isdigit():
        raise ConfigError(f"TOOLROUTE_EMBED_WORKERS must be a whole number, got {raw!r}")
    if transport == "http" and int(raw) > 0:  # opt-in: the worker pool (multiprocessing)
        from toolroute.embed.workers import ProcessEmbedder

        return QueryMemo(ProcessEmbedder(int(raw)), size=config.settings.query_cache)
    threads = None if os.environ.get("TOOLROUTE_THREADS") else 1
    return QueryMemo(OnnxEmbedder(threads=threads), size=config.settings.query_cache)


def make_gateway(
    config: GatewayConfig, router: Router, downstreams: Downstreams, warmup: Warmup | None = None
) -> Gateway:
    """The gateway with every setting of the config (preconditions, presentation, events) and its
    hooks: metrics, limits, code mode, registry suggestions, and ``warmup`` (what a request at
    start waits for; None: nothing)."""
    s = config.settings
    code_mode_for = None
    if s.code_mode:  # the sandbox is imported only where code mode is on
        from toolroute.codemode.execute import code_mode

        code_mode_for = code_mode(config.code_mode_limits)  # codemode/: execute, signatures
    suggester = None
    if config.registry.url:  # servers suggested where no tool fits; unset: no registry asked
        registry = Path(router.store.directory) / "registry"
        suggester = suggester_for(config, router.embedder, registry, store_dir_of(config))
    gateway = Gateway(
        router,
        downstreams,
        s,
        clients={c.client_id: c for c in config.clients},
        tool_preconditions=config.tool_preconditions,
        server_preconditions=config.server_preconditions,
        events=[
            *([EventLog(Path(s.events_log).expanduser())] if s.events_log else []),
            *([OtelExporter()] if s.otel else []),
        ],
        metrics=GatewayMetrics if config.metrics.enabled else None,  # gateway/ops/_metrics.py
        limits=config.limit_settings,  # gateway/calls/_limits.py
        code_mode_for=code_mode_for,
        suggester=suggester,
        warmup=warmup,
    )
    describe_find_tools(gateway)
    return gateway
