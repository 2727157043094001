"""A hostile downstream must not make the gateway spin or hoard: one that says its tools
changed after every listing is re-listed at most once per RELIST_DEBOUNCE_S, and alone (the
other servers' last listing is reused); a relayed request the client never answers is given
up. Fixture: tests/fixtures/noisy_server.py, which counts its listings."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client

from tests.conftest import REPO, HashingEmbedder
from toolroute.config import load_config
from toolroute.gateway.ops.app import make_gateway, running_downstreams
from toolroute.gateway.ops.reload import Live
from toolroute.gateway.ops.syncing import RELIST_DEBOUNCE_S, sync_router, watch_changes

pytestmark = pytest.mark.integration

NOISY = REPO / "tests" / "fixtures" / "noisy_server.py"
WINDOW_S = 3.0
"""How long the watcher runs beside the noisy server (a bounded window, not a wait)."""


def _listings(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_a_server_announcing_a_change_on_every_listing_is_relisted_alone_and_debounced(
    tmp_path: Path,
) -> None:
    noisy, quiet = tmp_path / "noisy.count", tmp_path / "quiet.count"
    servers = {
        "noisy": {"command": sys.executable, "args": [str(NOISY), str(noisy), "--noisy"]},
        "quiet": {"command": sys.executable, "args": [str(NOISY), str(quiet)]},
    }
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    (tmp_path / "toolroute.toml").write_text(
        f"[toolroute]\nstore = {json.dumps(str(tmp_path / 'store'))}\nrelist_interval_s = 3600\n"
    )
    cfg = load_config(path)

    async def main() -> None:
        async with running_downstreams(cfg) as downstreams:
            router, result = await sync_router(cfg, downstreams, embedder=HashingEmbedder())
            assert {s.name: s.tools for s in result.servers} == {"noisy": 2, "quiet": 2}
            gw = make_gateway(cfg, router, downstreams)
            noisy_before, quiet_before = _listings(noisy), _listings(quiet)
            start = anyio.current_time()
            with anyio.fail_after(WINDOW_S + 30):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(
                        watch_changes, Live(cfg, listings=result.listings), downstreams, gw
                    )
                    await anyio.sleep(WINDOW_S)
                    tg.cancel_scope.cancel()
            elapsed = anyio.current_time() - start
            relisted = _listings(noisy) - noisy_before
            # each re-list is at least RELIST_DEBOUNCE_S after the one before it
            assert 1 <= relisted <= elapsed / RELIST_DEBOUNCE_S + 1, (relisted, elapsed)
            assert _listings(quiet) == quiet_before  # the other server is not asked again
            assert gw.shared.router.catalog.tool_count == 4  # both servers' tools, as listed
            gw.shared.router.close()

    anyio.run(main)


def test_a_relayed_request_the_client_never_answers_is_given_up_after_the_call_timeout(
    tmp_path: Path,
) -> None:
    """The downstream ignores the call's cancellation and keeps waiting on its sampling
    request; the gateway gives the client call_timeout_s to answer, then cancels the request
    at the client and answers the server with an error."""
    args = [str(NOISY), str(tmp_path / "n"), "--handshake"]
    servers = {"stubborn": {"command": sys.executable, "args": args}}
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    (tmp_path / "toolroute.toml").write_text(
        f"[toolroute]\nstore = {json.dumps(str(tmp_path / 'store'))}\n"
        "call_timeout_s = 1\ncall_gate = false\n"
    )
    cfg = load_config(path)
    asked, released = anyio.Event(), anyio.Event()

    async def never_answers(ctx: Any, params: types.CreateMessageRequestParams) -> Any:
        asked.set()
        try:
            await anyio.sleep_forever()
        finally:
            released.set()  # cancelled: the gateway gave the request up

    async def main() -> None:
        async with running_downstreams(cfg) as downstreams:
            router, _ = await sync_router(cfg, downstreams, embedder=HashingEmbedder())
            gw = make_gateway(cfg, router, downstreams)
            async with Client(gw.server, mode="legacy", sampling_callback=never_answers) as c:
                with anyio.fail_after(20):
                    r = await c.call_tool(
                        "call_tool", {"name": "stubborn__ask_stubbornly", "arguments": {}}
                    )
                    assert r.is_error and asked.is_set()
                    await released.wait()
            gw.shared.router.close()

    anyio.run(main)
