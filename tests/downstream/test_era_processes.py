"""Servers of the protocol transition behind the gateway, as real processes
(tests/fixtures/era_server.py): 2025-only, 2026-only, and dual-era servers whose code asks the
client the 2025 way or the 2026 way. A question the server asks mid-call reaches a client of
either era and the answer goes back; a rug pull announced inside a call is quarantined whatever
the server's era and style; a 2026-07-28 list's ``ttlMs`` makes a silent change seen."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.conftest import REPO, HashingEmbedder
from toolroute.config import GatewayConfig, load_config
from toolroute.downstream.era import NO_BACK_CHANNEL
from toolroute.gateway.ops.app import make_gateway, running_downstreams
from toolroute.gateway.ops.reload import Live
from toolroute.gateway.ops.syncing import sync_router, watch_changes
from toolroute.gateway.shell.server import Gateway
from toolroute.settings import ToolrouteSettings

pytestmark = pytest.mark.integration

ERA_SERVER = REPO / "tests" / "fixtures" / "era_server.py"
KINDS = {
    "2025-only": ("2025", "2025"),
    "2026-only": ("2026", "2026"),
    "dual-era asking the 2025 way": ("dual", "2025"),
    "dual-era asking the 2026 way": ("dual", "2026"),
}
"""Server kind → (--era, --asks) of the fixture."""


def _config(tmp_path: Path, kind: str, expose: str, *extra: str, **settings: Any) -> GatewayConfig:
    era, asks = KINDS[kind]
    args = [str(ERA_SERVER), "--era", era, "--asks", asks, *extra]
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": {"s": {"command": sys.executable, "args": args}}}))
    lines = [f"store = {json.dumps(str(tmp_path / 'store'))}", f'expose = "{expose}"']
    lines += ["call_gate = false", "call_timeout_s = 20"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in settings.items()]
    (tmp_path / "toolroute.toml").write_text("[toolroute]\n" + "\n".join(lines) + "\n")
    return load_config(path)


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_question_the_server_asks_mid_call_reaches_a_client_of_either_era(
    tmp_path: Path, kind: str, mode: str
) -> None:
    """Pass-through, twice: ``ask_name`` asks for the user's name its own way (a request during
    the call, or an input-required result); the client's elicitation callback answers and the
    server's own greeting comes back. The one exception is a 2026-07-28 client's first call to
    a dual-era server whose code asks by request: it fails as it would directly (no
    back-channel), and the gateway bridges that server's 2026-07-28 callers from then on."""
    cfg = _config(tmp_path, kind, "all")
    asked: list[str] = []

    async def elicitation(ctx: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def main() -> None:
        async with running_downstreams(cfg) as downstreams:
            router, _ = await sync_router(cfg, downstreams, embedder=HashingEmbedder())
            gw = make_gateway(cfg, router, downstreams)
            try:
                with anyio.fail_after(60):
                    async with (
                        gw.continuations.serving(),
                        Client(gw.server, mode=mode, elicitation_callback=elicitation) as c,  # type: ignore[arg-type]
                    ):
                        try:
                            r: Any = await c.call_tool("s__ask_name", {})
                        except MCPError as e:  # the server's own error, passed through
                            r = e
                        again = await c.call_tool("s__ask_name", {})
            finally:
                router.close()
        learns = mode == "auto" and kind == "dual-era asking the 2025 way"
        if learns:
            assert isinstance(r, MCPError) and NO_BACK_CHANNEL in r.error.message, r
        else:
            first = r.content[0].text
            assert not r.is_error and first == "Hello, Ada", first
        text = again.content[0].text  # type: ignore[union-attr]
        assert not again.is_error and text == "Hello, Ada", text
        assert asked == ["What is your name?"] * (1 if learns else 2)

    anyio.run(main)


async def _wait_until(predicate: Any, timeout_s: float = 30) -> None:
    with anyio.fail_after(timeout_s):
        while not predicate():
            await anyio.sleep(0.1)


def _found(gw: Gateway) -> set[str]:
    return {c["name"] for c in gw.finder.find("weather forecast for a city", 5)["candidates"]}


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_rug_pull_announced_inside_a_call_is_quarantined_whatever_the_servers_era(
    tmp_path: Path, kind: str
) -> None:
    """``announce`` changes ``get_forecast``'s description and announces it the server's way
    from inside the call; with the periodic re-list an hour away, the changed tool leaves
    find_tools and call_tool refuses it."""
    cfg = _config(tmp_path, kind, "meta", relist_interval_s=3600)

    async def main() -> None:
        async with running_downstreams(cfg) as downstreams:
            router, _ = await sync_router(cfg, downstreams, embedder=HashingEmbedder())
            gw = Gateway(router, downstreams, ToolrouteSettings(call_timeout_s=20, call_gate=False))
            try:
                assert "s__get_forecast" in _found(gw)
                async with anyio.create_task_group() as tg:
                    tg.start_soon(watch_changes, Live(cfg), downstreams, gw)
                    r = await gw.calls.checked("s__announce", {})
                    assert not r.is_error
                    await _wait_until(lambda: "s__get_forecast" in gw.shared.quarantined)
                    assert "s__get_forecast" not in _found(gw)
                    r = await gw.calls.checked("s__get_forecast", {"city": "Oslo"})
                    assert r.is_error and r.structured_content is not None
                    assert r.structured_content["error"] == "quarantined"
                    tg.cancel_scope.cancel()
            finally:
                gw.shared.router.close()

    anyio.run(main)


def test_a_silent_change_is_seen_when_the_lists_ttl_runs_out(tmp_path: Path) -> None:
    """A 2026-07-28 server lists its tools with ``ttlMs`` 500 and changes one without any
    announcement: the gateway re-lists when the list expires (not at the hourly re-list), so
    the changed tool is quarantined."""
    cfg = _config(tmp_path, "2026-only", "meta", "--ttl-ms", "500", relist_interval_s=3600)

    async def main() -> None:
        async with running_downstreams(cfg) as downstreams:
            router, _ = await sync_router(cfg, downstreams, embedder=HashingEmbedder())
            gw = Gateway(router, downstreams, ToolrouteSettings(call_timeout_s=20, call_gate=False))
            try:
                assert downstreams["s"].list_ttl_s == 1.0  # below the floor: the re-list debounce
                async with anyio.create_task_group() as tg:
                    tg.start_soon(watch_changes, Live(cfg), downstreams, gw)
                    r = await gw.calls.checked("s__announce", {"quietly": True})
                    assert not r.is_error
                    await _wait_until(lambda: "s__get_forecast" in gw.shared.quarantined)
                    tg.cancel_scope.cancel()
            finally:
                gw.shared.router.close()

    anyio.run(main)
