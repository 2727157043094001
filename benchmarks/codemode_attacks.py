"""Code mode under attack: what one client's hostile scripts cost another client and the
gateway (issue 44's attacks), against a real `toolroute serve --transport http`.

    python -m benchmarks.codemode_attacks [--calls 100] [--scripts 10] [--out FILE] [--json FILE]

One gateway with code mode on at its default limits (the time server and the code-mode fixture
server; no tokens, no call gate). Alice, one client, measures her ``call_tool`` latency
(``--calls`` calls) and her ``execute("1 + 1")`` latency (``--scripts`` scripts) alone, then
again while mallory, another client, repeats each attack for the whole of her measurement:

- a value shared 22 times over (``x = [x, x]``), and a 1 MB string repeated 300 times;
- ``10**5000`` and ``math.factorial(10**5)`` as the value;
- the shared value, and shared tuples nested 150 deep, as a ``call_tool``'s arguments;
- two scripts at once awaiting a slow tool (3 s), and twelve scripts spinning on the CPU;
- an error with a 30-million-character message.

For each: alice's p50 and p99 beside her baseline of the same run, the latency the attack adds
to her p99, the gateway's peak RSS growth during the attack (its ``VmHWM``, reset before each,
against its RSS before), and how mallory's scripts ended. The target: at most 100 ms added to
another client's p99 and at most ``result_bytes`` of gateway memory per script.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import Implementation

from benchmarks.codemode_sandbox import code_mode_gateway
from toolroute.codemode import CodeModeLimits

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable
RESULT_BYTES = CodeModeLimits().result_bytes
DOUBLED = "x = []\nfor i in range(22):\n    x = [x, x]\n"
TUPLES = "t = (1,)\nfor i in range(150):\n    t = (t, t)\n"
ATTACKS: dict[str, tuple[str, int]] = {
    # name: (mallory's script, how many she keeps running at once)
    "value shared 22 times over": (DOUBLED + "x", 1),
    "1 MB string repeated 300 times": ("s = 'a' * 10**6\n[s] * 300", 1),
    "10**5000 as the value": ("10**5000", 1),
    "math.factorial(10**5) as the value": ("import math\nmath.factorial(10**5)", 1),
    "shared value as arguments": (DOUBLED + 'await call_tool("calc__depth", {"value": x})', 1),
    "shared tuples 150 deep as arguments": (
        TUPLES + 'await call_tool("calc__depth", {"value": t})',
        1,
    ),
    "two scripts awaiting a slow tool": ('await call_tool("calc__wait", {"seconds": 3})', 2),
    "twelve spinning scripts": ("while True:\n    pass", 12),
    "an error with a 30-million-character message": ("raise ValueError('a' * 30_000_000)", 1),
}
NOW = {"name": "time__get_current_time", "arguments": {"timezone": "UTC"}}


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _summary(ms: list[float]) -> dict[str, float]:
    ms = sorted(ms)
    return {
        "n": len(ms),
        "p50_ms": round(statistics.median(ms), 1),
        "p99_ms": round(ms[min(len(ms) - 1, int(0.99 * len(ms)))], 1),
        "max_ms": round(ms[-1], 1),
    }


def run(calls: int, scripts: int) -> dict[str, Any]:
    from tests.helpers.net import stop, wait_for_port

    tmp = Path(tempfile.mkdtemp(prefix="codemode-attacks-"))
    port, proc, log = code_mode_gateway(tmp)
    url = f"http://127.0.0.1:{port}/mcp"

    async def connect(name: str) -> Any:
        http = create_mcp_http_client({})
        info = Implementation(name=name, version="1")
        client = Client(
            streamable_http_client(url, http_client=http), mode="legacy", client_info=info
        )
        return http, client

    async def measure(alice: Client) -> dict[str, Any]:
        tool_ms, script_ms = [], []
        for _ in range(calls):
            t = time.perf_counter()
            r = await alice.call_tool("call_tool", NOW)
            assert not r.is_error, r.content
            tool_ms.append((time.perf_counter() - t) * 1000)
        for _ in range(scripts):
            t = time.perf_counter()
            r = await alice.call_tool("execute", {"code": "1 + 1"})
            assert (r.structured_content or {}).get("result") == 2, r.content
            script_ms.append((time.perf_counter() - t) * 1000)
        return {"call_tool": _summary(tool_ms), "execute": _summary(script_ms)}

    async def main() -> dict[str, Any]:
        await wait_for_port(port, proc, 300, tmp / "gateway.log")
        rows: dict[str, Any] = {}
        with anyio.fail_after(1800):
            http, alice = await connect("alice")
            async with http, alice:
                await alice.call_tool("find_tools", {"query": "current time"})
                await measure(alice)  # warm: the indexes, the first worker
                rows["baseline"] = await measure(alice)
                for name, (code, at_once) in ATTACKS.items():
                    ended: Counter[str] = Counter()
                    stop_attack = anyio.Event()

                    async def attack(
                        code: str = code,
                        ended: Counter[str] = ended,
                        stop_attack: anyio.Event = stop_attack,
                    ) -> None:
                        mhttp, mallory = await connect("mallory")
                        async with mhttp, mallory:
                            while not stop_attack.is_set():
                                r = await mallory.call_tool("execute", {"code": code})
                                out = r.structured_content or {}
                                ended[str(out.get("limit") or out.get("error") or "ok")] += 1

                    Path(f"/proc/{proc.pid}/clear_refs").write_text("5")
                    before = _status_kib(proc.pid, "VmRSS")
                    async with anyio.create_task_group() as tg:
                        for _ in range(at_once):
                            tg.start_soon(attack)
                        await anyio.sleep(0.5)  # mallory's scripts are running
                        row = await measure(alice)
                        stop_attack.set()  # each attack loop ends after its current script
                    row["gateway_peak_growth_mib"] = round(
                        (_status_kib(proc.pid, "VmHWM") - before) / 1024, 1
                    )
                    row["gateway_rss_after_growth_mib"] = round(
                        (_status_kib(proc.pid, "VmRSS") - before) / 1024, 1
                    )
                    row["mallory_scripts"] = dict(ended)
                    rows[name] = row
        return rows

    try:
        rows = anyio.run(main)
    finally:
        stop(proc)
        log.close()
    return rows


def _report(rows: dict[str, Any], calls: int, scripts: int) -> str:
    base = rows["baseline"]
    lines = [
        "# Code mode under attack",
        "",
        f"`python -m benchmarks.codemode_attacks --calls {calls} --scripts {scripts}`: one "
        "`toolroute serve --transport http` with code mode at its default limits (result_bytes "
        f"= {RESULT_BYTES}, concurrent = 2, per_client = 1). Alice measures {calls} "
        f'`call_tool`s and {scripts} `execute("1 + 1")`s alone, then while mallory repeats '
        "each attack for the whole measurement. Load average at the end "
        f"{os.getloadavg()[0]:.1f} on 2 cores (other work shared them).",
        "",
        "| while mallory runs | call_tool p50 ms | p99 ms | added to p99 ms | execute p50 ms "
        "| p99 ms | added to p99 ms | gateway peak growth MiB | mallory's scripts ended by |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in rows.items():
        tool, script = row["call_tool"], row["execute"]
        added_tool = round(tool["p99_ms"] - base["call_tool"]["p99_ms"], 1)
        added_script = round(script["p99_ms"] - base["execute"]["p99_ms"], 1)
        ended = ", ".join(f"{k} ×{v}" for k, v in sorted(row.get("mallory_scripts", {}).items()))
        lines.append(
            f"| {name} | {tool['p50_ms']} | {tool['p99_ms']} | "
            f"{'' if name == 'baseline' else added_tool} | {script['p50_ms']} | "
            f"{script['p99_ms']} | {'' if name == 'baseline' else added_script} | "
            f"{row.get('gateway_peak_growth_mib', '')} | {ended} |"
        )
    worst_tool = max(
        (r["call_tool"]["p99_ms"] - base["call_tool"]["p99_ms"], n)
        for n, r in rows.items()
        if n != "baseline"
    )
    worst_mem = max((r["gateway_peak_growth_mib"], n) for n, r in rows.items() if n != "baseline")
    lines += [
        "",
        f"Worst added call_tool p99: {worst_tool[0]:.1f} ms ({worst_tool[1]}); worst gateway "
        f"peak growth: {worst_mem[0]} MiB ({worst_mem[1]}); result_bytes is "
        f"{RESULT_BYTES / 2**20:.0f} MiB.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--calls", type=int, default=100)
    p.add_argument("--scripts", type=int, default=10)
    p.add_argument("--out", type=Path, default=REPO / "benchmarks/results/codemode_attacks.md")
    p.add_argument("--json", type=Path, default=REPO / "benchmarks/results/codemode_attacks.json")
    args = p.parse_args()
    rows = run(args.calls, args.scripts)
    args.json.write_text(json.dumps(rows, indent=2) + "\n")
    args.out.write_text(_report(rows, args.calls, args.scripts))
    print(args.out.read_text())


if __name__ == "__main__":
    main()
