"""Resident memory of a serving gateway: `toolroute serve` over HTTP in front of
mcp-server-time, pass-through (``expose = "all"``) and routing (``expose = "meta"``).

    python -m benchmarks.serve_rss [--src DIR]... [--expose all --expose meta]
        [--out benchmarks/results/serve_rss.md]

Per source tree (``--src``: another checkout's ``src`` to compare, e.g. main's; default this
one) and exposure mode: a fresh store, the gateway started with that tree first on
PYTHONPATH, the official client lists the tools and makes one call (pass-through: the tool by
its name; meta: ``find_tools`` then ``call_tool``), then the gateway's VmRSS (now) and VmHWM
(peak) are read from /proc. Also whether onnxruntime was ever imported (its shared library
mapped). Linux only; loopback only; every wait bounded.
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


def measure(src: Path, expose: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="toolroute-rss-") as tmp:
        d = Path(tmp)
        servers = d / "servers.json"
        servers.write_text(
            json.dumps(
                {
                    "mcpServers": {
                        "time": {
                            "command": sys.executable,
                            "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
                        }
                    }
                }
            )
        )
        (d / "toolroute.toml").write_text(
            f'[toolroute]\nstore = "{d / "store"}"\nexpose = "{expose}"\n'
        )
        port = _free_port()
        env = {**os.environ, "PYTHONPATH": str(src)}
        cmd = [sys.executable, "-m", "toolroute.cli", "serve", "--config", str(servers)]
        proc = subprocess.Popen(
            [*cmd, "--transport", "http", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + 240
            while True:  # until the port accepts (sync, and indexing where it routes)
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        err = proc.stderr.read().decode() if proc.stderr else ""
                        raise SystemExit(f"serve did not come up ({expose}): {err}") from None
                    time.sleep(0.3)

            async def run() -> None:
                with anyio.fail_after(120):
                    await _use(f"http://127.0.0.1:{port}/mcp", expose)

            anyio.run(run)
            return {
                "src": _label(src),
                "expose": expose,
                "rss_mb": round(_status_kb(proc.pid, "VmRSS") / 1024, 1),
                "peak_mb": round(_status_kb(proc.pid, "VmHWM") / 1024, 1),
                "onnxruntime": _maps_onnxruntime(proc.pid),
            }
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, action="append", default=None)
    ap.add_argument("--expose", action="append", choices=("all", "meta", "bind"), default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    rows = [
        measure(src.resolve(), expose)
        for src in (args.src or [REPO / "src"])
        for expose in (args.expose or ["all", "meta"])
    ]
    lines = [
        "`toolroute serve --transport http` in front of mcp-server-time, after listing the tools "
        "and one call (`python -m benchmarks.serve_rss"
        + "".join(f" --src {r}" for r in dict.fromkeys(str(x["src"]) for x in rows))
        + "`).",
        "",
        "| src | expose | RSS MB | peak MB | onnxruntime loaded |",
        "|---|---|---:|---:|---|",
        *(
            f"| {r['src']} | {r['expose']} | {r['rss_mb']} | {r['peak_mb']} | "
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
