"""End to end, with real parts: a `toolroute serve` whose servers cannot serve a need, an MCP
registry on loopback serving real server.json entries, `toolroute add` run as the operator runs
it, the gateway's reload, and the new server (really installed and started) answering.

stdio: the PyPI `mcp-server-time`, installed by `toolroute add` into a venv of its own
(`pypi_runner = "pip"`). HTTP: the npm `@modelcontextprotocol/server-memory`, run by `npx`
at the pinned version the registry names."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.conftest import REPO
from tests.helpers.gateways import TOOLROUTE, GatewayProcess
from tests.helpers.registry import serve_registry

pytestmark = pytest.mark.integration

WAIT_S = 240  # model load, index, and an install (pip or npx) on a busy machine
RECORDING = REPO / "tests" / "fixtures" / "recording_server.py"


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


@asynccontextmanager
async def _gateway(transport: str, config: Path) -> AsyncIterator[Client]:
    if transport == "http":
        gw = GatewayProcess(config)
        try:
            await gw.ready(WAIT_S)
            async with Client(gw.url) as c:
                yield c
        finally:
            gw.stop()
        return
    params = StdioServerParameters(
        command=str(TOOLROUTE), args=["serve", "--config", str(config)], env=dict(os.environ)
    )
    with config.with_name("gateway.err").open("w") as err:
        async with Client(stdio_client(params, errlog=err), read_timeout_seconds=WAIT_S) as c:
            yield c


def _config(tmp_path: Path, url: str) -> Path:
    config = tmp_path / "servers.json"
    parcel = {"command": sys.executable, "args": [str(RECORDING), str(tmp_path / "calls.log")]}
    config.write_text(json.dumps({"mcpServers": {"parcel": parcel}}))
    (tmp_path / "toolroute.toml").write_text(
        f"[toolroute]\nstore = {json.dumps(str(tmp_path / 'store'))}\n"
        f'[registry]\nurl = "{url}"\npypi_runner = "pip"\n'
        'namespaces = ["io.github.modelcontextprotocol/*"]\n'
    )
    return config


async def _find(c: Client, query: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(
        _text(await c.call_tool("find_tools", {"query": query, "k": 5}))
    )
    return found


CASES = {
    "stdio": (
        "what time is it in Tokyo right now",
        "io.github.modelcontextprotocol/time@2026.10.19",
        "time__get_current_time",
        {"timezone": "Asia/Tokyo"},
        "Asia/Tokyo",
    ),
    "http": (
        "store in my knowledge graph that Alice works at Acme",
        "io.github.modelcontextprotocol/memory@2026.8.31",
        "memory__create_entities",
        {"entities": [{"name": "Alice", "entityType": "person", "observations": ["Acme"]}]},
        "Alice",
    ),
}


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_need_no_server_serves_is_suggested_added_by_the_operator_and_answered(
    tmp_path: Path, transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if transport == "http" and shutil.which("npx") is None:
        pytest.skip("npx is missing")
    # the memory server's entry requires it: written as ${MEMORY_FILE_PATH}, read from the
    # gateway's environment (its graph stays in this test's folder)
    monkeypatch.setenv("MEMORY_FILE_PATH", str(tmp_path / "memory.jsonl"))
    anyio.run(_suggest_add_call, tmp_path, transport)


async def _suggest_add_call(tmp_path: Path, transport: str) -> None:
    query, server, tool, arguments, expected = CASES[transport]
    with serve_registry() as (url, _):
        config = _config(tmp_path, url)
        async with _gateway(transport, config) as c:
            with anyio.fail_after(WAIT_S):  # until the configured server's tools are indexed
                while not (await _find(c, "ship an order with its line items"))["candidates"]:
                    await anyio.sleep(0.2)
            found = await _find(c, query)
            assert found.get("no_tool_fits") or found.get("doubtful_fit"), found
            name, _, version = server.partition("@")
            names = [s["name"] for s in found["suggested_servers"]]
            assert name in names
            commands = found["request_server"]["commands"]
            assert commands[names.index(name)] == f"toolroute add {server}"
            # the agent cannot call what is not added
            early = await c.call_tool("call_tool", {"name": tool, "arguments": arguments})
            assert early.is_error

            done = await anyio.to_thread.run_sync(
                lambda: subprocess.run(
                    [str(TOOLROUTE), "add", server, "--config", str(config), "--yes"],
                    capture_output=True,
                    text=True,
                    timeout=WAIT_S,
                )
            )
            assert done.returncode == 0, done.stderr
            assert "would run" in done.stderr
            if transport == "http":
                assert "needs in the gateway's environment: MEMORY_FILE_PATH" in done.stderr
            written = json.loads(config.read_text())["mcpServers"]
            assert version in json.dumps(written[tool.split("__")[0]])  # pinned

            with anyio.fail_after(WAIT_S):  # the reload starts it and indexes its tools
                while tool not in [x["name"] for x in (await _find(c, query))["candidates"]]:
                    await anyio.sleep(0.5)
            result = await c.call_tool("call_tool", {"name": tool, "arguments": arguments})
            assert not result.is_error, _text(result)
            assert expected in _text(result)


def test_two_toolroute_adds_at_once_both_land(tmp_path: Path) -> None:
    with serve_registry() as (url, _):
        config = tmp_path / "servers.json"
        config.write_text(json.dumps({"mcpServers": {"keep": {"command": "keep-server"}}}))
        store = json.dumps(str(tmp_path / "store"))
        (tmp_path / "toolroute.toml").write_text(
            f'[toolroute]\nstore = {store}\n[registry]\nurl = "{url}"\n'
        )
        adds = [
            subprocess.Popen(
                [str(TOOLROUTE), "add", name, "--config", str(config), "--yes"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for name in (
                "io.github.modelcontextprotocol/time",
                "io.github.modelcontextprotocol/memory",
            )
        ]
        outcomes = [p.communicate(timeout=WAIT_S) for p in adds]
    assert [p.returncode for p in adds] == [0, 0], outcomes
    assert set(json.loads(config.read_text())["mcpServers"]) == {"keep", "time", "memory"}
