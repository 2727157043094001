"""Gateways for the tests that start processes: real `toolroute serve --transport http`
processes for the store tests (a config with the time server, mcp-server-time in the venv, and
optionally the changing fixture server), and :func:`http_gateway`, the same app served in the
test's own event loop."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import Implementation

from tests.conftest import REPO, TOOLROUTE
from tests.helpers import configs
from tests.helpers.configs import TIME_SERVER
from tests.helpers.net import free_port, stop, wait_for_port
from toolroute.embed.base import Embedder
from toolroute.gateway.ops.app import make_gateway, running_downstreams
from toolroute.gateway.ops.serving_http import http_app
from toolroute.gateway.ops.syncing import sync_router


def write_config(directory: Path, store: str, *, changing: bool = False, **settings: Any) -> Path:
    """servers.json + toolroute.toml (store, no call gate, ``settings``) in ``directory``."""
    servers: dict[str, Any] = {"time": TIME_SERVER}
    if changing:
        fixture = REPO / "tests" / "fixtures" / "changing_server.py"
        servers["changing"] = {"command": sys.executable, "args": [str(fixture)]}
    return configs.write_config(directory, servers, store=store, **settings)


@asynccontextmanager
async def http_gateway(cfg: Any, embedder: Embedder) -> AsyncIterator[tuple[str, Any]]:
    """The gateway of ``cfg`` served over HTTP in this event loop (the same app and guard as
    ``toolroute serve``); yields its /mcp URL and the gateway."""
    async with running_downstreams(cfg) as downstreams:
        router, _ = await sync_router(cfg, downstreams, embedder=embedder)
        gateway = make_gateway(cfg, router, downstreams)
        server = uvicorn.Server(uvicorn.Config(http_app(cfg, gateway), log_level="warning"))
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            sock.listen(16)
            sock.setblocking(False)
            async with anyio.create_task_group() as tg:
                tg.start_soon(server.serve, [sock])
                try:
                    yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", gateway
                finally:
                    server.should_exit = True
        router.close()


class GatewayProcess:
    """One gateway replica over streamable HTTP on a free loopback port."""

    def __init__(self, config: Path) -> None:
        self.port = free_port()
        self.log = config.with_name(f"gateway-{self.port}.log")
        with self.log.open("w") as err:  # the child keeps its own descriptor
            self.proc = subprocess.Popen(
                [
                    str(TOOLROUTE), "serve", "--config", str(config),
                    "--transport", "http", "--port", str(self.port),
                ],
                stdout=subprocess.DEVNULL,
                stderr=err,
            )  # fmt: skip

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    async def ready(self, timeout_s: float = 180) -> None:
        """Until the port accepts (model load + sync first); fails if the process exits."""
        await wait_for_port(self.port, self.proc, timeout_s, self.log)

    def stop(self) -> None:
        stop(self.proc)


@asynccontextmanager
async def client_as(
    url: str, headers: dict[str, str], name: str = "test", **kw: Any
) -> AsyncIterator[Client]:
    """An official SDK client (legacy mode) at ``url`` sending ``headers``, named ``name``."""
    async with create_mcp_http_client(headers) as http:
        transport = streamable_http_client(url, http_client=http)
        info = Implementation(name=name, version="1")
        async with Client(transport, mode="legacy", client_info=info, **kw) as c:
            yield c
