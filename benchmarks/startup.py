"""Start-up with a big server behind the gateway: how soon ``toolroute serve`` answers
``initialize`` and routes the other servers' tools.

    nice -n 10 python -m benchmarks.startup [--tools 20000] [--timeout 150]
        [--connect-timeout 20] [--before /path/to/other/checkout/src] [--out F]

Starts ``toolroute serve --transport http`` (a fresh store each time, so nothing is cached)
over the reference time server and tests/fixtures/many_tools_server.py listing ``--tools``
tools, and times from spawn to (1) the first answered ``initialize`` (official SDK client),
(2) the first ``find_tools`` that returns ``time__get_current_time`` and (3) a successful
``call_tool`` of it, noting what the gateway said was still indexing then. With
``--before``, the same is measured first with that source tree on PYTHONPATH (another
checkout, e.g. main), in the same run; last, the same gateway in front of the time server
alone (what start-up costs on this machine now without the big server: imports, model
load). Every wait is bounded by ``--timeout`` (a run that does not answer by then is
reported as such and stopped). Writes a markdown table (benchmarks/results/startup.md with
--out).
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
from typing import Any

import anyio

REPO = Path(__file__).resolve().parents[1]
TOOLROUTE = Path(sys.executable).with_name("toolroute")
MANY = REPO / "tests" / "fixtures" / "many_tools_server.py"
TIME_ARGS = ["-m", "mcp_server_time", "--local-timezone", "UTC"]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _config(directory: Path, tools: int, connect_timeout_s: float) -> Path:
    servers: dict[str, Any] = {"time": {"command": sys.executable, "args": TIME_ARGS}}
    if tools:
        servers["many"] = {"command": sys.executable, "args": [str(MANY), str(tools)]}
    path = directory / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    store = json.dumps(str(directory / "store"))
    settings = f"store = {store}\ncall_gate = false\nconnect_timeout_s = {connect_timeout_s}\n"
    (directory / "toolroute.toml").write_text(f"[toolroute]\n{settings}")
    return path


async def _measure(src: Path, tools: int, timeout_s: float, connect_s: float) -> dict[str, Any]:
    from mcp import Client

    out: dict[str, Any] = {"initialize_s": None, "first_route_s": None, "first_call_s": None}
    out["load"] = round(os.getloadavg()[0], 1)  # the machine's 1-minute load at spawn
    with tempfile.TemporaryDirectory() as tmp:
        config, port = _config(Path(tmp), tools, connect_s), _port()
        env = {**os.environ, "PYTHONPATH": str(src)}
        argv = [str(TOOLROUTE), "serve", "--config", str(config), "--transport", "http"]
        start = time.perf_counter()
        proc = subprocess.Popen(
            [*argv, "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}/mcp"
        try:
            with anyio.move_on_after(timeout_s):
                while True:  # until the port accepts and the client's initialize is answered
                    try:
                        async with Client(url) as c:
                            if out["initialize_s"] is None:
                                out["initialize_s"] = round(time.perf_counter() - start, 2)
                            await _route(c, start, out)
                            break
                    except Exception:  # not listening yet: try again shortly
                        if proc.poll() is not None:
                            out["error"] = f"exited with {proc.returncode}"
                            break
                        await anyio.sleep(0.05)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=20)
    return out


async def _route(c: Any, start: float, out: dict[str, Any]) -> None:
    query = {"query": "what is the current time in Tokyo"}
    while True:
        r = await c.call_tool("find_tools", query)
        found = json.loads(r.content[0].text) if r.content else {}
        names = [x.get("name") for x in found.get("candidates", [])]
        if "time__get_current_time" in names:
            out["first_route_s"] = round(time.perf_counter() - start, 2)
            out["indexing_then"] = found.get("indexing", {})
            break
        await anyio.sleep(0.05)
    args = {"name": "time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}
    r = await c.call_tool("call_tool", args)
    if not r.is_error:
        out["first_call_s"] = round(time.perf_counter() - start, 2)


def _cell(value: Any, timeout_s: float) -> str:
    return f"{value:.2f}" if isinstance(value, float) else f"> {timeout_s:g} (none)"


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--tools", type=int, default=20000)
    ap.add_argument("--timeout", type=float, default=150.0)
    ap.add_argument(
        "--connect-timeout",
        type=float,
        default=20.0,
        help="connect_timeout_s (before this change it also bounded a whole listing)",
    )
    ap.add_argument("--before", type=Path, default=None, help="another checkout's src/")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    runs = [("before", args.before, args.tools)] if args.before else []
    runs += [("after", REPO / "src", args.tools), ("after, time server alone", REPO / "src", 0)]
    rows = []
    for label, src, tools in runs:
        got = anyio.run(_measure, src, tools, args.timeout, args.connect_timeout)
        print(label, json.dumps(got), flush=True)
        rows.append((label, got))
    lines = [
        f"# Start-up in front of a server listing {args.tools:,} tools",
        "",
        "`python -m benchmarks.startup --tools {} --timeout {:g} --connect-timeout {:g}{}`: "
        "seconds from spawning `toolroute serve --transport http` (fresh store) over the "
        "time server and tests/fixtures/many_tools_server.py.".format(
            args.tools,
            args.timeout,
            args.connect_timeout,
            " --before …/src" if args.before else "",
        ),
        "",
        f"({os.cpu_count()} CPUs; the load is the 1-minute load average at spawn.)",
        "",
        "| run | load | initialize answered | find_tools returns time's tool | call_tool ok "
        "| still indexing then |",
        "|---|---|---|---|---|---|",
    ]
    for label, got in rows:
        then = "; ".join(f"{k}: {v}" for k, v in (got.get("indexing_then") or {}).items())
        lines.append(
            f"| {label} | {got['load']} | {_cell(got['initialize_s'], args.timeout)} "
            f"| {_cell(got['first_route_s'], args.timeout)} "
            f"| {_cell(got['first_call_s'], args.timeout)} | {then or '-'} |"
        )
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
