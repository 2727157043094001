"""What a faulty downstream server costs, measured through a real ``toolroute serve`` (stdio).

    python -m benchmarks.faults [--calls 20] [--timeout 10] [--cap BYTES] [--out FILE]

With ``--cap 314572800`` (300 MiB, above the 100 MB result) the result is passed through: the
RSS row then shows what the cap saves (``benchmarks/results/faults-nocap.md``).

The gateway fronts the reference time server and the fault servers of tests/fixtures/faults
(crash mid-call, hang, a 100 MB result). Measured in one run, each result checked:

- ``call_tool time__get_current_time`` latency alone (the baseline) and while a hung call to
  another server is in flight;
- how long a hung call and a crashing call take to come back as ``isError`` (bound: the
  call timeout + 1 s), and how long the crashed server takes to be usable again;
- a 100 MB result: time to the ``too_large`` error, and the growth of the gateway's peak RSS
  (VmHWM from /proc, reset to the current RSS just before) against ``max_result_bytes``.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from toolroute.downstream.stdio_client import ProcessInfo, bounded_stdio_client

REPO = Path(__file__).resolve().parents[1]
SDK = REPO / "tests" / "fixtures" / "faults" / "sdk_faults.py"
PY = sys.executable
TOOLROUTE = str(Path(PY).with_name("toolroute"))
CAP = 4 * 1024 * 1024
TIME_CALL: dict[str, Any] = {
    "name": "time__get_current_time",
    "arguments": {"timezone": "Asia/Tokyo"},
}


def _servers(tmp: Path) -> dict[str, Any]:
    def fault(mode: str) -> dict[str, Any]:
        return {"command": PY, "args": [str(SDK), "--mode", mode, "--record", str(tmp / "rec")]}

    return {
        "time": {"command": PY, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
        "crash": fault("crash"),
        "hang": fault("hang"),
        "huge": fault("huge"),
    }


def _reset_peak(pid: int | None) -> None:
    """Reset the process's VmHWM to its current RSS (Linux ≥ 4.0, /proc/PID/clear_refs)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def _peak_rss(pid: int | None) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"VmHWM:\s+(\d+) kB", status)
    assert found is not None
    return int(found.group(1)) * 1024


def _ms(xs: list[float]) -> str:
    return f"{statistics.median(xs) * 1000:.2f}"


async def _timed(c: Client, name: str, args: dict[str, Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    r = await c.call_tool("call_tool", {"name": name, "arguments": args})
    return r, time.perf_counter() - start


async def measure(calls: int, timeout_s: float, cap: int = CAP) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="toolroute-faults-"))
    (tmp / "servers.json").write_text(json.dumps({"mcpServers": _servers(tmp)}))
    (tmp / "toolroute.toml").write_text(
        f'[toolroute]\nstore = "{tmp / "store"}"\ncall_gate = false\n'
        f"call_timeout_s = {timeout_s}\nmax_result_bytes = {cap}\n"
    )
    info = ProcessInfo()
    params = StdioServerParameters(
        command=TOOLROUTE, args=["serve", "--config", str(tmp / "servers.json")]
    )
    out: dict[str, Any] = {"calls": calls, "timeout_s": timeout_s, "cap": cap}
    transport = bounded_stdio_client("gateway", params, max_line_bytes=400 << 20, info=info)
    async with Client(transport, mode="legacy", read_timeout_seconds=120) as c:
        for _ in range(5):
            await c.call_tool("call_tool", TIME_CALL)
        alone = []
        for _ in range(calls):
            r, dt = await _timed(c, TIME_CALL["name"], TIME_CALL["arguments"])
            assert not r.is_error
            alone.append(dt)
        out["time_alone_ms"] = _ms(alone)

        hung: list[float] = []
        beside: list[float] = []

        async def hang() -> None:
            r, dt = await _timed(c, "hang__hang", {})
            assert r.is_error and r.structured_content["error"] == "timeout"
            hung.append(dt)

        async with anyio.create_task_group() as tg:
            tg.start_soon(hang)
            await anyio.sleep(0.2)  # the hung call is in flight
            for _ in range(calls):
                r, dt = await _timed(c, TIME_CALL["name"], TIME_CALL["arguments"])
                assert not r.is_error
                beside.append(dt)
        out["time_beside_hang_ms"] = _ms(beside)
        out["hang_s"] = round(hung[0], 3)

        r, dt = await _timed(c, "crash__crash", {})
        assert r.is_error and r.structured_content["error"] == "crashed"
        out["crash_s"] = round(dt, 3)
        start = time.perf_counter()
        with anyio.fail_after(60):
            while (await _timed(c, "crash__echo", {"text": "x"}))[0].is_error:
                await anyio.sleep(0.05)
        out["crash_back_s"] = round(time.perf_counter() - start, 3)

        await _timed(c, "huge__huge", {"size": 1024 * 1024})
        _reset_peak(info.pid)  # the model load's peak would hide the growth otherwise
        before = _peak_rss(info.pid)
        r, dt = await _timed(c, "huge__huge", {"size": 100 * 1024 * 1024})
        huge = 100 * 1024 * 1024
        refused = r.is_error and (r.structured_content or {}).get("error") == "too_large"
        if refused != (cap < huge):
            raise RuntimeError(f"100 MB result with cap {cap}: {str(r.content)[:300]}")
        out["huge_outcome"] = "isError too_large" if refused else "passed on"
        out["huge_s"] = round(dt, 3)
        out["rss_before_mb"] = round(before / 2**20, 1)
        out["rss_growth_mb"] = round((_peak_rss(info.pid) - before) / 2**20, 2)
    return out


def report(m: dict[str, Any]) -> str:
    cap_mb = m["cap"] / 2**20
    return "\n".join(
        [
            "# Faults through `toolroute serve` (benchmarks/faults.py)",
            "",
            f"call_timeout_s = {m['timeout_s']:g}, max_result_bytes = {cap_mb:g} MiB, "
            f"{m['calls']} timed calls per row.",
            "",
            "| scenario | measured | bound / baseline |",
            "|---|---:|---:|",
            f"| call_tool time, alone (p50 ms) | {m['time_alone_ms']} | baseline |",
            f"| call_tool time, while a hung call waits (p50 ms) | {m['time_beside_hang_ms']}"
            f" | {m['time_alone_ms']} |",
            f"| hung call → isError timeout (s) | {m['hang_s']} | ≤ {m['timeout_s'] + 1:g} |",
            f"| crash mid-call → isError crashed (s) | {m['crash_s']} | ≤ {m['timeout_s'] + 1:g} |",
            f"| crashed server usable again (s) | {m['crash_back_s']} | restart backoff 0.5 |",
            f"| 100 MB result → {m['huge_outcome']} (s) | {m['huge_s']} "
            f"| ≤ {m['timeout_s'] + 1:g} |",
            f"| gateway peak RSS growth on it (MiB) | {m['rss_growth_mb']} | < {2 * cap_mb:g} "
            f"(2 × cap); RSS before {m['rss_before_mb']} |",
            "",
        ]
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--cap", type=int, default=CAP, help="max_result_bytes of the gateway")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "faults.md")
    args = ap.parse_args()
    text = report(anyio.run(measure, args.calls, args.timeout, args.cap))
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
