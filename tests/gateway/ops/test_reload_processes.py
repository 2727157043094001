"""Live reconfiguration (gateway/ops/reload.py) of a real `toolroute serve`, over HTTP and stdio,
with the official SDK client: the servers JSON is edited while calls are in flight to a server
that stays, one that is restarted and one that is removed (tests/fixtures/latch_server.py holds
each call until the test releases it), and a broken edit is refused."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.conftest import REPO, TIME_MAIN
from tests.helpers.faults import run_gateway
from tests.helpers.gateways import TOOLROUTE, GatewayProcess
from tests.helpers.net import post_initialize
from toolroute.config import load_config
from toolroute.downstream.servers import Downstreams
from toolroute.gateway.ops.reload import apply
from toolroute.gateway.ops.syncing import live_of
from toolroute.gateway.shell.server import Gateway

pytestmark = pytest.mark.integration

LATCH = REPO / "tests" / "fixtures" / "latch_server.py"
WAIT_S = 180  # the first start loads the model and indexes; the machine may be busy


def _latch(folder: Path, *extra: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(LATCH), str(folder), *extra]}


def write_servers(path: Path, servers: dict[str, Any]) -> None:
    path.write_text(json.dumps({"mcpServers": servers}))


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def wait_for_line(log: Path, text: str, count: int = 1) -> None:
    """Until ``text`` appears ``count`` times in the gateway's stderr."""
    with anyio.fail_after(WAIT_S):
        while log.read_text(errors="replace").count(text) < count:
            await anyio.sleep(0.05)


async def wait_for_file(path: Path) -> None:
    with anyio.fail_after(WAIT_S):
        while not path.exists():
            await anyio.sleep(0.02)


@asynccontextmanager
async def gateway(transport: str, config: Path, log: Path) -> AsyncIterator[Client]:
    if transport == "http":
        gw = GatewayProcess(config)
        try:
            await gw.ready(WAIT_S)
            async with Client(gw.url) as c:
                yield c
        finally:
            gw.stop()
            log.write_text(gw.log.read_text(errors="replace"))
        return
    params = StdioServerParameters(  # the environment whole: PYTHONPATH names the tree tested
        command=str(TOOLROUTE), args=["serve", "--config", str(config)], env=dict(os.environ)
    )
    with log.open("w") as err:  # the first request waits for the model load and sync
        async with Client(stdio_client(params, errlog=err), read_timeout_seconds=WAIT_S) as c:
            yield c


async def _find(c: Client, query: str) -> list[str]:
    r = await c.call_tool("find_tools", {"query": query, "k": 10})
    return [x["name"] for x in json.loads(_text(r))["candidates"]]


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_config_edit_adds_removes_and_restarts_servers_while_calls_are_in_flight(
    tmp_path: Path, transport: str
) -> None:
    anyio.run(_edit_while_calls_are_in_flight, tmp_path, transport)


async def _edit_while_calls_are_in_flight(tmp_path: Path, transport: str) -> None:
    latches = tmp_path / "latches"
    latches.mkdir()
    config = tmp_path / "servers.json"
    write_servers(
        config, {"keep": _latch(latches), "moved": _latch(latches), "gone": _latch(latches)}
    )
    store = json.dumps(str(tmp_path / "store"))
    (tmp_path / "toolroute.toml").write_text(f"[toolroute]\nstore = {store}\ncall_gate = false\n")
    log = tmp_path / "gateway.err"
    # the HTTP gateway writes its own log; the stdio one writes to ours
    live_log = log if transport == "stdio" else None
    async with gateway(transport, config, log) as c:
        if live_log is None:
            live_log = next(tmp_path.glob("gateway-*.log"))
        results: dict[str, Any] = {}
        done = {k: anyio.Event() for k in ("keep", "moved", "gone")}

        async def hold(server: str) -> None:
            args = {"name": f"{server}__hold", "arguments": {"key": server}}
            results[server] = await c.call_tool("call_tool", args)
            done[server].set()

        async with anyio.create_task_group() as tg:
            for server in done:
                tg.start_soon(hold, server)
            for server in done:  # every call has reached its server
                await wait_for_file(latches / f"{server}.started")
            write_servers(
                config,
                {
                    "keep": _latch(latches),
                    "moved": _latch(latches, "--restarted"),
                    "time": {"command": sys.executable, "args": ["-c", TIME_MAIN]},
                },
            )
            await wait_for_line(live_log, "config reloaded in")
            with anyio.fail_after(WAIT_S):  # the removed server's call ends, not hangs
                await done["gone"].wait()
            assert results["gone"].is_error
            assert "removed from the configuration" in _text(results["gone"])
            assert not done["keep"].is_set() and not done["moved"].is_set()

            assert "time__get_current_time" in await _find(c, "current time in Tokyo")
            held = await _find(c, "hold a reservation until released")
            assert "keep__hold" in held and "moved__hold" in held
            assert not [n for n in held if n.startswith("gone__")]
            r = await c.call_tool("call_tool", {"name": "gone__hold", "arguments": {"key": "x"}})
            assert r.is_error and "unknown_tool" in _text(r)
            r = await c.call_tool(
                "call_tool",
                {"name": "time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}},
            )
            assert not r.is_error and "Asia/Tokyo" in _text(r)

            (latches / "keep").touch()
            (latches / "moved").touch()
            with anyio.fail_after(WAIT_S):
                await done["keep"].wait()
                await done["moved"].wait()
        assert _text(results["keep"]) == "released keep"
        assert _text(results["moved"]) == "released moved"  # drained by the old process
        text = live_log.read_text()
        for line in ("added server time", "removed server gone", "restarted server moved"):
            assert f"config reloaded: {line}" in text

        config.write_text('{"mcpServers": {"keep": ')  # a broken edit
        await wait_for_line(live_log, "config not reloaded, still serving the previous one")
        refused = [x for x in live_log.read_text().splitlines() if "config not reloaded" in x]
        assert len(refused) == 1 and "invalid JSON" in refused[0]
        r = await c.call_tool("call_tool", {"name": "keep__hold", "arguments": {"key": "keep"}})
        assert _text(r) == "released keep"
        assert "time__get_current_time" in await _find(c, "current time in Tokyo")


def _status(port: int, token: str | None) -> int:
    """The HTTP status of one initialize POST, with or without a bearer token."""
    return post_initialize(port, {"Authorization": f"Bearer {token}"} if token else {})


def test_a_settings_edit_reloads_tokens_and_sighup_reloads_without_stopping(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "reload-test-token-0123456789"
    monkeypatch.setenv("RELOAD_TEST_TOKEN", token)  # the gateway inherits it when spawned
    config = tmp_path / "servers.json"
    write_servers(config, {"time": {"command": sys.executable, "args": ["-c", TIME_MAIN]}})
    toml = tmp_path / "toolroute.toml"
    store = json.dumps(str(tmp_path / "store"))
    toml.write_text(f"[toolroute]\nstore = {store}\n")

    async def main() -> None:
        gw = GatewayProcess(config)
        try:
            await gw.ready(WAIT_S)
            assert await anyio.to_thread.run_sync(_status, gw.port, None) == 200
            toml.write_text(
                f'[toolroute]\nstore = {store}\n[auth]\nbearer_token_env = "RELOAD_TEST_TOKEN"\n'
            )
            await wait_for_line(gw.log, "config reloaded: tokens and allow-lists reloaded")
            assert await anyio.to_thread.run_sync(_status, gw.port, None) == 401
            assert await anyio.to_thread.run_sync(_status, gw.port, token) == 200

            gw.proc.send_signal(signal.SIGHUP)  # the default action would end the process
            await wait_for_line(gw.log, "SIGHUP: reloading the config")
            assert gw.proc.poll() is None
            assert await anyio.to_thread.run_sync(_status, gw.port, token) == 200
        finally:
            gw.stop()

    anyio.run(main)


def test_a_curation_edit_relists_only_that_server_and_restarts_nothing(tmp_path: Path) -> None:
    latches = tmp_path / "latches"
    latches.mkdir()
    path = tmp_path / "servers.json"
    write_servers(
        path,
        {"time": {"command": sys.executable, "args": ["-c", TIME_MAIN]}, "latch": _latch(latches)},
    )
    toml = tmp_path / "toolroute.toml"
    toml.write_text(f"[toolroute]\nstore = {json.dumps(str(tmp_path / 'store'))}\n")
    old = load_config(path)
    toml.write_text(
        toml.read_text() + '[tools."time__get_current_time"]\nname = "now"\npin = true\n'
    )
    new = load_config(path)

    async def body(gw: Gateway, downstreams: Downstreams) -> None:
        before = dict(downstreams.servers)
        change = await apply(live_of(old), new, downstreams, gw)
        assert (change.relisted, change.added, change.removed, change.restarted) == (
            ("time",),
            (),
            (),
            (),
        )
        assert all(downstreams[n] is before[n] for n in before)  # no process restarted
        assert change.reindexed == 1 and change.tools == 3
        assert "time__now" in gw.shared.presenter.tools_by_name
        assert "time__get_current_time" not in gw.shared.presenter.tools_by_name
        assert gw.shared.presenter.config.pinned == ("time__now",)
        r = await gw.calls.checked("time__now", {"timezone": "Asia/Tokyo"})
        assert not r.is_error and "Asia/Tokyo" in _text(r)

    run_gateway(old, body)


def test_an_abstain_edit_applies_to_the_next_find(tmp_path: Path) -> None:
    """A live `toolroute serve` (bundled model, shipped abstention model): turning abstain
    from off to strict in toolroute.toml is logged as changed and answers the next
    find_tools for a need no server meets with "no tool fits", without a restart."""
    config = tmp_path / "servers.json"
    write_servers(config, {"time": {"command": sys.executable, "args": ["-c", TIME_MAIN]}})
    toml = tmp_path / "toolroute.toml"
    settings = f"[toolroute]\nstore = {json.dumps(str(tmp_path / 'store'))}\n"
    toml.write_text(settings + 'abstain = "off"\n')
    log = tmp_path / "gateway.log"
    far = "Order a large pepperoni pizza for delivery to my flat"

    async def main() -> None:
        async with gateway("stdio", config, log) as c:

            async def found() -> dict[str, Any]:
                r = await c.call_tool("find_tools", {"query": far, "k": 3})
                assert not r.is_error
                return json.loads(_text(r))  # type: ignore[no-any-return]

            assert (await found())["candidates"]  # off: ranked all the same
            toml.write_text(settings + 'abstain = "strict"\n')
            await wait_for_line(log, "config reloaded in")  # every reload ends with it
            after = await found()
            assert after["candidates"] == [] and after["no_tool_fits"] is True, after
            assert "config reloaded: abstain changed" in log.read_text()

    anyio.run(main)
