"""A filling filesystem must not kill the gateway: a failed store write, an unwritable events
log or status file is noted once in the log and in the status snapshot (``faults``), an audit
write is skipped so find_tools still answers, and a request whose own store write fails gets a
structured error (never JSON-RPC code 0, never a file path).

The write errors are injected: the store's method raises SQLite's own "database or disk is
full", and the events log and status file paths are directories (tests run as root here, so a
read-only mode would not stop a write; a directory stops it for any user)."""

from __future__ import annotations

import json
import logging
import sqlite3
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.conftest import TIME_MAIN, HashingEmbedder
from toolroute.config import GatewayConfig, load_config
from toolroute.gateway.ops.app import make_gateway, running_downstreams
from toolroute.gateway.ops.reload import Live
from toolroute.gateway.ops.syncing import sync_router, watch_changes
from toolroute.gateway.shell.server import Gateway

pytestmark = pytest.mark.integration

QUERY = {"query": "what time is it in Tokyo", "k": 3}


def _config(tmp_path: Path, **settings: Any) -> GatewayConfig:
    path = tmp_path / "servers.json"
    servers = {"time": {"command": sys.executable, "args": ["-c", TIME_MAIN]}}
    path.write_text(json.dumps({"mcpServers": servers}))
    settings = {"call_gate": False, **settings}
    lines = [f"store = {json.dumps(str(tmp_path / 'store'))}"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in settings.items()]
    (tmp_path / "toolroute.toml").write_text("[toolroute]\n" + "\n".join(lines) + "\n")
    return load_config(path)


def _disk_full(*_: Any, **__: Any) -> None:
    raise sqlite3.OperationalError("database or disk is full")


def _run(cfg: GatewayConfig, body: Any) -> None:
    async def main() -> None:
        async with running_downstreams(cfg) as downstreams:
            router, _ = await sync_router(cfg, downstreams, embedder=HashingEmbedder())
            gw = make_gateway(cfg, router, downstreams)
            try:
                with anyio.fail_after(60):
                    await body(gw)
            finally:
                gw.shared.router.close()

    anyio.run(main)


def _found(r: Any) -> list[str]:
    assert not r.is_error, r
    return [c["name"] for c in r.structured_content["candidates"]]


def _failures(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "write failed" in r.getMessage()]


def test_find_tools_answers_when_the_store_cannot_record_the_routing_event(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = _config(tmp_path)

    async def body(gw: Gateway) -> None:
        gw.shared.router.store.record_event = _disk_full  # type: ignore[method-assign]
        async with Client(gw.server) as c:
            for _ in range(3):
                assert "time__get_current_time" in _found(await c.call_tool("find_tools", QUERY))
            status = json.loads((await c.read_resource("toolroute://status")).contents[0].text)  # type: ignore[union-attr]
        assert status["faults"]["store"].startswith("write failed: disk full (since ")

    with caplog.at_level(logging.ERROR):
        _run(cfg, body)
    assert len(_failures(caplog)) == 1  # once per distinct failure, not once per call


def test_an_outcome_the_store_cannot_record_is_logged_once_and_the_call_answers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = _config(tmp_path)

    async def body(gw: Gateway) -> None:
        gw.shared.router.record = _disk_full  # type: ignore[method-assign]
        for _ in range(3):
            r = await gw.calls.checked("time__get_current_time", {"timezone": "Asia/Tokyo"})
            assert not r.is_error
        assert gw.status()["faults"]["store"].startswith("write failed: disk full")

    with caplog.at_level(logging.ERROR):
        _run(cfg, body)
    assert len(_failures(caplog)) == 1
    assert not [r for r in caplog.records if r.exc_info]  # no traceback per call


def test_an_unwritable_events_log_is_skipped_and_its_path_never_reaches_the_client(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log_path = tmp_path / "events.jsonl"
    log_path.mkdir()  # a directory: appending to it fails for root too
    cfg = _config(tmp_path, events_log=str(log_path))

    async def body(gw: Gateway) -> None:
        async with Client(gw.server) as c:
            for _ in range(2):
                r = await c.call_tool("find_tools", QUERY)
                assert "time__get_current_time" in _found(r)
                assert str(tmp_path) not in json.dumps(r.model_dump(mode="json"))
            status = (await c.read_resource("toolroute://status")).contents[0].text  # type: ignore[union-attr]
        assert json.loads(status)["faults"]["events log"].startswith("write failed: ")
        assert str(tmp_path) not in status

    with caplog.at_level(logging.ERROR):
        _run(cfg, body)
    assert len(_failures(caplog)) == 1


def test_a_store_failure_in_a_request_is_a_structured_error_without_a_path(
    tmp_path: Path,
) -> None:
    cfg = _config(tmp_path)
    secret = tmp_path / "store" / "toolroute.db"

    def fails(*_: Any, **__: Any) -> None:
        raise PermissionError(13, "Permission denied", str(secret))

    async def body(gw: Gateway) -> None:
        gw.shared.sessions.promote = fails  # type: ignore[method-assign]  # a client-scoped promotion
        async with Client(gw.server) as c:
            r = await c.call_tool("find_tools", QUERY)
        assert r.is_error and r.structured_content is not None
        assert r.structured_content["error"] == "store_failed"
        assert "Permission denied" in r.structured_content["message"]
        assert str(tmp_path) not in json.dumps(r.model_dump(mode="json"))
        assert gw.status()["faults"]["store"].startswith("write failed: Permission denied")

    _run(cfg, body)


def test_an_unwritable_status_file_leaves_the_gateway_serving_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = _config(tmp_path)

    async def body(gw: Gateway) -> None:
        store = gw.shared.router.store.directory
        (store / "status.json").unlink(missing_ok=True)
        (store / "status.json" / "blocked").mkdir(parents=True)  # replace() onto it fails
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch_changes, Live(cfg), gw.shared.downstreams, gw)
            async with Client(gw.server) as c:
                while "status file" not in gw.shared.faults.now():
                    await anyio.sleep(0.05)
                gw.shared.downstreams[
                    "time"
                ].tools_changed.set()  # a change: the watcher writes again
                while gw.shared.downstreams["time"].tools_changed.is_set():
                    await anyio.sleep(0.05)
                assert "time__get_current_time" in _found(await c.call_tool("find_tools", QUERY))
                line = gw.status()["faults"]["status file"]
                assert line.startswith("write failed: ") and str(tmp_path) not in line
            tg.cancel_scope.cancel()

    with caplog.at_level(logging.ERROR):
        _run(cfg, body)
    assert len(_failures(caplog)) == 1


def test_a_full_disk_under_the_call_gate_and_memory_logs_lines_not_tracebacks(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Promotions and the usage memory are written on every find and call: with the disk
    full each failure is one line, and the calls still answer (promotions held in memory)."""
    cfg = _config(tmp_path, call_gate="client")
    call = {"name": "time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}

    async def body(gw: Gateway) -> None:
        store = gw.shared.router.store
        store.promote = _disk_full  # type: ignore[method-assign]
        store.is_promoted = _disk_full  # type: ignore[method-assign,assignment]
        store.promotions = _disk_full  # type: ignore[method-assign,assignment]
        gw.shared.router.remember_use = _disk_full  # type: ignore[method-assign]
        async with Client(gw.server) as c:
            for _ in range(3):
                assert "time__get_current_time" in _found(await c.call_tool("find_tools", QUERY))
                r = await c.call_tool("call_tool", call)
                assert not r.is_error, r

    with caplog.at_level(logging.WARNING):
        _run(cfg, body)
    assert any("disk is full" in r.getMessage() for r in caplog.records)
    assert not [r for r in caplog.records if r.exc_info]  # no traceback per call
