"""A downstream that says its tools changed after every listing must not keep the gateway
listing: it is re-listed at most once per RELIST_DEBOUNCE_S, and alone (the other servers'
last listing is reused). Fixture: tests/fixtures/noisy_server.py, which counts its listings."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

from tests.conftest import REPO, HashingEmbedder
from toolroute.config import load_config
from toolroute.gateway.app import (
    RELIST_DEBOUNCE_S,
    _watch_changes,
    make_gateway,
    running_pool,
    sync_router,
)

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
        async with running_pool(cfg) as pool:
            router, result = await sync_router(cfg, pool, embedder=HashingEmbedder())
            assert {s.name: s.tools for s in result.servers} == {"noisy": 1, "quiet": 1}
            gw = make_gateway(cfg, router, pool)
            noisy_before, quiet_before = _listings(noisy), _listings(quiet)
            start = anyio.current_time()
            with anyio.fail_after(WINDOW_S + 30):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_watch_changes, cfg, pool, gw, result.listings)
                    await anyio.sleep(WINDOW_S)
                    tg.cancel_scope.cancel()
            elapsed = anyio.current_time() - start
            relisted = _listings(noisy) - noisy_before
            # each re-list is at least RELIST_DEBOUNCE_S after the one before it
            assert 1 <= relisted <= elapsed / RELIST_DEBOUNCE_S + 1, (relisted, elapsed)
            assert _listings(quiet) == quiet_before  # the other server is not asked again
            assert [t.name for t in gw.router.catalog.tools()] == ["echo", "echo"]
            gw.router.close()

    anyio.run(main)
