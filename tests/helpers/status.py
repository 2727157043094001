"""A real `toolroute serve --transport http` for the status page, login and browser tests."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.conftest import TIME_MAIN, TOOLROUTE
from tests.helpers.net import free_port, stop, wait_for_port


@dataclass(frozen=True)
class Served:
    base: str
    """``http://127.0.0.1:PORT``"""
    config: Path
    tokens: dict[str, str]
    """Each client's bearer token (none: the gateway has no ``[auth]``)."""


@contextmanager
def serving_gateway(
    tmp_path: Path, clients: Mapping[str, list[str]] | None = None, settings: str = ""
) -> Iterator[Served]:
    """`toolroute serve --transport http` over the time server and a server whose command
    does not exist; yields once an agent has found and called a tool (so the page has
    statistics and routing decisions to show). ``clients``: ``[auth.clients.ID]`` with a
    random token and that ``servers`` allow-list each; the agent is the first client;
    ``settings``: more toolroute.toml tables. The process is always stopped."""
    servers: dict[str, Any] = {
        "time": {"command": sys.executable, "args": ["-c", TIME_MAIN]},
        "broken": {"command": str(tmp_path / "no-such-server")},
    }
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    toml = f'[toolroute]\nstore = "{tmp_path / "store"}"\nconnect_timeout_s = 10\n'
    tokens = {c: secrets.token_urlsafe(24) for c in clients or {}}
    for client, allowed in (clients or {}).items():
        toml += f'[auth.clients.{client}]\ntoken_env = "TR_STATUS_{client.upper()}"\n'
        toml += f"servers = {json.dumps(allowed)}\n"
    (tmp_path / "toolroute.toml").write_text(toml + settings)
    env = {**os.environ, **{f"TR_STATUS_{c.upper()}": t for c, t in tokens.items()}}
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [str(TOOLROUTE), "serve", "--config", str(config), "--transport", "http"]
        + ["--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    auth = {"Authorization": f"Bearer {next(iter(tokens.values()))}"} if tokens else {}

    async def agent() -> None:
        await wait_for_port(port, proc, 120)  # model load + sync, then the port opens
        with anyio.fail_after(60):
            async with create_mcp_http_client(auth) as http:
                transport = streamable_http_client(f"{base}/mcp", http_client=http)
                async with Client(transport, mode="legacy") as c:
                    await c.call_tool("find_tools", {"query": "what time is it in Tokyo", "k": 2})
                    args = {"timezone": "Asia/Tokyo"}
                    await c.call_tool(
                        "call_tool", {"name": "time__get_current_time", "arguments": args}
                    )

    try:
        anyio.run(agent)
        yield Served(base, config, tokens)
    finally:
        stop(proc)
