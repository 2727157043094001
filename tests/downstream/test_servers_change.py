"""The pool's change event (downstream/servers.py) and the change watcher that sleeps on it
(gateway/ops/syncing.py ``watch_changes``) instead of looking at the servers on a timer."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from mcp_server_time.server import create_server

from tests.conftest import HashingEmbedder
from toolroute.config import GatewayConfig
from toolroute.downstream.inprocess import MemorySpec, memory_specs
from toolroute.downstream.servers import Downstream, DownstreamPool
from toolroute.gateway.ops.app import make_gateway, running_pool
from toolroute.gateway.ops.reload import Live
from toolroute.gateway.ops.syncing import sync_router, watch_changes
from toolroute.settings import ToolrouteSettings


def test_a_server_connecting_joining_or_leaving_wakes_the_pools_change_wait() -> None:
    async def main() -> None:
        pool = DownstreamPool({"time": Downstream("time", MemorySpec(create_server("UTC")))})
        async with anyio.create_task_group() as tg:
            await tg.start(pool.run)
            with anyio.fail_after(10):
                while pool["time"].status != "up":
                    await pool.wait_change(60)  # only a change ends it before the bound
                    pool.take_changes()
            assert not pool.take_changes()  # taken: nothing is pending
            pool.add(Downstream("utc", MemorySpec(create_server("UTC"))))
            assert pool.take_changes()
            with anyio.fail_after(10):
                while pool["utc"].status != "up":
                    await pool.wait_change(60)
                    pool.take_changes()
            pool.remove("utc")
            assert pool.take_changes()
            pool.stop()

    anyio.run(main)


def test_the_change_watcher_sleeps_on_the_pool_and_writes_a_servers_change(
    tmp_path: Path,
) -> None:
    servers = {"time": create_server("UTC"), "utc": create_server("UTC")}
    settings = ToolrouteSettings(store=str(tmp_path / "store"))
    cfg = GatewayConfig(servers=memory_specs(servers), settings=settings)
    status_file = tmp_path / "store" / "status.json"

    def servers_in_file() -> set[str]:
        try:
            return set(json.loads(status_file.read_text())["servers"])
        except (OSError, ValueError):  # not written yet, or being replaced
            return set()

    async def main() -> None:
        async with running_pool(cfg) as pool:
            router, _ = await sync_router(cfg, pool, embedder=HashingEmbedder())
            gw = make_gateway(cfg, router, pool)
            waits: list[float] = []
            wait_change = pool.wait_change

            async def spy(timeout_s: float) -> None:
                waits.append(timeout_s)
                await wait_change(timeout_s)

            pool.wait_change = spy  # type: ignore[method-assign]
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(watch_changes, Live(cfg), pool, gw)
                    with anyio.fail_after(10):
                        while not waits or servers_in_file() != {"time", "utc"}:
                            await anyio.sleep(0.05)
                    # between changes it sleeps on the event, not on a 0.2 s tick
                    assert min(waits) > 0.2
                    pool.remove("utc")  # a change: the watcher wakes and writes it
                    with anyio.fail_after(10):
                        while servers_in_file() != {"time"}:
                            await anyio.sleep(0.05)
                    tg.cancel_scope.cancel()
            finally:
                router.close()

    anyio.run(main)
