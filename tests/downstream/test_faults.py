"""Fault injection: misbehaving MCP servers (tests/fixtures/faults) beside real reference
servers (mcp-server-time from the venv; npm server-memory when installed), each test showing
the fault stays with its server and costs the others nothing.

Rug pulls, poisoned descriptions, zero servers at start and routing off the event loop are in
test_faults_gateway.py.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import TOOLROUTE, HashingEmbedder
from tests.helpers.faults import (
    assert_others_fine,
    children,
    config,
    open_fds,
    raw,
    run_gateway,
    sdk,
    text,
    write_config,
)
from toolroute.downstream.servers import Downstreams, ListedServer
from toolroute.downstream.stdio_client import ProcessInfo, bounded_stdio_client
from toolroute.downstream.sync import list_all
from toolroute.gateway.ops.app import running_downstreams
from toolroute.gateway.ops.syncing import sync_router
from toolroute.gateway.shell.server import Gateway
from toolroute.settings import ToolrouteSettings

pytestmark = pytest.mark.integration


def test_a_crash_mid_call_costs_its_caller_one_error_and_leaks_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = config(tmp_path, {"crash": sdk("crash")}, call_timeout_s=5)
    fds, kids = open_fds(), children()

    async def body(gw: Gateway, downstreams: Downstreams) -> None:
        results: dict[str, Any] = {}

        async def call(name: str, args: dict[str, Any]) -> None:
            results[name] = await gw.calls.checked(name, args)

        with anyio.fail_after(cfg.settings.call_timeout_s + 1):  # bounded: timeout + 1 s at most
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, "crash__crash", {})
                tg.start_soon(call, "time__get_current_time", {"timezone": "UTC"})
        crashed = results["crash__crash"]
        assert crashed.is_error and crashed.structured_content["error"] == "crashed"
        assert not results["time__get_current_time"].is_error
        await assert_others_fine(gw)
        with anyio.fail_after(20):  # restarted by its owner task
            while (r := await gw.calls.checked("crash__echo", {"text": "back"})).is_error:
                await anyio.sleep(0.1)
        assert text(r) == "back"
        d = downstreams["crash"]
        assert d.restarts >= 1 and d.exit_code == 7
        assert d.status == "up" and d.error is None

    with caplog.at_level(logging.INFO, logger="toolroute"):
        run_gateway(cfg, body)
    # its stderr is labelled with its name, and its exit was reported with the code
    assert "[crash] fault server: crashing on purpose" in caplog.text
    assert "exited with code 7: fault server: crashing on purpose" in caplog.text
    assert children() == kids  # every server process is gone
    assert open_fds() == fds  # and every pipe closed


def test_a_hung_call_is_cancelled_downstream_within_the_timeout(tmp_path: Path) -> None:
    record = tmp_path / "cancelled.txt"
    cfg = config(tmp_path, {"hang": sdk("hang", "--record", str(record))}, call_timeout_s=2)

    async def body(gw: Gateway, downstreams: Downstreams) -> None:
        results: dict[str, Any] = {}

        async def hang() -> None:
            results["hang"] = await gw.calls.checked("hang__hang", {})

        with anyio.fail_after(cfg.settings.call_timeout_s + 1):
            async with anyio.create_task_group() as tg:
                tg.start_soon(hang)
                await assert_others_fine(gw)  # while the hung call waits
        assert results["hang"].is_error
        assert results["hang"].structured_content["error"] == "timeout"
        with anyio.fail_after(5):  # the SDK sent notifications/cancelled; the server saw it
            while not record.exists():
                await anyio.sleep(0.05)
        assert re.fullmatch(r"cancelled \S+\n", record.read_text())
        r = await gw.calls.checked("hang__echo", {"text": "still here"})  # the session survives
        assert text(r) == "still here"

    run_gateway(cfg, body)


def test_a_server_slow_to_initialize_is_reported_and_the_rest_sync(tmp_path: Path) -> None:
    # the fixture answers after 30 s; 10 s is ample for the time server beside it
    cfg = config(tmp_path, {"slow": raw("slow-init")}, connect_timeout_s=10)

    async def main() -> None:
        with anyio.fail_after(3 * cfg.settings.connect_timeout_s + 5):
            async with running_downstreams(cfg) as downstreams:
                router, result = await sync_router(cfg, downstreams, embedder=HashingEmbedder())
                status = {s.name: s for s in result.servers}
                assert status["slow"].status == "error"
                assert "timed out" in (status["slow"].error or "")
                assert status["time"].status == "ok"
                gw = Gateway(router, downstreams, ToolrouteSettings(call_timeout_s=5))
                await assert_others_fine(gw)
                router.close()

    anyio.run(main)


def test_garbage_and_malformed_frames_on_stdout_are_skipped(tmp_path: Path) -> None:
    cfg = config(tmp_path, {"garbage": raw("garbage")})

    async def body(gw: Gateway, downstreams: Downstreams) -> None:
        r = await gw.calls.checked("garbage__echo", {"text": "clean"})
        assert not r.is_error and text(r) == "clean"
        assert downstreams["garbage"].status == "up" and downstreams["garbage"].restarts == 0
        assert downstreams["garbage"]._process.garbage >= 3
        await assert_others_fine(gw)

    run_gateway(cfg, body)


def test_a_result_over_the_size_cap_is_refused_without_reading_it_into_memory(
    tmp_path: Path,
) -> None:
    """Through a real `toolroute serve` process: a 100 MB result becomes an isError, and the
    gateway's peak RSS (VmHWM, reset just before) grows by less than twice max_result_bytes."""
    cap = 4 * 1024 * 1024
    path = write_config(tmp_path, {"huge": sdk("huge")}, max_result_bytes=cap)
    gateway = ProcessInfo()
    params = StdioServerParameters(command=str(TOOLROUTE), args=["serve", "--config", str(path)])

    def peak_rss() -> int:
        status = Path(f"/proc/{gateway.pid}/status").read_text()
        return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) * 1024  # type: ignore[union-attr]

    async def call(c: Client, name: str, args: dict[str, Any]) -> Any:
        return await c.call_tool("call_tool", {"name": name, "arguments": args})

    async def main() -> None:
        transport = bounded_stdio_client("gateway", params, max_line_bytes=64 << 20, info=gateway)
        async with Client(transport, mode="legacy", read_timeout_seconds=120) as c:
            r = await call(c, "huge__huge", {"size": 1024 * 1024})  # under the cap: passed on
            assert not r.is_error and len(text(r)) == 1024 * 1024
            await c.call_tool("find_tools", {"query": "current time"})
            # reset VmHWM to the current RSS: the model load's peak would hide any growth
            Path(f"/proc/{gateway.pid}/clear_refs").write_text("5")
            before = peak_rss()
            with anyio.fail_after(60):
                r = await call(c, "huge__huge", {"size": 100 * 1024 * 1024})
            grown = peak_rss() - before
            assert r.is_error and r.structured_content["error"] == "too_large"
            assert "max_result_bytes" in r.structured_content["message"]
            assert grown < 2 * cap, f"peak RSS grew by {grown} bytes"
            r = await call(c, "huge__echo", {"text": "after"})  # same session, still fine
            assert text(r) == "after"
            r = await call(c, "time__get_current_time", {"timezone": "UTC"})
            assert not r.is_error

    anyio.run(main)


MANY = [1_000, pytest.param(10_000, marks=[pytest.mark.slow, pytest.mark.timeout(900)])]
"""Tools of the many-tools server: 1,000 by default, 10,000 (about 1 MB in one page) when slow."""


@pytest.mark.parametrize("many", MANY)
def test_thousands_of_tools_paged_or_not_and_a_cycling_cursor_are_listed(
    tmp_path: Path, many: int
) -> None:
    n = str(many)
    cfg = config(
        tmp_path,
        {
            "many": sdk("many", "--many", n),
            "paged": sdk("many-paged", "--many", n),
            "cycle": raw("cycle-cursor"),
        },
        connect_timeout_s=60,
    )

    async def main() -> None:
        async with running_downstreams(cfg) as downstreams:
            listed = await list_all(downstreams, cfg.settings.connect_timeout_s)
            tools = {
                name: len(got.tools)
                for name, got in listed.items()
                if isinstance(got, ListedServer)
            }
            assert tools["many"] == tools["paged"] == many + 1
            assert tools["cycle"] == 2  # echo_a, echo_b: cut at the first repeated cursor
            assert tools["time"] == 2

    anyio.run(main)


@pytest.mark.parametrize("many", MANY)
def test_a_server_with_thousands_of_tools_is_indexed_routed_and_called(
    tmp_path: Path, many: int
) -> None:
    """One tools/list page of many tools (10,001: about 1 MB, under the size cap), indexed
    beside the reference servers; a server profile no longer repeats every name in every
    tool's text."""
    cfg = config(tmp_path, {"many": sdk("many", "--many", str(many))}, connect_timeout_s=60)
    wanted = many * 4242 // 10_000

    async def body(gw: Gateway, downstreams: Downstreams) -> None:
        assert gw.shared.router.catalog.server("many").tools[-1].name == f"tool_{many - 1:05d}"
        found = gw.finder.find(f"synthetic tool number {wanted} for paging tests", 5)
        assert f"many__tool_{wanted:05d}" in {c["name"] for c in found["candidates"]}
        assert text(await gw.calls.checked("many__echo", {"text": "m"})) == "m"
        await assert_others_fine(gw)

    run_gateway(cfg, body)


def test_duplicate_tool_names_within_and_across_servers_stay_distinct(tmp_path: Path) -> None:
    cfg = config(tmp_path, {"dupes": sdk("dupes"), "other": sdk("hang", "--record", "/dev/null")})

    async def body(gw: Gateway, downstreams: Downstreams) -> None:
        dupes = gw.shared.router.catalog.server("dupes")
        assert [t.name for t in dupes.tools] == ["echo"]  # listed twice, kept once (the first)
        assert dupes.tools[0].description == "Echo the text back unchanged."
        names = set(gw.shared.presenter.tools_by_name)
        assert {"dupes__echo", "other__echo"} <= names
        assert text(await gw.calls.checked("dupes__echo", {"text": "d"})) == "d"
        assert text(await gw.calls.checked("other__echo", {"text": "o"})) == "o"
        await assert_others_fine(gw)

    run_gateway(cfg, body)


def test_a_server_that_exits_at_once_is_reported_with_its_code_and_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = config(tmp_path, {"exits": raw("exit")})

    async def body(gw: Gateway, downstreams: Downstreams) -> None:
        d = downstreams["exits"]
        with anyio.fail_after(20):  # backoff 0.5 + 1 + 2 s: three retries
            while d.restarts < 3:
                await anyio.sleep(0.1)
        assert d.status == "down" and d.exit_code == 3
        assert d.error == "exited with code 3: fatal: RAW_FAULTS_TOKEN is not set"
        r = await gw.calls.checked("exits__echo", {})
        assert r.is_error
        await assert_others_fine(gw)

    with caplog.at_level(logging.INFO, logger="toolroute"):
        run_gateway(cfg, body)
    warnings = [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and "exits" in r.getMessage()
    ]
    assert warnings == [
        "server exits is down: exited with code 3: fatal: RAW_FAULTS_TOKEN is not set"
    ]
    labelled = [r.getMessage() for r in caplog.records if r.name == "toolroute.downstream"]
    assert labelled.count("[exits] fatal: RAW_FAULTS_TOKEN is not set") >= 3
