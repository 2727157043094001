"""[limits] hit by the official SDK client through a real `toolroute serve --transport http`
process over the reference time server: a per-tool rate limit and the client's USD budget per
day, both answered with a structured isError saying when to retry; the day's spend survives a
restart of the gateway on the same store."""

from __future__ import annotations

import json
import secrets
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.conftest import TIME_MAIN
from tests.helpers.gateways import GatewayProcess
from toolroute.store import open_store

pytestmark = pytest.mark.integration

NOW = "time__get_current_time"
CONVERT = "time__convert_time"


def _config(tmp_path: Path) -> Path:
    """The time server; get_current_time priced 0.1 USD, a budget of 0.25 USD a day, and
    convert_time limited to one call a minute per client."""
    servers = {"time": {"command": sys.executable, "args": ["-c", TIME_MAIN]}}
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    (tmp_path / "toolroute.toml").write_text(
        f'[toolroute]\nstore = "{tmp_path / "store"}"\ncall_gate = false\n'
        '[auth.clients.agent]\ntoken_env = "TR_LIMITS_TOKEN"\n'
        f'[tools."{NOW}"]\nprice = 0.1\n'
        "[limits]\nbudget_usd_per_day = 0.25\n"
        f'[limits.tools."{CONVERT}"]\ncalls_per_minute = 1\n'
    )
    return config


async def _call(
    url: str, token: str, name: str, arguments: dict[str, Any], tool: str = "call_tool"
) -> Any:
    """One call through the official client in its default mode."""
    async with (
        create_mcp_http_client({"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http)) as c,
    ):
        if tool != "call_tool":
            return await c.call_tool(tool, arguments)
        return await c.call_tool("call_tool", {"name": name, "arguments": arguments})


def test_a_real_client_hits_its_limits_and_the_budget_survives_a_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = secrets.token_urlsafe(24)
    monkeypatch.setenv("TR_LIMITS_TOKEN", token)
    config = _config(tmp_path)
    convert = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}

    async def first_run(url: str) -> None:
        with anyio.fail_after(60):
            find = {"query": "convert a time between timezones", "k": 2}
            assert not (await _call(url, token, "", find, tool="find_tools")).is_error
            assert not (await _call(url, token, CONVERT, convert)).is_error
            rate = (await _call(url, token, CONVERT, convert)).structured_content
            assert rate["error"] == "limit_exceeded"
            assert (rate["limit"], rate["scope"], rate["tool"]) == ("rate", "tool", CONVERT)
            assert 0 < rate["retry_after_s"] <= 60
            for zone in ("UTC", "Asia/Tokyo"):  # 0.1 + 0.1 of 0.25
                assert not (await _call(url, token, NOW, {"timezone": zone})).is_error
            budget = (await _call(url, token, NOW, {"timezone": "UTC"})).structured_content
            assert (budget["limit"], budget["scope"]) == ("budget", "client")
            assert budget["spent_usd"] == pytest.approx(0.2)
            assert 0 < budget["retry_after_s"] <= 86400

    async def after_restart(url: str) -> None:
        with anyio.fail_after(60):
            again = (await _call(url, token, NOW, {"timezone": "UTC"})).structured_content
            assert again["limit"] == "budget" and again["spent_usd"] == pytest.approx(0.2)
            # an unpriced tool still runs: the budget is in USD, the rate bucket is new
            assert not (await _call(url, token, CONVERT, convert)).is_error

    for check in (first_run, after_restart):
        gateway = GatewayProcess(config)
        try:
            anyio.run(gateway.ready)
            anyio.run(check, gateway.url)
        finally:
            gateway.stop()
        if check is first_run:  # the refused call taught the usage memory nothing
            with open_store(tmp_path / "store") as st:
                used = {(r.server, r.tool): r for r in st.load_memory()}
            convert_row, now_row = (
                used[("time", "convert_time")],
                used[("time", "get_current_time")],
            )
            assert (convert_row.successes, convert_row.failures) == (1, 0)
            assert (now_row.successes, now_row.failures) == (2, 0)


def test_replicas_charging_one_pg_store_at_once_never_pass_the_budget(pg: Any) -> None:
    """Eight connections (as eight replicas) charge 0.1 USD each, at once, against a budget of
    0.25: exactly two charges go through, and the day's total is theirs."""
    import threading
    import uuid

    url = pg.create_database(f"t_{uuid.uuid4().hex[:12]}")
    stores = [open_store(url) for _ in range(8)]
    barrier = threading.Barrier(len(stores), timeout=30)
    results: list[tuple[bool, float]] = []

    def charge(st: Any) -> None:
        barrier.wait()
        results.append(st.charge("token:agent", "2026-03-01", 0.1, 0.25))

    threads = [threading.Thread(target=charge, args=(st,)) for st in stores]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert sorted(ok for ok, _ in results) == [False] * 6 + [True] * 2
        assert stores[0].spent("token:agent", "2026-03-01") == (pytest.approx(0.2), 2)
    finally:
        for st in stores:
            st.close()
