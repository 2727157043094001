"""A metadata write (an approval) by another process on a shared PostgreSQL store reaches a
replica's StoreWatch as a NOTIFY that follow_store delivers: no replica reads the store on a
timer to notice it."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import anyio
import pytest

from tests.conftest import SMALL_CATALOG, HashingEmbedder
from toolroute.catalog import catalog_from_dict
from toolroute.downstream.servers import Downstreams
from toolroute.gateway.ops.follow import StoreWatch, follow_store
from toolroute.gateway.shell.server import Gateway
from toolroute.router import Router
from toolroute.store.local_pg import LocalPostgres

pytestmark = pytest.mark.integration

WRITE = (
    "import sys; from toolroute.store import open_store; "
    "s = open_store(sys.argv[1]); s.set_meta({'quarantine_revision': '7'}); s.close()"
)


def test_another_process_s_approval_reaches_the_watch_by_notify(pg: LocalPostgres) -> None:
    url = pg.create_database(f"follow_{uuid.uuid4().hex[:12]}")
    router = Router(catalog_from_dict(SMALL_CATALOG), store=url, embedder=HashingEmbedder())
    router.index()
    gateway = Gateway(router, Downstreams({}))
    watch = StoreWatch(lambda: gateway.shared.router.store, file_check_s=3600)  # no timed look
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(follow_store, gateway, watch)
            with anyio.fail_after(20):
                while not watch.listening:
                    await anyio.sleep(0.05)
            assert watch.changed()  # a catch-up on what was written before listening
            assert not watch.changed()
            await anyio.to_thread.run_sync(
                lambda: subprocess.run([sys.executable, "-c", WRITE, url], check=True, env=env)
            )
            with anyio.fail_after(20):
                while not watch.changed():
                    await anyio.sleep(0.05)
            tg.cancel_scope.cancel()

    try:
        anyio.run(main)
    finally:
        gateway.shared.router.close()
