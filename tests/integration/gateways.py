"""Gateways for the integration tests: real `toolroute serve --transport http` processes for
the store tests (a config with the time server, mcp-server-time in the venv, and optionally the
changing fixture server), and :func:`http_gateway`, the same app served in the test's own event
loop."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import uvicorn

from tests.conftest import REPO, TIME_MAIN
from toolroute.embed.base import Embedder
from toolroute.gateway.app import http_app, make_gateway, running_pool, sync_router

TOOLROUTE = Path(sys.executable).with_name("toolroute")


def write_config(directory: Path, store: str, *, changing: bool = False, **settings: Any) -> Path:
    """servers.json + toolroute.toml (store, no call gate, ``settings``) in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    servers: dict[str, Any] = {"time": {"command": sys.executable, "args": ["-c", TIME_MAIN]}}
    if changing:
        fixture = REPO / "tests" / "fixtures" / "changing_server.py"
        servers["changing"] = {"command": sys.executable, "args": [str(fixture)]}
    path = directory / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    lines = [f"store = {json.dumps(store)}", "call_gate = false"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in settings.items()]
    (directory / "toolroute.toml").write_text("[toolroute]\n" + "\n".join(lines) + "\n")
    return path


@asynccontextmanager
async def http_gateway(cfg: Any, embedder: Embedder) -> AsyncIterator[tuple[str, Any]]:
    """The gateway of ``cfg`` served over HTTP in this event loop (the same app and guard as
    ``toolroute serve``); yields its /mcp URL and the gateway."""
    async with running_pool(cfg) as pool:
        router, _ = await sync_router(cfg, pool, embedder=embedder)
        gateway = make_gateway(cfg, router, pool)
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
        with anyio.fail_after(timeout_s):
            while True:
                try:
                    stream = await anyio.connect_tcp("127.0.0.1", self.port)
                    await stream.aclose()
                    return
                except OSError:
                    if self.proc.poll() is not None:
                        raise RuntimeError(f"serve exited: {self.log.read_text()}") from None
                    await anyio.sleep(0.2)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=20)
