"""Start-up with a big server behind the gateway, in both arrival orders: how soon after the
time server's own listing reaches ``toolroute serve`` its tool is routed and called.

    nice -n 10 python -m benchmarks.startup [--tools 20000] [--timeout 150]
        [--connect-timeout 20] [--lag 1] [--before /path/to/other/checkout/src] [--alone]
        [--out F]

Starts ``toolroute serve --transport http`` (a fresh store each time, so nothing is cached)
over the reference time server and tests/fixtures/many_tools_server.py listing ``--tools``
tools, each behind benchmarks/_listing_gate.py, which fixes the order the two listings
arrive in: *big first* holds time's listing until the big one has reached the gateway (and
``--lag`` seconds more), *small first* the other way round. The gate notes when each listing
reached the gateway; a client (official SDK) calls ``call_tool`` on time's tool and
``find_tools`` for it in a loop from the moment ``initialize`` is answered, and the table
gives each first success in seconds after time's own listing (the issue's target: the call
within 2 s, in both orders), beside what the gateway said was still indexing then. With
``--before``, the same is measured first with that source tree on PYTHONPATH (another
checkout, e.g. main), in the same run; with ``--alone``, last, the gateway in front of the
time server alone. Every wait is bounded by ``--timeout`` (a run that does not answer by
then is reported as such and stopped). Writes a markdown table (benchmarks/results/startup.md
with --out).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

import anyio
from tests.helpers.net import stop

from benchmarks._report import write_report

REPO = Path(__file__).resolve().parents[1]
TOOLROUTE = Path(sys.executable).with_name("toolroute")
MANY = REPO / "tests" / "fixtures" / "many_tools_server.py"
GATE = REPO / "benchmarks" / "_listing_gate.py"
TIME_ARGS = ["-m", "mcp_server_time", "--local-timezone", "UTC"]
TIME_TOOL = "time__get_current_time"
Order = Literal["big first", "small first", "alone"]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _gated(directory: Path, me: str, other: str | None, lag: float, argv: list[str]) -> Any:
    """``argv`` behind the listing gate: marks ``me``, answers after ``other``'s mark."""
    gate = ["--mark", str(directory / f"{me}.mark")]
    if other is not None:
        gate += ["--after", str(directory / f"{other}.mark"), "--lag", str(lag)]
    return {"command": sys.executable, "args": [str(GATE), *gate, "--", sys.executable, *argv]}


def _config(directory: Path, order: Order, tools: int, connect_s: float, lag: float) -> Path:
    first = {"big first": "many", "small first": "time"}.get(order)
    servers: dict[str, Any] = {
        "time": _gated(directory, "time", "many" if first == "many" else None, lag, TIME_ARGS)
    }
    if order != "alone":
        after = "time" if first == "time" else None
        servers["many"] = _gated(directory, "many", after, lag, [str(MANY), str(tools)])
    path = directory / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    store = json.dumps(str(directory / "store"))
    settings = f"store = {store}\ncall_gate = false\nconnect_timeout_s = {connect_s}\n"
    (directory / "toolroute.toml").write_text(f"[toolroute]\n{settings}")
    return path


def _mark(directory: Path, name: str) -> float | None:
    try:
        return float((directory / f"{name}.mark").read_text())
    except (FileNotFoundError, ValueError):
        return None


async def _measure(
    src: Path, order: Order, tools: int, timeout_s: float, connect_s: float, lag: float
) -> dict[str, Any]:
    from mcp import Client

    out: dict[str, Any] = {"load": round(os.getloadavg()[0], 1)}  # 1-minute load at spawn
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        config, port = _config(directory, order, tools, connect_s, lag), _port()
        env = {**os.environ, "PYTHONPATH": str(src)}
        argv = [str(TOOLROUTE), "serve", "--config", str(config), "--transport", "http"]
        start = time.time()
        proc = subprocess.Popen(
            [*argv, "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}/mcp"
        got: dict[str, float] = {}
        try:
            with anyio.move_on_after(timeout_s):
                while True:  # until the port accepts and the client's initialize is answered
                    try:
                        async with Client(url) as c:
                            got.setdefault("initialize", time.time())
                            async with anyio.create_task_group() as tg:
                                tg.start_soon(_call, c, got)
                                tg.start_soon(_find, c, got, out)
                            break
                    except Exception:  # not listening yet: try again shortly
                        if proc.poll() is not None:
                            out["error"] = f"exited with {proc.returncode}"
                            break
                        await anyio.sleep(0.05)
                # the other listing too, for the table (it may come after time's call)
                names = ("time",) if order == "alone" else ("time", "many")
                while proc.poll() is None and any(_mark(directory, n) is None for n in names):
                    await anyio.sleep(0.05)
        finally:
            stop(proc)
        got.update((n, at) for n in ("time", "many") if (at := _mark(directory, n)) is not None)
    out["from_spawn"] = {k: round(v - start, 2) for k, v in got.items()}
    listed = got.get("time")
    for k in ("find", "call"):
        out[k] = round(got[k] - listed, 2) if k in got and listed is not None else None
    return out


async def _call(c: Any, got: dict[str, float]) -> None:
    args = {"name": TIME_TOOL, "arguments": {"timezone": "Asia/Tokyo"}}
    while True:
        r = await c.call_tool("call_tool", args)
        if not r.is_error:
            got["call"] = time.time()
            return
        await anyio.sleep(0.05)


async def _find(c: Any, got: dict[str, float], out: dict[str, Any]) -> None:
    query = {"query": "what is the current time in Tokyo"}
    while True:
        r = await c.call_tool("find_tools", query)
        found = json.loads(r.content[0].text) if r.content else {}
        if TIME_TOOL in [x.get("name") for x in found.get("candidates", [])]:
            got["find"] = time.time()
            out["indexing_then"] = found.get("indexing", {})
            return
        await anyio.sleep(0.05)


def _cell(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, float) else "none"


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--tools", type=int, default=20000)
    ap.add_argument("--timeout", type=float, default=150.0)
    ap.add_argument("--connect-timeout", type=float, default=20.0, help="connect_timeout_s")
    ap.add_argument("--lag", type=float, default=1.0, help="seconds between the two listings")
    ap.add_argument("--before", type=Path, default=None, help="another checkout's src/")
    ap.add_argument("--alone", action="store_true", help="also the time server alone")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    orders: list[Order] = ["big first", "small first"]
    runs = [(f"before, {o}", args.before, o) for o in orders] if args.before else []
    runs += [(f"after, {o}", REPO / "src", o) for o in orders]
    if args.alone:
        runs.append(("after, time server alone", REPO / "src", "alone"))
    rows = []
    for label, src, order in runs:
        got = anyio.run(
            _measure, src, order, args.tools, args.timeout, args.connect_timeout, args.lag
        )
        print(label, json.dumps(got), flush=True)
        rows.append((label, got))
    lines = [
        f"# Start-up in front of a server listing {args.tools:,} tools, in both arrival orders",
        "",
        "`python -m benchmarks.startup --tools {} --timeout {:g} --connect-timeout {:g} "
        "--lag {:g}{}{}`: `toolroute serve --transport http` (fresh store) over the time server "
        "and tests/fixtures/many_tools_server.py, the second listing held until {:g} s after "
        "the first. Time's first `find_tools` hit and first successful `call_tool` are in "
        "seconds after time's own listing reached the gateway (none: not within {:g} s of "
        "spawn); the listings and `initialize` in seconds from spawn.".format(
            args.tools,
            args.timeout,
            args.connect_timeout,
            args.lag,
            " --before …/src" if args.before else "",
            " --alone" if args.alone else "",
            args.lag,
            args.timeout,
        ),
        "",
        f"({os.cpu_count()} CPUs; the load is the 1-minute load average at spawn.)",
        "",
        "| run | load | initialize | time listed | big listed | find_tools finds time's tool "
        "| call_tool ok | still indexing then |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, got in rows:
        then = "; ".join(f"{k}: {v}" for k, v in (got.get("indexing_then") or {}).items())
        spawn = got["from_spawn"]
        lines.append(
            f"| {label} | {got['load']} | {_cell(spawn.get('initialize'))} "
            f"| {_cell(spawn.get('time'))} | {_cell(spawn.get('many'))} "
            f"| {_cell(got['find'])} | {_cell(got['call'])} | {then or '-'} |"
        )
    text = "\n".join(lines) + "\n"
    write_report(text, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
