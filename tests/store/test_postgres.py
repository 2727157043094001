"""The PostgreSQL store against a real server (the machine's PostgreSQL, started by the `pg`
fixture): the store contract, schema versioning, replicas writing the same statistics at once,
concurrent syncs of one catalog, and NOTIFY on a catalog change."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import psycopg
import pytest
from mcp import Client

from tests.conftest import REPO, SMALL_CATALOG, HashingEmbedder
from tests.fixtures.outcome_writer import catalog as writer_catalog
from tests.helpers.gateways import GatewayProcess, write_config
from toolroute.catalog import catalog_from_dict
from toolroute.errors import StoreError
from toolroute.learn.estimate import ServerStats, ToolStats
from toolroute.router import Router
from toolroute.stats import Outcome
from toolroute.store import SCHEMA_VERSION, open_store
from toolroute.store.local_pg import LocalPostgres
from toolroute.store.postgres import CATALOG_CHANNEL, PostgresStore

pytestmark = pytest.mark.integration
WRITER = REPO / "tests" / "fixtures" / "outcome_writer.py"


@pytest.fixture
def url(pg: LocalPostgres) -> str:
    return pg.create_database(f"t_{uuid.uuid4().hex[:12]}")


def _catalog(mutate=None):  # type: ignore[no-untyped-def]
    data = json.loads(json.dumps(SMALL_CATALOG))
    if mutate:
        mutate(data)
    return catalog_from_dict(data)


def test_pg_store_syncs_diffs_and_reloads_the_catalog(url: str) -> None:
    def mutate(d):  # type: ignore[no-untyped-def]
        d["servers"][0]["tools"][0]["description"] = "Now with seconds"
        del d["servers"][2]["tools"][1]

    with open_store(url) as st:
        assert isinstance(st, PostgresStore)
        first = st.sync_catalog(_catalog())
        assert (first.added, first.unchanged) == (7, 0)
        r = st.sync_catalog(_catalog(mutate))
        assert (r.added, r.updated, r.removed, r.unchanged) == (0, 1, 1, 5)
        assert st.catalog_version() == 2
    with open_store(url) as st:
        back = st.load_catalog()
        assert back == _catalog(mutate)


def test_pg_store_keeps_vectors_and_rolls_back_a_failed_write(url: str) -> None:
    v = np.arange(4, dtype=np.float32)
    with open_store(url) as st:
        st.put_vectors("m", {"k": v})
        with pytest.raises(TypeError):
            st.put_vectors("m", {"a": np.zeros(2, np.float32), "b": object()})  # type: ignore[dict-item]
    with open_store(url) as st:
        got = st.get_vectors("m", ["k", "a", "missing"], 4)
        assert list(got) == ["k"] and np.array_equal(got["k"], v)
        st.put_questions("gen", "h", ["q1", "q2"])
        assert st.get_questions("gen", "h") == ["q1", "q2"]
        st.record_event('{"e": 1}')
        assert st.events() == ['{"e": 1}']


def test_pg_schema_is_versioned_and_a_newer_one_refused(url: str) -> None:
    with open_store(url) as st:
        assert st.get_meta("schema_version") == str(SCHEMA_VERSION)
        st.set_meta({"schema_version": "999"})
    with pytest.raises(StoreError, match="store format 999"):
        open_store(url)


def _replay(rows: list[tuple[str, str, int, float, int]]) -> tuple[dict, dict]:  # type: ignore[type-arg]
    """EHRR eq. 8 applied to the outcomes in id order, from the priors (the sequential run)."""
    servers: dict[str, ServerStats] = {}
    tools: dict[tuple[str, str], ToolStats] = {}
    for server, tool, ok, lat, crashed in rows:
        servers[server] = servers.get(server, ServerStats()).update(bool(ok), lat, bool(crashed))
        tools[(server, tool)] = tools.get((server, tool), ToolStats()).update(bool(ok), lat)
    return servers, tools


@pytest.mark.parametrize("mode", ["sql", "lock"])
def test_two_replicas_writing_the_same_tools_at_once_lose_nothing(url: str, mode: str) -> None:
    n = 1000
    procs = [
        subprocess.Popen(
            [sys.executable, str(WRITER), url, str(seed), str(n), mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        for seed in (1, 2)
    ]
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        for p in procs:  # both start together
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        for p in procs:
            out, _ = p.communicate(timeout=300)
            assert p.returncode == 0 and json.loads(out)["writes"] == n
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    with open_store(url) as st, psycopg.connect(url) as conn:
        assert st.outcome_count() == 2 * n
        assert len({r for (r,) in conn.execute("SELECT DISTINCT replica FROM outcomes")}) == 2
        rows = conn.execute(
            "SELECT server, tool, success, latency_s, server_failed FROM outcomes ORDER BY id"
        ).fetchall()
        want_servers, want_tools = _replay(rows)
        servers, tools = st.load_stats()
    assert sum(t.calls for t in tools.values()) == 2 * n
    assert {k: t.calls for k, t in tools.items()} == {k: t.calls for k, t in want_tools.items()}
    assert set(tools) == {t.key for t in writer_catalog().tools()}
    for key, want in want_tools.items():
        assert tools[key].success == pytest.approx(want.success, abs=1e-12)
        assert tools[key].latency_s == pytest.approx(want.latency_s, abs=1e-12)
    for sid, want_s in want_servers.items():
        got = servers[sid]
        assert got.calls == want_s.calls
        for field in ("success", "variance", "fail_prob", "latency_s"):
            assert getattr(got, field) == pytest.approx(getattr(want_s, field), abs=1e-12)


def test_two_replicas_syncing_one_catalog_converge_and_embed_each_text_once(url: str) -> None:
    embedders = [HashingEmbedder(), HashingEmbedder()]
    routers = [Router(_catalog(), store=url, embedder=e) for e in embedders]
    errors: list[BaseException] = []
    barrier = threading.Barrier(2, timeout=30)

    def sync(r: Router) -> None:
        try:
            barrier.wait()
            r.index()
        except BaseException as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=sync, args=(r,)) for r in routers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    try:
        assert not errors and not any(t.is_alive() for t in threads)
        texts = [c for e in embedders for c in e.calls]
        assert texts and len(texts) == len(set(texts))  # each text embedded by one replica
        assert min(len(e.calls) for e in embedders) == 0
        with open_store(url) as st:
            assert st.catalog_version() == 1 and st.load_catalog() == _catalog()
        assert [c.tool for c in routers[0].route("weather forecast")] == [
            c.tool for c in routers[1].route("weather forecast")
        ]
    finally:
        for r in routers:
            r.close()


def test_a_catalog_change_is_notified_to_listeners_and_a_no_op_sync_is_not(url: str) -> None:
    async def main() -> list[str]:
        got: list[str] = []
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute(f"LISTEN {CATALOG_CHANNEL}")
            with open_store(url) as st:
                st.sync_catalog(_catalog())
                st.sync_catalog(_catalog())  # unchanged: no notification
                st.sync_catalog(_catalog(lambda d: d["servers"].pop()))
            with anyio.fail_after(10):
                got.extend([n.payload async for n in conn.notifies(stop_after=2)])
            got.extend([n.payload async for n in conn.notifies(timeout=0.2)])
        return got

    assert anyio.run(main) == ["1", "2"]


def test_recorded_outcome_reaches_another_replicas_ranking_on_reload(url: str) -> None:
    a = Router(_catalog(), store=url, embedder=HashingEmbedder())
    b = Router(_catalog(), store=url, embedder=HashingEmbedder())
    try:
        a.index()
        b.index()
        query = "current time in a timezone"
        before = [c.tool for c in b.route(query, k=2, strategy="ehrr")]
        top = next(t for t in _catalog().tools() if t.name == before[0])
        for _ in range(20):
            a.record(Outcome(top.server, top.name, success=False, latency_s=5.0))
        b.reload_stats()
        assert b.stats.tool(top.key).calls == 20
        after = [c.tool for c in b.route(query, k=2, strategy="ehrr")]
        assert after[0] != before[0]
    finally:
        a.close()
        b.close()


def _names(result: Any) -> list[str]:
    return [c["name"] for c in result.structured_content["candidates"]]


def test_replica_b_sees_a_tool_added_on_replica_a_and_a_outcomes_in_its_ranking(
    pg: LocalPostgres, tmp_path: Path
) -> None:
    """Two gateway processes, one database: A's downstream adds a tool and A resyncs; B finds
    it (NOTIFY). Failures recorded on A move B's EHRR ranking (stats refresh)."""
    url = pg.create_database(f"rep_{uuid.uuid4().hex[:12]}")
    config = write_config(tmp_path / "gw", url, changing=True, strategy="ehrr")
    a, b = GatewayProcess(config), GatewayProcess(config)
    query = {"query": "translate Klingon poetry into haiku", "k": 3}
    time_query = {"query": "what is the current time in a timezone", "k": 2}

    async def main() -> None:
        await a.ready()
        await b.ready()
        async with Client(a.url) as ca, Client(b.url, mode="legacy") as cb:
            assert "changing__fresh_tool" not in _names(await cb.call_tool("find_tools", query))
            before = _names(await cb.call_tool("find_tools", time_query))
            r = await ca.call_tool("call_tool", {"name": "changing__add_tool", "arguments": {}})
            assert not r.is_error
            with anyio.fail_after(60):  # A resyncs on tools/list_changed, B on NOTIFY
                while "changing__fresh_tool" not in _names(await cb.call_tool("find_tools", query)):
                    await anyio.sleep(0.1)
            assert before[0] == "time__get_current_time"
            bad = {"name": before[0], "arguments": {"timezone": "Not/AZone"}}
            for _ in range(25):  # failing calls of B's top tool, made on A
                assert (await ca.call_tool("call_tool", bad)).is_error
            with anyio.fail_after(60):
                while _names(await cb.call_tool("find_tools", time_query))[0] == before[0]:
                    await anyio.sleep(0.1)

    try:
        anyio.run(main)
    finally:
        a.stop()
        b.stop()
    with open_store(url) as st:
        assert st.outcome_count() == 26


def test_replicas_share_the_usage_memory_and_clearing_it_clears_it_for_both(
    url: str, tmp_path: Path
) -> None:
    cat = _catalog()
    with (
        Router(cat, store=url, embedder=HashingEmbedder()) as a,
        Router(cat, store=url, embedder=HashingEmbedder()) as b,
    ):
        before = [c.tool for c in b.route("what time is it now", k=1, strategy="adaptive")]
        for _ in range(3):
            a.remember_use("what time is it", "time", "convert_time", True, client="ci")
        b.reload_stats()  # a replica's periodic refresh
        got = b.route("what time is it now", k=1, strategy="adaptive", client="ci")
        assert [c.tool for c in got] == ["convert_time"] != before
        assert b.forget_uses() == 1
        a.reload_stats()
        assert [c.tool for c in a.route("what time is it now", k=1, strategy="adaptive",
                                        client="ci")] == before  # fmt: skip
