"""What a big server's indexing costs another client: ``call_tool`` latency of the time
server's tool while a 20,000-tool server is being indexed, beside the same client's latency
once indexing is over, in the same run.

    nice -n 10 python -m benchmarks.startup_latency [--tools 20000] [--timeout 240]
        [--after-calls 200] [--before /path/to/other/checkout/src] [--out F]

Starts ``toolroute serve --transport http`` (a fresh store) over the time server and
tests/fixtures/many_tools_server.py (the big listing first, as in ``benchmarks.startup``),
then one client calls ``time__get_current_time`` back to back from its first success until
the big server's first tool answers (the "during" sample), then ``--after-calls`` more (the
baseline). A second client tries the big server's tool once a second to learn when indexing
ends. Reported: p50, p99 and the longest call in each sample, and the p99 the indexing adds.
With ``--before``, the same first with that source tree on PYTHONPATH. Every wait is bounded by
``--timeout``; the gateway is stopped at the end of each run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from tests.helpers.net import stop

from benchmarks._report import write_report
from benchmarks.startup import REPO, TIME_TOOL, TOOLROUTE, _config, _port


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _measure(src: Path, tools: int, timeout_s: float, after_calls: int) -> dict[str, Any]:
    from mcp import Client

    out: dict[str, Any] = {"load": round(os.getloadavg()[0], 1)}
    during: list[float] = []
    after: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        config, port = _config(directory, "big first", tools, 20.0, 1.0), _port()
        argv = [str(TOOLROUTE), "serve", "--config", str(config), "--transport", "http"]
        proc = subprocess.Popen(
            [*argv, "--port", str(port)],
            env={**os.environ, "PYTHONPATH": str(src)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}/mcp"
        args = {"name": TIME_TOOL, "arguments": {"timezone": "Asia/Tokyo"}}
        indexing = {"on": True}
        try:
            with anyio.move_on_after(timeout_s) as scope:
                while True:
                    try:
                        async with Client(url) as c, Client(url) as watcher:

                            async def watch() -> None:
                                # the big server is indexed once its first tool is callable
                                big = {"name": "many__tool_00000", "arguments": {"id": "1"}}
                                while indexing["on"]:
                                    r = await watcher.call_tool("call_tool", big)
                                    indexing["on"] = bool(r.is_error)
                                    await anyio.sleep(1.0)

                            async with anyio.create_task_group() as tg:
                                tg.start_soon(watch)
                                while (await c.call_tool("call_tool", args)).is_error:
                                    await anyio.sleep(0.05)
                                while indexing["on"]:
                                    t = time.perf_counter()
                                    await c.call_tool("call_tool", args)
                                    during.append(time.perf_counter() - t)
                            for _ in range(after_calls):
                                t = time.perf_counter()
                                await c.call_tool("call_tool", args)
                                after.append(time.perf_counter() - t)
                        break
                    except Exception:  # not listening yet: try again shortly
                        if proc.poll() is not None:
                            out["error"] = f"exited with {proc.returncode}"
                            break
                        await anyio.sleep(0.05)
            out["timed_out"] = scope.cancelled_caught
        finally:
            stop(proc)
    for name, sample in (("during", during), ("after", after)):
        if sample:
            out[name] = {
                "calls": len(sample),
                "p50_ms": round(1000 * statistics.median(sample), 1),
                "p99_ms": round(1000 * _pct(sample, 0.99), 1),
                "max_ms": round(1000 * max(sample), 1),
            }
    return out


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--tools", type=int, default=20000)
    ap.add_argument("--timeout", type=float, default=240.0)
    ap.add_argument("--after-calls", type=int, default=200)
    ap.add_argument("--before", type=Path, default=None, help="another checkout's src/")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    runs = [("before", args.before)] if args.before else []
    runs.append(("after", REPO / "src"))
    lines = [
        f"# Another client's `call_tool` while a {args.tools:,}-tool server indexes",
        "",
        f"`python -m benchmarks.startup_latency --tools {args.tools} --timeout {args.timeout:g} "
        f"--after-calls {args.after_calls}{' --before …/src' if args.before else ''}` "
        f"({os.cpu_count()} CPUs; load: the 1-minute load average at spawn).",
        "",
        "| run | load | calls during | p50 ms | p99 ms | longest ms | calls after | p50 ms "
        "| p99 ms | longest ms | p99 added ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, src in runs:
        got = anyio.run(_measure, src, args.tools, args.timeout, args.after_calls)
        print(label, json.dumps(got), flush=True)
        d, a = got.get("during", {}), got.get("after", {})
        added = round(d["p99_ms"] - a["p99_ms"], 1) if d and a else "-"
        lines.append(
            f"| {label} | {got['load']} | {d.get('calls', 0)} | {d.get('p50_ms', '-')} "
            f"| {d.get('p99_ms', '-')} | {d.get('max_ms', '-')} | {a.get('calls', 0)} "
            f"| {a.get('p50_ms', '-')} | {a.get('p99_ms', '-')} | {a.get('max_ms', '-')} "
            f"| {added} |"
        )
    text = "\n".join(lines) + "\n"
    write_report(text, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
