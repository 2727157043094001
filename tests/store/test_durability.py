"""kill -9 of a gateway while calls are recorded (issue 11 and 15): on restart the store opens
cleanly and holds every outcome committed before the kill. An outcome is recorded once its
reply is out, in the request's own task (gateway/calls/record.py), so the loss is bounded to
the calls in flight or answering at that instant: one per concurrent request. Real gateway
processes, a real downstream (mcp-server-time), real stores (SQLite, and PostgreSQL through the
`pg` fixture)."""

from __future__ import annotations

import os
import signal
import sqlite3
import uuid
from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests.helpers.gateways import GatewayProcess, write_config
from toolroute.store import open_store
from toolroute.store.local_pg import LocalPostgres

pytestmark = pytest.mark.integration

WORKERS = 4
CALL = {"name": "time__get_current_time", "arguments": {"timezone": "Europe/Paris"}}


async def _calls_until_killed(gw: GatewayProcess, kill_after: int) -> int:
    """WORKERS concurrent call_tool loops; kill -9 the gateway once ``kill_after`` calls were
    answered. Returns how many calls were answered (each outcome committed as its answer goes
    out: all but the last one per worker are committed by then)."""
    acked = 0
    enough = anyio.Event()

    async def worker(c: Client) -> None:
        nonlocal acked
        try:
            while True:
                r = await c.call_tool("call_tool", CALL)
                assert not r.is_error, r
                acked += 1
                if acked >= kill_after:
                    enough.set()
        except Exception:  # the gateway was killed under this call
            return

    with anyio.fail_after(120):
        try:
            async with Client(gw.url) as c, anyio.create_task_group() as tg:
                for _ in range(WORKERS):
                    tg.start_soon(worker, c)
                await enough.wait()
                os.kill(gw.proc.pid, signal.SIGKILL)
                gw.proc.wait(timeout=20)
                tg.cancel_scope.cancel()
        except Exception:  # the client's session ends with the killed server
            pass
    return acked


async def _one_call(gw: GatewayProcess) -> None:
    with anyio.fail_after(60):
        async with Client(gw.url) as c:
            r = await c.call_tool("call_tool", CALL)
            assert not r.is_error and "Europe/Paris" in str(r.content)


def _check_restart(store: str | Path, tmp_path: Path, acked: int, config: Path) -> None:
    with open_store(store) as st:  # opens cleanly after the kill
        count = st.outcome_count()
        assert sum(c[2] for c in st.outcome_counts()) == count  # every call was a success
    # nothing committed lost: at most one answered call per worker not yet recorded, at most
    # one call per worker recorded but not answered
    assert acked - WORKERS <= count <= acked + WORKERS
    gw = GatewayProcess(config)
    try:

        async def main() -> None:
            await gw.ready()
            await _one_call(gw)

        anyio.run(main)
    finally:
        gw.stop()
    with open_store(store) as st:
        assert st.outcome_count() == count + 1


def test_sqlite_store_keeps_every_committed_outcome_after_kill_9(tmp_path: Path) -> None:
    store = tmp_path / "store"
    config = write_config(tmp_path / "gw", str(store))
    gw = GatewayProcess(config)
    try:

        async def main() -> int:
            await gw.ready()
            return await _calls_until_killed(gw, kill_after=40)

        acked = anyio.run(main)
    finally:
        gw.stop()
    assert gw.proc.returncode == -signal.SIGKILL and acked >= 40
    db = sqlite3.connect(store / "toolroute.db")
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()
    _check_restart(store, tmp_path, acked, config)


def test_killed_pg_replica_loses_nothing_committed_and_the_other_keeps_serving(
    pg: LocalPostgres, tmp_path: Path
) -> None:
    url = pg.create_database(f"kill_{uuid.uuid4().hex[:12]}")
    config = write_config(tmp_path / "gw", url)
    a, b = GatewayProcess(config), GatewayProcess(config)
    try:

        async def main() -> int:
            await a.ready()
            await b.ready()
            acked = await _calls_until_killed(a, kill_after=40)
            await _one_call(b)  # the other replica keeps serving (and recording)
            return acked

        acked = anyio.run(main)
    finally:
        a.stop()
        b.stop()
    assert a.proc.returncode == -signal.SIGKILL and acked >= 40
    with open_store(url) as st:
        by_replica = st.outcome_count()
    _check_restart(url, tmp_path, acked + 1, config)
    assert by_replica >= acked + 1 - WORKERS
