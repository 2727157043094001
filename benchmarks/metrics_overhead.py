"""Metrics overhead per request: call_tool and find_tools with /metrics' counting on vs off.

    python -m benchmarks.metrics_overhead [--calls 400] [--batch 20] [--micro 20000] [--out F]

In one process, over one downstream downstreams (the reference time server, ``python -m
mcp_server_time``) and one router, two gateways are made by ``make_gateway`` from the same
config but for ``[metrics] enabled`` (true / false), each behind the official SDK client over
its in-memory transport (the gateway's whole handler: dispatch, validation, the downstream call
over stdio, recording; only the client transport, identical for both, is left out). Calls of
``call_tool time__get_current_time`` and ``find_tools`` alternate between the two in batches
whose order rotates, so machine noise hits both alike; every answer is checked. Then, alone:
what the metrics' ``observed`` adds to one request (``--micro`` awaits of an answered
coroutine, counted vs not), and what rendering ``/metrics`` costs after the run.

Prints a markdown table (p50 / p95 / mean per path, on/off ratios); ``--out`` also writes it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, types

from toolroute.config import load_config
from toolroute.gateway.ops.app import make_gateway, running_downstreams
from toolroute.gateway.ops.syncing import sync_router
from toolroute.settings import MetricsTable

PY = sys.executable
TIME = {"command": PY, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}
CALL = {"name": "time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}
FIND = {"query": "what time is it in Tokyo", "k": 5}


def _check(r: types.CallToolResult, what: str) -> None:
    if r.is_error:
        raise RuntimeError(f"{what} failed: {r.content}")


def _stats(ms: list[float]) -> tuple[float, float, float]:
    ms = sorted(ms)
    return ms[len(ms) // 2], ms[int(len(ms) * 0.95)], statistics.fmean(ms)


async def _measure(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    import json

    config = tmp / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"time": TIME}}))
    cfg = load_config(config)
    own = {"store": str(tmp / "store"), "call_gate": "off"}
    cfg = replace(cfg, settings=cfg.settings.model_copy(update=own))
    times: dict[str, list[float]] = {}
    async with running_downstreams(cfg) as downstreams:
        router, _ = await sync_router(cfg, downstreams)
        on = make_gateway(replace(cfg, metrics=MetricsTable(enabled=True)), router, downstreams)
        off = make_gateway(replace(cfg, metrics=MetricsTable(enabled=False)), router, downstreams)
        assert on.shared.metrics.enabled and not off.shared.metrics.enabled
        async with (
            Client(on.server, mode="legacy") as c_on,  # type: ignore[arg-type]
            Client(off.server, mode="legacy") as c_off,  # type: ignore[arg-type]
        ):
            paths = {
                "call_tool, metrics on": (c_on, "call_tool", CALL),
                "call_tool, metrics off": (c_off, "call_tool", CALL),
                "find_tools, metrics on": (c_on, "find_tools", FIND),
                "find_tools, metrics off": (c_off, "find_tools", FIND),
            }
            for c, tool, arguments in paths.values():  # warm-up: model, caches, connections
                for _ in range(10):
                    _check(await c.call_tool(tool, arguments), tool)
            order = list(paths)
            rounds = max(1, args.calls // args.batch)
            for r in range(rounds):
                for name in order[r % len(order) :] + order[: r % len(order)]:
                    c, tool, arguments = paths[name]
                    for _ in range(args.batch):
                        start = time.perf_counter()
                        result = await c.call_tool(tool, arguments)
                        times.setdefault(name, []).append((time.perf_counter() - start) * 1000)
                        _check(result, tool)
        start = time.perf_counter()
        body = on.shared.metrics.exposition()
        scrape_ms = (time.perf_counter() - start) * 1000
        micro = await _micro(on.shared.metrics, off.shared.metrics, args.micro)
        router.close()
    return {"times": times, "scrape_ms": scrape_ms, "scrape_bytes": len(body), "micro": micro}


async def _micro(metrics: Any, no_metrics: Any, n: int) -> dict[str, float]:
    """µs per request of observed() around an answered call, counted vs not."""
    params = types.CallToolRequestParams(name="call_tool", arguments=CALL)
    answer = types.CallToolResult(content=[types.TextContent(type="text", text="ok")])

    async def answered() -> types.CallToolResult:
        return answer

    best = {"on": float("inf"), "off": float("inf")}
    block = max(1, n // 10)
    for _ in range(10):  # blocks alternate; the best (least disturbed) block of each counts
        for label, m in (("on", metrics), ("off", no_metrics)):
            start = time.perf_counter()
            for _ in range(block):
                await m.observed(params, answered())
            best[label] = min(best[label], (time.perf_counter() - start) / block * 1e6)
    return best


def _table(report: dict[str, Any], args: argparse.Namespace, seconds: float) -> str:
    t = report["times"]
    lines = [
        "# Metrics overhead per request",
        "",
        f"`python -m benchmarks.metrics_overhead --calls {args.calls} --batch {args.batch} "
        f"--micro {args.micro}` ({seconds:.0f} s, one run)",
        "",
        "Two gateways over the same downstreams and router, `[metrics] enabled` true vs false, "
        "each behind the official client's in-memory transport; batches alternate (rotating "
        "order).",
        "",
        "| path | calls | p50 ms | p95 ms | mean ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, ms in t.items():
        p50, p95, mean = _stats(ms)
        lines.append(f"| {name} | {len(ms)} | {p50:.3f} | {p95:.3f} | {mean:.3f} |")
    lines += ["", "| ratio on / off | p50 | p95 | mean |", "|---|---:|---:|---:|"]
    for tool in ("call_tool", "find_tools"):
        a, b = _stats(t[f"{tool}, metrics on"]), _stats(t[f"{tool}, metrics off"])
        lines.append(
            f"| {tool} | " + " | ".join(f"{x / y:.3f}" for x, y in zip(a, b, strict=True)) + " |"
        )
    micro = report["micro"]
    lines += [
        "",
        f"observed() around an answered call_tool: {micro['on']:.2f} µs counted vs "
        f"{micro['off']:.2f} µs not: **{micro['on'] - micro['off']:.2f} µs per request** "
        f"(best of 10 alternating blocks of {args.micro // 10} each).",
        "",
        f"Rendering /metrics after the run: {report['scrape_ms']:.2f} ms, "
        f"{report['scrape_bytes']} bytes.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--calls", type=int, default=400, help="timed calls per path")
    p.add_argument("--batch", type=int, default=20)
    p.add_argument("--micro", type=int, default=20000)
    p.add_argument("--out", type=Path)
    args = p.parse_args()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        report = anyio.run(_measure, args, Path(tmp))
    text = _table(report, args, time.perf_counter() - start)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
