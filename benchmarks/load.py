"""Load: many concurrent MCP sessions on ``toolroute serve --transport http``.

    python -m benchmarks.load [--sessions 10 50 200] [--duration 60] [--rate 100]
                              [--saturate 50] [--queries time|union] [--query-cache N]
                              [--json-response] [--repeat 2] [--calls-per-find 3]
                              [--baseline-src DIR]
                              [--out benchmarks/results/load]

Starts ``toolroute serve --transport http --port 0`` in front of the real reference time server
(``mcp-server-time``), then for each session count opens that many official-SDK clients over
streamable HTTP at once. Each session repeats "find_tools, then three call_tool" (the call gate
is on, so each session calls what its own find_tools promoted), paced so that all sessions
together offer ``--rate`` requests per second, for ``--duration`` seconds. Every result is
checked (no isError; the time names the asked timezone; the candidates hold
time__get_current_time); a request not answered within 30 s counts as an error. With
``--saturate N``, a last run of N unpaced sessions measures the most the gateway serves.

find_tools queries: ``time`` (36 short time questions) or ``union`` (the livemcpbench and
tool_attention benchmark queries in ../shared: 101 real agent needs, median about 110
characters; mcpbench's multi-paragraph task statements are left out, and so is the one query
longer than find_tools accepts). The gateway keeps an LRU
of query embeddings (``query_cache`` in toolroute.toml, written from ``--query-cache``): with
``--query-cache 0`` every find_tools embeds its query, so the figures are the cache-miss cost.
``--repeat 2`` runs the whole sequence twice: RSS that grows again in the second pass is a
leak, RSS that only grew in the first is a peak (allocator high-water mark).
``--json-response`` sets ``[http] json_response = true`` (one JSON body per reply, no SSE).

Reports per run: requests, achieved requests/s, errors, p50/p99 latency per meta-tool (as the
client sees it), the gateway's CPU use and its RSS (VmRSS of the ``toolroute serve`` process,
not its downstream children) before and after; RSS growth is over the whole sequence of runs.
Writes OUT.md and OUT.json. The client runs in this process on the same machine, so its own
CPU use is in the figures; the load average before and after is recorded as a noise marker.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from mcp import Client
from mcp.types import CallToolResult
from tests.helpers.net import stop

from toolroute.gateway.shell.meta_tools import MAX_QUERY_CHARS

PY = sys.executable
TOOLROUTE = str(Path(PY).with_name("toolroute"))
TIME_ARGS = ["-m", "mcp_server_time", "--local-timezone", "UTC"]
CITIES = ["Tokyo", "Berlin", "New York", "Sydney", "Lagos", "Lima", "Oslo", "Delhi", "Austin"]
QUERIES = [  # 36 distinct needs, so that no query cache makes find_tools look cheaper
    template.format(city)
    for template in (
        "what time is it in {}",
        "current local time in {}",
        "tell me the time right now in {}",
        "what is the current time in the {} timezone",
    )
    for city in CITIES
]
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks"
UNION_SOURCES = ("livemcpbench", "tool_attention")
ZONES = ["Asia/Tokyo", "Europe/Berlin", "America/New_York", "Australia/Sydney", "UTC"]
CALLS_PER_FIND = 3
REQUEST_TIMEOUT_S = 30.0
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Run:
    sessions: int
    rate: float | None
    duration_s: float
    calls_per_find: int = CALLS_PER_FIND
    latency_ms: dict[str, list[float]] = field(
        default_factory=lambda: {"find_tools": [], "call_tool": []}
    )
    errors: Counter[str] = field(default_factory=Counter)
    error_samples: list[str] = field(default_factory=list)
    open_failures: int = 0

    def error(self, kind: str, detail: str) -> None:
        self.errors[kind] += 1
        if len(self.error_samples) < 10:
            self.error_samples.append(f"{kind}: {detail[:200]}")


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (downstream servers, embedding workers)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue  # ended while we looked
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], list(children.get(pid, []))
    while todo:
        child = todo.pop()
        out.append(child)
        todo.extend(children.get(child, []))
    return out


def _children_cpu_s(pid: int) -> tuple[float, float]:
    """CPU seconds of the gateway's embedding workers, and of everything else below it (the
    downstream servers)."""
    workers = downstream = 0.0
    for child in _descendants(pid):
        try:
            cpu = _cpu_s(child)
            worker = b"multiprocessing" in Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if worker:
            workers += cpu
        else:
            downstream += cpu
    return workers, downstream


def _text(r: CallToolResult) -> str:
    return " ".join(getattr(c, "text", "") for c in r.content)


class _Start:
    """Every session opens first; the clock starts once all are open (or failed to)."""

    def __init__(self, sessions: int) -> None:
        self.pending = sessions
        self.go = anyio.Event()
        self.deadline = 0.0

    def settled(self) -> None:
        self.pending -= 1
        if self.pending == 0:
            self.go.set()


def _union_queries() -> list[str]:
    if not SHARED.is_dir():
        raise SystemExit(f"--queries union needs the shared benchmarks at {SHARED}")
    queries = [
        json.loads(line)["query"]
        for source in UNION_SOURCES
        for line in (SHARED / source / "queries.jsonl").read_text().splitlines()
        if line.strip()
    ]
    return [q for q in queries if len(q) <= MAX_QUERY_CHARS]  # one pasted 18,686-char page


async def _session(url: str, run: Run, start: _Start, seed: int, queries: list[str]) -> None:
    settled = False
    try:
        async with Client(url, mode="legacy", read_timeout_seconds=REQUEST_TIMEOUT_S) as client:
            settled = True
            start.settled()
            await start.go.wait()
            await _requests(client, run, start.deadline, random.Random(seed), queries)
    except Exception as e:  # opening or closing the session; counted, the others go on
        run.open_failures += 1
        run.error("session", f"{type(e).__name__}: {e}")
    finally:
        if not settled:
            start.settled()


async def _requests(
    client: Client, run: Run, deadline: float, rnd: random.Random, queries: list[str]
) -> None:
    interval = run.sessions / run.rate if run.rate else 0.0
    next_at = time.perf_counter() + rnd.uniform(0, interval)
    step = 0
    while True:
        now = time.perf_counter()
        if next_at >= deadline or now >= deadline:
            return
        if next_at > now:
            await anyio.sleep(next_at - now)
        find = step % (run.calls_per_find + 1) == 0
        tool = "find_tools" if find else "call_tool"
        zone = rnd.choice(ZONES)
        args: dict[str, Any] = (
            {"query": rnd.choice(queries), "k": 3}
            if find
            else {"name": "time__get_current_time", "arguments": {"timezone": zone}}
        )
        start = time.perf_counter()
        try:
            with anyio.fail_after(REQUEST_TIMEOUT_S):
                r = await client.call_tool(tool, args)
        except TimeoutError:
            run.error(f"{tool} timeout", f"no answer in {REQUEST_TIMEOUT_S:.0f}s")
        except Exception as e:
            run.error(f"{tool} exception", f"{type(e).__name__}: {e}")
        else:
            run.latency_ms[tool].append((time.perf_counter() - start) * 1000)
            names = [c.get("name") for c in (r.structured_content or {}).get("candidates", [])]
            if r.is_error:
                run.error(f"{tool} isError", _text(r))
            elif find and "time__get_current_time" not in names:
                run.error("find_tools wrong", repr(names))
            elif not find and zone not in _text(r):
                run.error("call_tool wrong", _text(r))
        step += 1
        # paced: keep the schedule (offered rate); unpaced: the next request at once
        next_at = next_at + interval if interval else time.perf_counter()


async def _sample_rss(pid: int, at: float, into: list[int]) -> None:
    await anyio.sleep(max(0.0, at - time.perf_counter()))
    into.append(_rss_kb(pid))


async def _run(
    url: str,
    pid: int,
    sessions: int,
    rate: float | None,
    duration: float,
    queries: list[str] = QUERIES,
    calls_per_find: int = CALLS_PER_FIND,
) -> Any:
    run = Run(sessions, rate, duration, calls_per_find)
    start = _Start(sessions)
    rss_before = _rss_kb(pid)
    rss_open: list[int] = []
    async with anyio.create_task_group() as tg:
        t_open = time.perf_counter()
        for i in range(sessions):
            tg.start_soon(_session, url, run, start, 1000 * sessions + i, queries)
        with anyio.fail_after(300):
            await start.go.wait()
        open_s = time.perf_counter() - t_open
        cpu_before, client_cpu_before = _cpu_s(pid), time.process_time()
        below_before = _children_cpu_s(pid)
        t0 = time.perf_counter()
        start.deadline = t0 + duration
        tg.start_soon(_sample_rss, pid, t0 + 0.9 * duration, rss_open)  # sessions still open
    wall = time.perf_counter() - t0
    cpu = _cpu_s(pid) - cpu_before
    client_cpu = time.process_time() - client_cpu_before
    below = [b - a for a, b in zip(below_before, _children_cpu_s(pid), strict=True)]
    done = sum(len(v) for v in run.latency_ms.values())

    def pct(ms: list[float], q: float) -> float | None:
        return round(float(np.percentile(ms, q)), 2) if ms else None

    return {
        "sessions": sessions,
        "offered_rate": rate,
        "duration_s": round(wall, 2),
        "open_all_s": round(open_s, 2),
        "requests": done,
        "throughput_rps": round(done / duration, 1),
        "errors": sum(run.errors.values()),
        "errors_by_kind": dict(run.errors),
        "error_samples": run.error_samples,
        "open_failures": run.open_failures,
        "latency_ms": {
            tool: {"n": len(ms), "p50": pct(ms, 50), "p99": pct(ms, 99), "max": pct(ms, 100)}
            for tool, ms in run.latency_ms.items()
        },
        "gateway_cpu_pct": round(100 * cpu / wall, 1),
        "gateway_cpu_ms_per_request": round(1000 * cpu / done, 2) if done else None,
        "client_cpu_pct": round(100 * client_cpu / wall, 1),
        "workers_cpu_pct": round(100 * below[0] / wall, 1),
        "downstream_cpu_pct": round(100 * below[1] / wall, 1),
        "gateway_rss_mb_before": round(rss_before / 1024, 1),
        "gateway_rss_mb_open": round(rss_open[0] / 1024, 1) if rss_open else None,
        "gateway_rss_mb_after": round(_rss_kb(pid) / 1024, 1),
    }


async def _wait_listening(err: Path, proc: subprocess.Popen[bytes]) -> str:
    with anyio.fail_after(180):  # embedder load + sync, then the line
        while True:
            m = re.search(r"listening on (http://\S+/mcp)", err.read_text(errors="replace"))
            if m:
                return m.group(1)
            if proc.poll() is not None:
                raise RuntimeError(f"toolroute serve exited: {err.read_text()[-2000:]}")
            await anyio.sleep(0.2)


async def _measure(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    config = tmp / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"time": {"command": PY, "args": TIME_ARGS}}}))
    settings = tmp / "toolroute.toml"
    settings.write_text(
        f"[toolroute]\nquery_cache = {args.query_cache}\n"
        f"[http]\njson_response = {str(args.json_response).lower()}\n"
    )
    queries = _union_queries() if args.queries == "union" else QUERIES
    err = tmp / "serve.err"
    cmd = [TOOLROUTE, "serve", "--config", str(config), "--store", str(tmp / "store")]
    cmd += ["--settings", str(settings)]
    with err.open("wb") as f:
        env = dict(os.environ)
        if args.baseline_src:  # the gateway runs that tree's code (e.g. a `git archive`)
            env["PYTHONPATH"] = str(args.baseline_src.resolve())
        proc = subprocess.Popen([*cmd, "--transport", "http", "--port", "0"], stderr=f, env=env)
    try:
        url = await _wait_listening(err, proc)
        warm = await _run(url, proc.pid, 1, None, 3.0)  # caches warm before the baseline
        if warm["errors"]:
            raise RuntimeError(f"warm-up failed: {warm['error_samples']}")
        rss_start = _rss_kb(proc.pid)
        load_start = os.getloadavg()
        runs, rss_pass = [], []
        for _ in range(args.repeat):
            for n in args.sessions:  # one after another, never at once
                run = await _run(
                    url, proc.pid, n, args.rate, args.duration, queries, args.calls_per_find
                )
                runs.append(run)  # noqa: PERF401
            if args.saturate:
                runs.append(
                    await _run(
                        url,
                        proc.pid,
                        args.saturate,
                        None,
                        args.saturate_duration,
                        queries,
                        args.calls_per_find,
                    )
                )
            rss_pass.append(round(_rss_kb(proc.pid) / 1024, 1))
        rss_end = _rss_kb(proc.pid)
        return {
            "runs": runs,
            "queries": args.queries,
            "distinct_queries": len(set(queries)),
            "query_cache": args.query_cache,
            "embed_workers": os.environ.get("TOOLROUTE_EMBED_WORKERS", "0"),
            "baseline_src": str(args.baseline_src) if args.baseline_src else None,
            "json_response": args.json_response,
            "gateway_rss_mb_start": round(rss_start / 1024, 1),
            "gateway_rss_mb_after_pass": rss_pass,
            "gateway_rss_mb_end": round(rss_end / 1024, 1),
            "rss_growth_pct": round(100 * (rss_end - rss_start) / rss_start, 1),
            "loadavg_1m_start": round(load_start[0], 2),
            "loadavg_1m_end": round(os.getloadavg()[0], 2),
            "cpus": os.cpu_count(),
            "calls_per_find": args.calls_per_find,
            "command": "python -m benchmarks.load " + " ".join(sys.argv[1:]),
        }
    finally:
        stop(proc)


def _markdown(rep: dict[str, Any]) -> str:
    lines = [
        "# Load: concurrent sessions on `toolroute serve --transport http`",
        "",
        f"`{rep['command']}` — mcp-server-time behind the gateway; each session repeats "
        f"find_tools then {rep['calls_per_find']} call_tool; official SDK clients over "
        f"streamable HTTP in one process on the same {rep['cpus']}-CPU machine (shared with "
        f"other jobs: load average {rep['loadavg_1m_start']} at the start, "
        f"{rep['loadavg_1m_end']} at the end). find_tools queries: {rep['queries']} "
        f"({rep['distinct_queries']} distinct); gateway query-embedding cache: "
        f"{rep['query_cache'] or 'off'}; embedding worker processes "
        f"(TOOLROUTE_EMBED_WORKERS; their CPU is the 'workers' column): "
        f"{rep.get('embed_workers', '0')}; HTTP replies: "
        f"{'JSON bodies (json_response)' if rep['json_response'] else 'SSE streams (default)'}"
        + (f"; gateway code: {rep['baseline_src']}" if rep.get("baseline_src") else "")
        + ".",
        "",
        "| sessions | offered req/s | s | requests | req/s | errors | find p50 ms | find p99 ms "
        "| call p50 ms | call p99 ms | call max ms | CPU % gateway / workers / downstream / client "
        "| gateway CPU ms/request | gateway RSS MB before → sessions open → after "
        "| open all s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---:|",
    ]
    for r in rep["runs"]:
        f, c = r["latency_ms"]["find_tools"], r["latency_ms"]["call_tool"]
        lines.append(
            f"| {r['sessions']} | {r['offered_rate'] or 'unpaced'} | {r['duration_s']} "
            f"| {r['requests']} | {r['throughput_rps']} | {r['errors']} | {f['p50']} "
            f"| {f['p99']} | {c['p50']} | {c['p99']} | {c['max']} "
            f"| {r['gateway_cpu_pct']} / {r.get('workers_cpu_pct', '–')} "
            f"/ {r.get('downstream_cpu_pct', '–')} / {r['client_cpu_pct']} "
            f"| {r['gateway_cpu_ms_per_request']} "
            f"| {r['gateway_rss_mb_before']} → {r['gateway_rss_mb_open']} → "
            f"{r['gateway_rss_mb_after']} | {r['open_all_s']} |"
        )
    lines += [
        "",
        f"Gateway RSS over the whole sequence: {rep['gateway_rss_mb_start']} MB → "
        f"{rep['gateway_rss_mb_end']} MB ({rep['rss_growth_pct']:+.1f} %)"
        + (
            f"; after each pass (sessions closed): {rep['gateway_rss_mb_after_pass']} MB."
            if len(rep["gateway_rss_mb_after_pass"]) > 1
            else "."
        ),
    ]
    errors = [(r["sessions"], r["errors_by_kind"], r["error_samples"]) for r in rep["runs"]]
    for sessions, kinds, samples in errors:
        if kinds:
            lines += ["", f"Errors at {sessions} sessions: {kinds}; e.g. {samples[:3]}"]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(
        description="Concurrent MCP sessions mixing find_tools and call_tool on the HTTP gateway.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    ap.add_argument("--sessions", type=int, nargs="+", default=[10, 50, 200])
    ap.add_argument("--duration", type=float, default=60.0, help="seconds per paced run")
    ap.add_argument("--rate", type=float, default=100.0, help="offered requests/s, all sessions")
    ap.add_argument("--saturate", type=int, default=0, help="then N unpaced sessions (0: skip)")
    ap.add_argument("--saturate-duration", type=float, default=30.0)
    ap.add_argument("--queries", choices=["time", "union"], default="time")
    ap.add_argument("--query-cache", type=int, default=1024, help="gateway LRU size (0: off)")
    ap.add_argument("--json-response", action="store_true", help="[http] json_response")
    ap.add_argument(
        "--calls-per-find",
        type=int,
        default=CALLS_PER_FIND,
        help="call_tool requests after each find_tools (0: find_tools only, the routing path)",
    )
    ap.add_argument(
        "--baseline-src",
        type=Path,
        help="serve the toolroute package under this src/ directory (an older tree) instead",
    )
    ap.add_argument("--repeat", type=int, default=1, help="passes over the whole sequence")
    ap.add_argument("--out", type=Path, help="write OUT.md and OUT.json")
    args = ap.parse_args()
    if min(args.sessions) < 1 or args.duration <= 0 or args.rate <= 0 or args.saturate < 0:
        ap.error("need sessions >= 1, duration > 0, rate > 0, saturate >= 0")
    if args.query_cache < 0 or args.repeat < 1:
        ap.error("need query-cache >= 0, repeat >= 1")
    with tempfile.TemporaryDirectory(prefix="toolroute-load-") as tmp:
        rep = anyio.run(_measure, args, Path(tmp))
    md = _markdown(rep)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".md").write_text(md)
        args.out.with_suffix(".json").write_text(json.dumps(rep, indent=2) + "\n")
    print(md.rstrip("\n"))


if __name__ == "__main__":
    main()
