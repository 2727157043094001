"""Server→client requests are bounded in number, through a real ``toolroute serve`` over HTTP
in front of tests/fixtures/asking_server.py (a tool that sends many sampling requests at
once) and official SDK clients whose model holds every answer back until it has seen what
the cap lets through: beyond ``MAX_ASKS_PER_SESSION`` waiting for one session, or while
another client's calls are in flight on the same server (a request names no call), a request
is refused at once (the server gets an error) and the gateway logs it, instead of holding
every request until the call times out or reaching the wrong client."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest

from tests.conftest import REPO
from tests.helpers.faults import text
from tests.helpers.gateways import GatewayProcess, client_as

pytestmark = pytest.mark.integration

ASKING = REPO / "tests" / "fixtures" / "asking_server.py"
MAX_ASKS_PER_SESSION = 16  # gateway/shell/_relay.py's
CALL = {"name": "asking__ask_many", "arguments": {}}


def _config(tmp_path: Path) -> Path:
    servers = {"asking": {"command": sys.executable, "args": [str(ASKING)]}}
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    store = json.dumps(str(tmp_path / "store"))
    (tmp_path / "toolroute.toml").write_text(
        f"[toolroute]\nstore = {store}\ncall_gate = false\ncall_timeout_s = 60\n"
    )
    return path


class Model:
    """A client's sampling callback that answers nothing until ``release`` is set."""

    def __init__(self, release: anyio.Event) -> None:
        self.release = release
        self.seen = 0
        self.full = anyio.Event()
        self.expect = MAX_ASKS_PER_SESSION

    async def __call__(self, ctx: Any, params: types.CreateMessageRequestParams) -> Any:
        self.seen += 1
        if self.seen >= self.expect:
            self.full.set()
        await self.release.wait()
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="ok"), model="m"
        )


async def _ask_many(url: str, model: Model, n: int, out: list[dict[str, int]]) -> None:
    async with client_as(url, {}, sampling_callback=model) as c:
        r = await c.call_tool("call_tool", {**CALL, "arguments": {"n": n}})
        assert not r.is_error, text(r)
        out.append(json.loads(text(r)))


def test_requests_beyond_a_sessions_cap_are_refused_at_once(tmp_path: Path) -> None:
    gateway = GatewayProcess(_config(tmp_path))
    asked = 4 * MAX_ASKS_PER_SESSION

    async def main() -> None:
        with anyio.fail_after(180):
            await gateway.ready()
            release = anyio.Event()
            model, out = Model(release), []
            async with anyio.create_task_group() as tg:
                tg.start_soon(_ask_many, gateway.url, model, asked, out)
                await model.full.wait()  # as many as the cap lets through are waiting
                release.set()
            [counts] = out
            assert counts["answered"] + counts["refused"] == asked
            assert counts["refused"] > 0 and model.seen < asked

    try:
        anyio.run(main)
    finally:
        gateway.stop()
    assert "a client session already has 16 requests of servers waiting" in gateway.log.read_text()


def test_a_request_during_another_clients_call_is_refused_at_once(tmp_path: Path) -> None:
    """A server's request names no call: while one client's calls wait on this server, a
    second client's call's requests could belong to either, so each is refused at once (and
    logged) rather than sent to a client that may not be the one asked."""
    gateway = GatewayProcess(_config(tmp_path))

    async def main() -> None:
        with anyio.fail_after(180):
            await gateway.ready()
            release = anyio.Event()
            first, second = Model(release), Model(release)
            out: list[dict[str, int]] = []
            async with anyio.create_task_group() as tg:
                tg.start_soon(_ask_many, gateway.url, first, MAX_ASKS_PER_SESSION, out)
                await first.full.wait()  # the first client's requests are waiting
                await _ask_many(gateway.url, second, MAX_ASKS_PER_SESSION, out)
                release.set()
            last = out[0]  # the second client's call ends first: all of it refused at once
            assert last == {"answered": 0, "refused": MAX_ASKS_PER_SESSION, "failed": 0}
            assert out[1]["answered"] == MAX_ASKS_PER_SESSION and second.seen == 0

    try:
        anyio.run(main)
    finally:
        gateway.stop()
    assert "while calls of several clients were in flight: refused" in gateway.log.read_text()
