"""Store benchmark: SQLite vs PostgreSQL (issue 15). Starts a local PostgreSQL (the machine's
initdb/pg_ctl, default durability settings: fsync on, synchronous_commit on).

    python -m benchmarks.store_bench [--writes N] [--repeats N] [--sections writes,route,replicas]

1. Outcome-write throughput: each replica is a process recording ``--writes`` seeded outcomes
   on the same 10 tools through a StatsBook (tests/fixtures/outcome_writer.py), all replicas
   starting together; SQLite (one file shared by the processes) and PostgreSQL with the EMA
   updated in one SQL statement (``sql``) or under ``SELECT … FOR UPDATE`` (``lock``), with
   the server's default durability and with ``synchronous_commit=off`` set in the store URL.
2. Route latency (index in memory): a Router over shared/benchmarks/union (904 tools, ONNX
   MiniLM) on each store, the union queries, alternating stores query by query; also with the
   routing event a gateway's find_tools appends to the store.
3. Two gateway replicas (``toolroute serve`` over HTTP) on one database: seconds from the
   commit of A's resync (its NOTIFY) until B's find_tools returns the tool A's downstream
   added; seconds from the failure recorded on A that flips A's EHRR top tool until B's top
   tool flips too. B is polled every 50 ms (so figures are upper bounds within 50 ms).

Writes benchmarks/results/store.md and store.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "benchmarks"
RESULTS = REPO / "benchmarks" / "results"
WRITER = REPO / "tests" / "fixtures" / "outcome_writer.py"
ASYNC_COMMIT = "synchronous_commit=off"
ASYNC_COMMIT_URL = "?options=-c%20synchronous_commit%3Doff"  # set by the store's URL


def write_throughput(target: str, replicas: int, writes: int, mode: str | None) -> float:
    """Outcomes per second over all replicas, from the common start to the last one done."""
    args = [mode] if mode else []
    procs = [
        subprocess.Popen(
            [sys.executable, str(WRITER), target, str(seed), str(writes), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        for seed in range(1, replicas + 1)
    ]
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        start = time.perf_counter()
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        for p in procs:
            p.communicate(timeout=600)
            if p.returncode != 0:
                raise SystemExit(f"writer failed on {target}")
        return replicas * writes / (time.perf_counter() - start)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def bench_writes(pg: Any, writes: int, repeats: int) -> list[dict[str, Any]]:
    rows = []
    for replicas in (1, 2):
        for store, mode in (
            ("sqlite", None),
            ("postgresql", "sql"),
            ("postgresql", "lock"),
            (f"postgresql, {ASYNC_COMMIT}", "sql"),
            (f"postgresql, {ASYNC_COMMIT}", "lock"),
        ):
            rates = []
            for _ in range(repeats):
                with tempfile.TemporaryDirectory() as d:
                    target = d if store == "sqlite" else pg.create_database(_db())
                    if store.endswith(ASYNC_COMMIT):
                        target += ASYNC_COMMIT_URL
                    rates.append(write_throughput(target, replicas, writes, mode))
            rows.append(
                {
                    "store": store,
                    "stats_update": mode or "sql",
                    "replicas": replicas,
                    "writes": replicas * writes,
                    "writes_per_s": round(statistics.median(rates), 1),
                }
            )
            print(rows[-1], file=sys.stderr)
    return rows


def _db() -> str:
    return f"b_{uuid.uuid4().hex[:12]}"


class _Recorded:
    """An embedder that notes every text it embeds (which cached vectors to copy)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.texts: list[str] = []

    @property
    def model_id(self) -> str:
        return str(self.inner.model_id)

    @property
    def dim(self) -> int:
        return int(self.inner.dim)

    def embed(self, texts: Any) -> Any:
        self.texts.extend(texts)
        return self.inner.embed(texts)


def bench_route(pg: Any, rounds: int) -> dict[str, Any]:
    import numpy as np

    from toolroute.catalog.loader import load_catalog
    from toolroute.embed.cache import text_key
    from toolroute.embed.onnx import OnnxEmbedder
    from toolroute.router import Router

    catalog = load_catalog(SHARED / "union" / "catalog.json")
    queries = [
        json.loads(line)["query"]
        for line in (REPO / "benchmarks" / "union_queries.jsonl").read_text().splitlines()
        if line.strip()
    ]
    embedder = OnnxEmbedder()
    with tempfile.TemporaryDirectory() as d:
        url = pg.create_database(_db())
        recorded = _Recorded(embedder)
        with Router(catalog, store=d, embedder=recorded) as first:
            first.index()  # every text embedded once, into the SQLite store's cache
        sqlite_router = Router(catalog, store=d, embedder=embedder)
        sqlite_router.index()  # from the cache
        # Same vectors in PostgreSQL (no second embedding of 904 tools): copy the cache.
        pg_router = Router(catalog, store=url, embedder=embedder)
        keys = {text_key(t) for t in recorded.texts}
        vectors = sqlite_router.store.get_vectors(embedder.model_id, keys, embedder.dim)
        pg_router.store.put_vectors(embedder.model_id, vectors)
        pg_router.index()
        routers = {"sqlite": sqlite_router, "postgresql": pg_router}
        out: dict[str, Any] = {"tools": catalog.tool_count, "queries": len(queries)}
        for strategy in ("default", "ehrr"):
            for with_event in (False, True):
                times: dict[str, list[float]] = {k: [] for k in routers}
                for r in routers.values():  # warm-up
                    r.route(queries[0], strategy=strategy)
                for _ in range(rounds):
                    for q in queries:
                        for name, r in routers.items():
                            t = time.perf_counter()
                            r.route(q, strategy=strategy)
                            if with_event:
                                r.store.record_event(json.dumps({"query": q}))
                            times[name].append((time.perf_counter() - t) * 1000)
                key = f"{strategy}{' + event' if with_event else ''}"
                out[key] = {
                    name: {
                        "p50_ms": round(statistics.median(v), 2),
                        "p95_ms": round(float(np.percentile(v, 95)), 2),
                    }
                    for name, v in times.items()
                }
                out[key]["ratio_p50"] = round(
                    out[key]["postgresql"]["p50_ms"] / out[key]["sqlite"]["p50_ms"], 3
                )
                print(key, out[key], file=sys.stderr)
        for name, r in routers.items():  # the event write alone (find_tools appends one)
            times = []
            for q in queries * rounds:
                t = time.perf_counter()
                r.store.record_event(json.dumps({"query": q}))
                times.append((time.perf_counter() - t) * 1000)
            out[f"event_write_p50_ms_{name}"] = round(statistics.median(times), 3)
            print(name, "event write p50 ms", out[f"event_write_p50_ms_{name}"], file=sys.stderr)
        for r in routers.values():
            r.close()
    return out


def _names(result: Any) -> list[str]:
    return [c["name"] for c in result.structured_content["candidates"]]


async def _replica_run(a: Any, b: Any, url: str) -> dict[str, float]:
    import anyio
    import psycopg
    from mcp import Client

    from toolroute.store.postgres import CATALOG_CHANNEL

    new_tool = {"query": "translate Klingon poetry into haiku", "k": 3}
    time_query = {"query": "what is the current time in a timezone", "k": 2}
    bad = {"name": "time__get_current_time", "arguments": {"timezone": "Not/AZone"}}
    await a.ready()
    await b.ready()
    async with (
        Client(a.url, mode="legacy") as ca,
        Client(b.url, mode="legacy") as cb,
        await psycopg.AsyncConnection.connect(url, autocommit=True) as conn,
    ):
        await conn.execute(f"LISTEN {CATALOG_CHANNEL}")
        with anyio.fail_after(120):
            await ca.call_tool("call_tool", {"name": "changing__add_tool", "arguments": {}})
            async for _ in conn.notifies(stop_after=1):
                pass
            synced = time.perf_counter()
            while "changing__fresh_tool" not in _names(await cb.call_tool("find_tools", new_tool)):
                await anyio.sleep(0.05)
            tool_s = time.perf_counter() - synced
            top = _names(await cb.call_tool("find_tools", time_query))[0]
            while _names(await ca.call_tool("find_tools", time_query))[0] == top:
                await ca.call_tool("call_tool", bad)
            flipped = time.perf_counter()
            while _names(await cb.call_tool("find_tools", time_query))[0] == top:
                await anyio.sleep(0.05)
            stats_s = time.perf_counter() - flipped
    return {"new_tool_on_b_s": round(tool_s, 3), "ranking_on_b_s": round(stats_s, 3)}


def bench_replicas(pg: Any, repeats: int) -> list[dict[str, float]]:
    import anyio
    from tests.helpers.gateways import GatewayProcess, write_config

    out = []
    for _ in range(repeats):
        url = pg.create_database(_db())
        with tempfile.TemporaryDirectory() as d:
            config = write_config(Path(d), url, changing=True, strategy="ehrr")
            a, b = GatewayProcess(config), GatewayProcess(config)
            try:
                out.append(anyio.run(_replica_run, a, b, url))
            finally:
                a.stop()
                b.stop()
        print(out[-1], file=sys.stderr)
    return out


def report(writes: list[dict[str, Any]], route: dict[str, Any], replicas: list[Any]) -> str:
    lines = [
        "# Store: SQLite vs PostgreSQL (issue 15)",
        "",
        "`python -m benchmarks.store_bench` on this machine (2 cores shared with other jobs:",
        "load average about 25 during the runs, so absolute figures are low and noisy);",
        "PostgreSQL 15 local on loopback with its default durability (fsync,",
        "synchronous_commit on); SQLite WAL with synchronous=NORMAL. Medians of the repeats.",
        "",
        "## Outcome writes (all replicas on the same 10 tools, started together)",
        "",
        "| store | stats update | replicas | outcomes | outcomes/s |",
        "|---|---|---:|---:|---:|",
    ]
    lines += [
        f"| {r['store']} | {r['stats_update']} | {r['replicas']} | {r['writes']} |"
        f" {r['writes_per_s']} |"
        for r in writes
    ]
    lines += [
        "",
        f"## Route latency, index in memory ({route['tools']} tools, {route['queries']} queries)",
        "",
        "| strategy | SQLite p50 / p95 ms | PostgreSQL p50 / p95 ms | PostgreSQL / SQLite (p50) |",
        "|---|---:|---:|---:|",
    ]
    for key, v in route.items():
        if isinstance(v, dict):
            s, p = v["sqlite"], v["postgresql"]
            lines.append(
                f"| {key} | {s['p50_ms']} / {s['p95_ms']} | {p['p50_ms']} / {p['p95_ms']} |"
                f" {v['ratio_p50']} |"
            )
    if "event_write_p50_ms_sqlite" in route:
        lines += [
            "",
            "Routing event write alone (one per find_tools), p50: SQLite"
            f" {route['event_write_p50_ms_sqlite']} ms, PostgreSQL"
            f" {route['event_write_p50_ms_postgresql']} ms.",
        ]
    if replicas:
        lines += [
            "",
            "## Two gateway replicas, one PostgreSQL",
            "",
            "| run | new tool on B after A's sync (s) | EHRR ranking on B after A's flip (s) |",
            "|---:|---:|---:|",
        ]
        lines += [
            f"| {i + 1} | {r['new_tool_on_b_s']} | {r['ranking_on_b_s']} |"
            for i, r in enumerate(replicas)
        ]
        worst_tool = max(r["new_tool_on_b_s"] for r in replicas)
        worst_rank = max(r["ranking_on_b_s"] for r in replicas)
        lines += ["", f"Worst of {len(replicas)}: {worst_tool} s and {worst_rank} s."]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--writes", type=int, default=1000, help="outcomes per replica")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3, help="passes over the queries")
    ap.add_argument(
        "--sections",
        default="writes,route,replicas",
        help="comma-separated sections to run; the others keep their saved results",
    )
    ap.add_argument(
        "--out", type=Path, default=RESULTS / "store.md", help="the report (its .json beside it)"
    )
    args = ap.parse_args()
    if not (SHARED / "union" / "catalog.json").is_file():
        raise SystemExit(f"error: {SHARED}/union/catalog.json not found (../shared missing)")
    from toolroute.store.local_pg import LocalPostgres

    sections = set(args.sections.split(","))
    out: Path = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    saved = out.with_suffix(".json")
    data = json.loads(saved.read_text()) if saved.is_file() else {}  # sections not rerun
    with LocalPostgres() as pg:
        if "writes" in sections:
            data["writes"] = bench_writes(pg, args.writes, args.repeats)
        if "route" in sections:
            data["route"] = bench_route(pg, args.rounds)
        if "replicas" in sections:
            data["replicas"] = bench_replicas(pg, args.repeats)
    saved.write_text(json.dumps(data, indent=2) + "\n")
    out.write_text(report(data.get("writes", []), data.get("route", {}), data.get("replicas", [])))
    print(out.read_text())


if __name__ == "__main__":
    main()
