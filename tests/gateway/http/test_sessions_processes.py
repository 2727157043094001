"""Idle MCP sessions over HTTP end after ``[http] session_idle_s``, through a real ``toolroute
serve --transport http``: sessions opened and abandoned are gone (their ids answer 404) and
the gateway still opens new ones."""

from __future__ import annotations

import http.client
import json
from pathlib import Path

import anyio
import pytest

from tests.conftest import RAW_INITIALIZE
from tests.helpers.gateways import GatewayProcess, write_config
from tests.helpers.net import post_initialize

pytestmark = pytest.mark.integration

ACCEPT = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}


def _post(port: int, body: object, headers: dict[str, str]) -> tuple[int, str | None]:
    """(status, the Mcp-Session-Id it gave) of one POST to /mcp."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", "/mcp", body=json.dumps(body), headers={**ACCEPT, **headers})
        response = conn.getresponse()
        response.read()
        return response.status, response.getheader("mcp-session-id")
    finally:
        conn.close()


def test_abandoned_sessions_end_after_the_idle_time(tmp_path: Path) -> None:
    config = write_config(tmp_path, str(tmp_path / "store"))
    settings = config.with_name("toolroute.toml")
    settings.write_text(settings.read_text() + "[http]\nsession_idle_s = 1\n")
    gateway = GatewayProcess(config)

    async def main() -> None:
        await gateway.ready()
        opened = []
        for _ in range(20):
            status, session = await anyio.to_thread.run_sync(
                _post, gateway.port, RAW_INITIALIZE, {}
            )
            assert status == 200 and session
            opened.append(session)
        with anyio.fail_after(60):  # each ends once idle for a second; none is used again
            for session in opened:
                while True:
                    status, _ = await anyio.to_thread.run_sync(
                        _post, gateway.port, PING, {"Mcp-Session-Id": session,
                                                    "Mcp-Protocol-Version": "2025-11-25"}
                    )  # fmt: skip
                    if status == 404:
                        break
                    assert status == 200
                    await anyio.sleep(2)  # a ping in flight resets the idle clock
        assert await anyio.to_thread.run_sync(post_initialize, gateway.port, {}) == 200

    try:
        anyio.run(main)
    finally:
        gateway.stop()
