"""The downstreams' change event (downstream/servers.py) and the change watcher that sleeps on it
(gateway/ops/syncing.py ``watch_changes``) instead of looking at the servers on a timer."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from mcp_server_time.server import create_server

from tests.conftest import HashingEmbedder
from toolroute.config import GatewayConfig
from toolroute.downstream.inprocess import MemorySpec, memory_specs
from toolroute.downstream.servers import Downstream, Downstreams
from toolroute.gateway.ops.app import make_gateway, running_downstreams
from toolroute.gateway.ops.reload import Live
from toolroute.gateway.ops.syncing import sync_router, watch_changes
from toolroute.settings import ToolrouteSettings


def test_a_server_connecting_joining_or_leaving_wakes_the_pools_change_wait() -> None:
    async def main() -> None:
        downstreams = Downstreams({"time": Downstream("time", MemorySpec(create_server("UTC")))})
        async with anyio.create_task_group() as tg:
            await tg.start(downstreams.run)
            with anyio.fail_after(10):
                while downstreams["time"].status != "up":
                    await downstreams.wait_change(60)  # only a change ends it before the bound
                    downstreams.take_changes()
            assert not downstreams.take_changes()  # taken: nothing is pending
            downstreams.add(Downstream("utc", MemorySpec(create_server("UTC"))))
            assert downstreams.take_changes()
            with anyio.fail_after(10):
                while downstreams["utc"].status != "up":
                    await downstreams.wait_change(60)
                    downstreams.take_changes()
            downstreams.remove("utc")
            assert downstreams.take_changes()
            downstreams.stop()

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
        async with running_downstreams(cfg) as downstreams:
            router, _ = await sync_router(cfg, downstreams, embedder=HashingEmbedder())
            gw = make_gateway(cfg, router, downstreams)
            waits: list[float] = []
            wait_change = downstreams.wait_change

            async def spy(timeout_s: float) -> None:
                waits.append(timeout_s)
                await wait_change(timeout_s)

            downstreams.wait_change = spy  # type: ignore[method-assign]
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(watch_changes, Live(cfg), downstreams, gw)
                    with anyio.fail_after(10):
                        while not waits or servers_in_file() != {"time", "utc"}:
                            await anyio.sleep(0.05)
                    # between changes it sleeps on the event, not on a 0.2 s tick
                    assert min(waits) > 0.2
                    downstreams.remove("utc")  # a change: the watcher wakes and writes it
                    with anyio.fail_after(10):
                        while servers_in_file() != {"time"}:
                            await anyio.sleep(0.05)
                    tg.cancel_scope.cancel()
            finally:
                router.close()

    anyio.run(main)
