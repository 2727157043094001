"""Resident memory of a serving gateway: `toolroute serve` over HTTP in front of
mcp-server-time, pass-through (``expose = "all"``) and routing (``expose = "meta"``), beside
FastMCP's proxy in front of the same server in the same run.

    python -m benchmarks.serve_rss [--src DIR]... [--expose all --expose meta]
        [--proxy PYTHON] [--out benchmarks/results/serve_rss.md]

Per source tree (``--src``: another checkout's ``src`` to compare, e.g. main's; default this
one) and exposure mode: a fresh store, the gateway started with that tree first on
PYTHONPATH; its VmRSS a moment after it accepts connections (before any client), then the
official client lists the tools and makes one call (pass-through: the tool by its name; meta:
``find_tools`` then ``call_tool``), then the gateway's VmRSS (now) and VmHWM (peak) are read
from /proc. Also whether onnxruntime was ever imported (its shared library mapped). With
``--proxy PYTHON`` (an interpreter with fastmcp installed, e.g.
.toolroute/interop-venv/bin/python), FastMCP's ``create_proxy`` is measured the same way over
HTTP. Linux only; loopback only; every wait bounded.
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
from mcp import Client
from tests.helpers.net import stop

REPO = Path(__file__).resolve().parents[1]
TOOL = "get_current_time"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _label(src: Path) -> str:
    """``src`` relative to this repository where it is inside it (``src``), else as given."""
    try:
        return str(src.relative_to(REPO))
    except ValueError:
        return str(src)


def _status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise SystemExit(f"/proc/{pid}/status has no {field}")


def _maps_onnxruntime(pid: int) -> bool:
    return "onnxruntime" in Path(f"/proc/{pid}/maps").read_text()


async def _use(url: str, expose: str) -> None:
    async with Client(url) as c:
        listed = [t.name for t in (await c.list_tools()).tools]
        if expose == "all":
            name = next(n for n in listed if n.endswith(TOOL))
            result = await c.call_tool(name, {"timezone": "Asia/Tokyo"})
        else:
            found = await c.call_tool("find_tools", {"query": "what time is it in Tokyo"})
            names = [x["name"] for x in (found.structured_content or {})["candidates"]]
            name = next(n for n in names if n.endswith(TOOL))
            result = await c.call_tool(
                "call_tool", {"name": name, "arguments": {"timezone": "Asia/Tokyo"}}
            )
        if result.is_error:
            raise SystemExit(f"the call failed ({expose}): {result.content}")


SETTLE_S = 2.0
"""How long after the port opens the memory before any client is read (start-up work that
follows the bind, e.g. listing the servers, has run by then)."""

FASTMCP_PROXY = """
import sys
from fastmcp.server.server import create_proxy
port, command, args = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
servers = {"time": {"command": command, "args": args}}
proxy = create_proxy({"mcpServers": servers}, name="fastmcp-proxy")
proxy.run(transport="http", host="127.0.0.1", port=port, path="/mcp", show_banner=False)
"""
TIME_ARGS = ["-m", "mcp_server_time", "--local-timezone", "UTC"]


def _serve(
    cmd: list[str], env: dict[str, str], port: int, what: str, expose: str
) -> dict[str, Any]:
    """Start ``cmd`` (an MCP server over HTTP on ``port``), use it, and read its memory."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 240
        while True:  # until the port accepts (sync, and indexing where it routes)
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    err = proc.stderr.read().decode() if proc.stderr else ""
                    raise SystemExit(f"{what} did not come up: {err}") from None
                time.sleep(0.3)
        time.sleep(SETTLE_S)
        idle = _status_kb(proc.pid, "VmRSS")

        async def run() -> None:
            with anyio.fail_after(120):
                await _use(f"http://127.0.0.1:{port}/mcp", expose)

        anyio.run(run)
        return {
            "idle_mb": round(idle / 1024, 1),
            "rss_mb": round(_status_kb(proc.pid, "VmRSS") / 1024, 1),
            "peak_mb": round(_status_kb(proc.pid, "VmHWM") / 1024, 1),
            "onnxruntime": _maps_onnxruntime(proc.pid),
        }
    finally:
        stop(proc, 30)


def measure(src: Path, expose: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="toolroute-rss-") as tmp:
        d = Path(tmp)
        servers = d / "servers.json"
        time_server = {"command": sys.executable, "args": TIME_ARGS}
        servers.write_text(json.dumps({"mcpServers": {"time": time_server}}))
        (d / "toolroute.toml").write_text(
            f'[toolroute]\nstore = "{d / "store"}"\nexpose = "{expose}"\n'
        )
        port = _free_port()
        env = {**os.environ, "PYTHONPATH": str(src)}
        cmd = [sys.executable, "-m", "toolroute.cli", "serve", "--config", str(servers)]
        cmd += ["--transport", "http", "--port", str(port)]
        row = _serve(cmd, env, port, f"toolroute serve ({expose})", expose)
        return {
            "what": f"toolroute serve ({_label(src)})",
            "src": _label(src),
            "expose": expose,
            **row,
        }


def measure_fastmcp(python: str) -> dict[str, Any]:
    """FastMCP's proxy (run by ``python``) in front of the same server, over HTTP."""
    with tempfile.TemporaryDirectory(prefix="toolroute-rss-") as tmp:
        script = Path(tmp) / "fastmcp_proxy.py"
        script.write_text(FASTMCP_PROXY)
        port = _free_port()
        cmd = [python, str(script), str(port), sys.executable, *TIME_ARGS]
        row = _serve(cmd, dict(os.environ), port, "fastmcp proxy", "all")
        return {"what": "fastmcp proxy", "src": "", "expose": "all", **row}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, action="append", default=None)
    ap.add_argument("--expose", action="append", choices=("all", "meta", "bind"), default=None)
    ap.add_argument(
        "--proxy",
        metavar="PYTHON",
        help="also measure FastMCP's proxy, run by PYTHON (an interpreter with fastmcp)",
    )
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    rows = [
        measure(src.resolve(), expose)
        for src in (args.src or [REPO / "src"])
        for expose in (args.expose or ["all", "meta"])
    ]
    if args.proxy:
        rows.append(measure_fastmcp(args.proxy))
    srcs = dict.fromkeys(str(r["src"]) for r in rows if r["src"])
    beside = ", beside FastMCP's proxy in front of the same server, in the same run"
    lines = [
        "`toolroute serve --transport http` in front of mcp-server-time, before any client "
        f"({SETTLE_S:g} s after it accepts connections) and after listing the tools and one "
        "call (`python -m benchmarks.serve_rss"
        + "".join(f" --src {r}" for r in srcs)
        + (" --proxy PYTHON" if args.proxy else "")
        + "`)"
        + (beside if args.proxy else "")
        + ".",
        "",
        "| process | expose | RSS before a client MB | RSS MB | peak MB | onnxruntime loaded |",
        "|---|---|---:|---:|---:|---|",
        *(
            f"| {r['what']} | {r['expose']} | {r['idle_mb']} | {r['rss_mb']} | {r['peak_mb']} | "
            f"{'yes' if r['onnxruntime'] else 'no'} |"
            for r in rows
        ),
    ]
    md = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(md, encoding="utf-8")
    print(md, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
