"""The operator's status page of `toolroute serve --transport http`, against a real gateway
process with a real downstream server (mcp-server-time) and one that cannot start; with
tokens, the browser's way in (a login form, a session cookie, `toolroute status --open`)."""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.conftest import TIME_MAIN

pytestmark = pytest.mark.integration

TOOLROUTE = Path(sys.executable).with_name("toolroute")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Served:
    base: str
    """``http://127.0.0.1:PORT``"""
    config: Path
    tokens: dict[str, str]
    """Each client's bearer token (none: the gateway has no ``[auth]``)."""


@contextmanager
def serving_gateway(
    tmp_path: Path, clients: Mapping[str, list[str]] | None = None
) -> Iterator[Served]:
    """`toolroute serve --transport http` over the time server and a server whose command
    does not exist; yields once an agent has found and called a tool (so the page has
    statistics and routing decisions to show). ``clients``: ``[auth.clients.ID]`` with a
    random token and that ``servers`` allow-list each; the agent is the first client. The
    process is always stopped."""
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
    (tmp_path / "toolroute.toml").write_text(toml)
    env = {**os.environ, **{f"TR_STATUS_{c.upper()}": t for c, t in tokens.items()}}
    port = _free_port()
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
        with anyio.fail_after(120):  # model load + sync, then the port opens
            while True:
                try:
                    stream = await anyio.connect_tcp("127.0.0.1", port)
                    await stream.aclose()
                    break
                except OSError:
                    assert proc.poll() is None, "toolroute serve exited"
                    await anyio.sleep(0.3)
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
        proc.terminate()
        proc.wait(timeout=15)


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


@pytest.fixture(scope="module")
def gateway_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving_gateway(tmp_path_factory.mktemp("gateway")) as served:
        yield served.base


def test_status_page_shows_servers_tools_statistics_and_decisions(gateway_url: str) -> None:
    base = gateway_url
    code, body = _get(f"{base}/status.json")
    assert code == 200
    snap = json.loads(body)
    servers = {s["name"]: s for s in snap["servers"]}
    assert servers["time"]["status"] == "up"
    assert servers["broken"]["status"] == "down" and servers["broken"]["error"]
    tools = {t["name"]: t for t in servers["time"]["tools"]}
    assert tools["get_current_time"]["calls"] == 1
    assert tools["get_current_time"]["failed"] == 0
    assert tools["get_current_time"]["latency_s"] is not None
    assert servers["time"]["calls"] == 1
    (event,) = snap["events"]
    assert "time__get_current_time" in event["active"]
    assert event["candidates"][0]["score"] > 0
    code, page = _get(f"{base}/status")
    assert code == 200 and "<h1>toolroute gateway</h1>" in page
    assert "get_current_time" in page and "down" in page and event["query_hash"] in page


def test_every_column_of_the_status_page_is_named_for_a_person_and_explained_on_hover(
    gateway_url: str,
) -> None:
    _, page = _get(f"{gateway_url}/status")
    headers = re.findall(r"<th([^>]*)>([^<]*)</th>", page)
    assert len(headers) == 9 + 7 + 7  # servers, tools, routing decisions
    for attributes, name in headers:
        assert re.fullmatch(r' title="[^"]{20,}"', attributes), name
    names = {name for _, name in headers}
    assert {"failure rate", "success rate", "tokens shown (summaries + schemas)"} <= names
    assert "P(fail)" not in page and "p1 + p2" not in page
    tip = dict((n, a) for a, n in headers)["failure rate"]
    assert "moving average" in tip and "15%" in tip  # what it is computed from


def test_status_page_applies_the_mcp_endpoints_host_and_origin_rules(gateway_url: str) -> None:
    base = gateway_url
    assert _get(f"{base}/status", {"Host": "evil.example:80"})[0] == 421
    assert _get(f"{base}/status.json", {"Origin": "http://evil.example"})[0] == 403
    assert _get(f"{base}/status", {"Origin": base})[0] == 200
