"""Figures for issue 23 (hostile schemas, slow clients), bounded and loopback only.

Runs a real `toolroute serve` (the code under ``--src``, so the same script measures the tree
before and after a change) and reports:

- ``header_flood``: the gateway's RSS before and after 8 connections each send a header value
  that never ends (up to ``--flood-mb`` MB each, unauthenticated), and how many of the 8 the
  gateway still holds open 12 s after the flood stops;
- ``idle_connections``: of ``--idle`` connections opened and left silent, how many are still
  held 12 s later;
- ``redos`` and ``ref_hang``: how long another call (time__get_current_time, on the same
  gateway) waited while a call with a catastrophic ``pattern`` (``^(a+)+$``, 24 a's and a
  '!') or a ``$ref`` to a peer that never answers was being checked, as a ratio to the same
  call alone in the same run; a wait is cut at ``--cap`` s.

    PYTHONPATH=src python experiments/hostile.py --src src --json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = Path(__file__).resolve().parents[1]
SDK = REPO / "tests" / "fixtures" / "faults" / "sdk_faults.py"
TOOLROUTE = Path(sys.executable).with_name("toolroute")
TIME_MAIN = "from mcp_server_time import main; main()"


def _config(tmp: Path, state: dict[str, str]) -> Path:
    (tmp / "state.json").write_text(json.dumps(state))
    servers = {
        "time": {"command": sys.executable, "args": ["-c", TIME_MAIN]},
        "schemas": {
            "command": sys.executable,
            "args": [str(SDK), "--mode", "schemas", "--state", str(tmp / "state.json")],
        },
    }
    (tmp / "servers.json").write_text(json.dumps({"mcpServers": servers}))
    (tmp / "toolroute.toml").write_text(
        f'[toolroute]\nstore = "{tmp / "store"}"\ncall_gate = false\n'
    )
    return tmp / "servers.json"


def _rss_kb(pid: int) -> int:
    m = re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
    return int(m.group(1)) if m else 0


def _held(socks: list[socket.socket]) -> int:
    """How many of ``socks`` the server has neither answered nor closed."""
    held = 0
    for s in socks:
        s.setblocking(False)
        try:
            s.recv(65536, socket.MSG_PEEK)  # an answer, or b"" at EOF: let go
        except BlockingIOError:
            held += 1
        except OSError:  # reset: let go
            pass
    return held


def http_figures(tmp: Path, env: dict[str, str], flood_mb: int, idle: int) -> dict[str, Any]:
    path = _config(tmp, {})
    err = (tmp / "http.err").open("w")
    proc = subprocess.Popen(
        [str(TOOLROUTE), "serve", "--config", str(path), "--transport", "http", "--port", "0"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=err,
    )
    try:
        deadline = time.monotonic() + 180
        port = None
        while port is None:
            assert time.monotonic() < deadline and proc.poll() is None, "serve did not start"
            m = re.search(r"127\.0\.0\.1:(\d+)/mcp", (tmp / "http.err").read_text())
            port = int(m.group(1)) if m else None
            time.sleep(0.2)
        before = _rss_kb(proc.pid)
        flood = []
        for _ in range(8):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Flood: ")
            flood.append(s)
        chunk = b"a" * 65536
        cut: set[int] = set()
        for _ in range(flood_mb * 16):
            for i, s in enumerate(flood):
                if i in cut:
                    continue
                try:
                    s.sendall(chunk)
                except OSError:  # the gateway cut this one
                    cut.add(i)
        time.sleep(1)
        after = _rss_kb(proc.pid)
        idle_socks = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(idle)]
        time.sleep(12)
        result = {
            "header_flood": {
                "rss_before_mb": round(before / 1024, 1),
                "rss_after_mb": round(after / 1024, 1),
                "ratio": round(after / before, 2),
                "held_after_12s": _held(flood),
                "sent_mb_per_connection": flood_mb,
            },
            "idle_connections": {"opened": idle, "held_after_12s": _held(idle_socks)},
        }
        for s in flood + idle_socks:
            s.close()
        return result
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        err.close()


async def _wait_figures(tmp: Path, env: dict[str, str], cap: float) -> dict[str, Any]:
    peer = socket.socket()
    peer.bind(("127.0.0.1", 0))
    peer.listen(8)
    url = f"http://127.0.0.1:{peer.getsockname()[1]}/schema.json"
    path = _config(tmp, {"url": url})
    params = StdioServerParameters(
        command=str(TOOLROUTE), args=["serve", "--config", str(path)], env=env
    )
    tz = {"name": "time__get_current_time", "arguments": {"timezone": "UTC"}}
    out: dict[str, Any] = {}
    with (tmp / "stdio.err").open("w") as err:
        async with Client(stdio_client(params, errlog=err), read_timeout_seconds=cap + 60) as c:
            await c.call_tool("call_tool", tz)  # warm

            async def timed() -> float:
                start = time.perf_counter()
                await c.call_tool("call_tool", tz)
                return time.perf_counter() - start

            alone = min([await timed() for _ in range(5)])
            for case, call in (
                ("redos", {"name": "schemas__redos", "arguments": {"s": "a" * 24 + "!"}}),
                ("ref_hang", {"name": "schemas__remote_ref", "arguments": {"s": "x"}}),
            ):
                waited: dict[str, float] = {}
                with anyio.move_on_after(cap):
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(c.call_tool, "call_tool", call)
                        await anyio.sleep(0.2)  # the hostile call is being checked
                        waited["other"] = await timed()
                        tg.cancel_scope.cancel()
                other = waited.get("other", cap)
                out[case] = {
                    "other_call_s": round(other, 4),
                    "alone_s": round(alone, 4),
                    "ratio": round(other / alone, 1),
                    "cut_at_cap": "other" not in waited,
                }
                if "other" not in waited:
                    break  # the gateway is stuck: nothing more to measure in this process
    peer.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", type=Path, default=REPO / "src", help="the code to measure")
    parser.add_argument("--flood-mb", type=int, default=16)
    parser.add_argument("--idle", type=int, default=100)
    parser.add_argument("--cap", type=float, default=30.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(args.src.resolve())}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        (tmp / "http").mkdir()
        (tmp / "stdio").mkdir()
        figures = http_figures(tmp / "http", env, args.flood_mb, args.idle)
        figures.update(anyio.run(_wait_figures, tmp / "stdio", env, args.cap))
    figures["src"] = str(args.src)
    print(json.dumps(figures, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
