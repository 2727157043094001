"""A user's first routed call: `toolroute serve` in front of a real server, driven by the
official MCP client, find_tools then call_tool on the tool it returned.

    python .ci/first_call.py SERVERS_JSON

Runs with the interpreter of a plain `pip install .` (the `mcp` client comes with toolroute),
over stdio and over streamable HTTP, in the client's default mode (2026-07-28 here) and in
legacy mode (2025-11-25). Exits 1 with what went wrong; prints one line per case.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

TOOLROUTE = str(Path(sys.executable).with_name("toolroute"))
WANT = "time__get_current_time"


async def find_then_call(target: Any, mode: str) -> str:
    async with Client(target, mode=mode) as c:  # type: ignore[arg-type]
        found = await c.call_tool("find_tools", {"query": "what time is it in Tokyo", "k": 3})
        names = [x["name"] for x in (found.structured_content or {}).get("candidates", [])]
        if WANT not in names:
            raise SystemExit(f"find_tools did not return {WANT}: {names}")
        called = await c.call_tool("call_tool", {"name": WANT, "arguments": {"timezone": "Asia/Tokyo"}})
        text = called.content[0].text  # type: ignore[union-attr]
        if called.is_error or json.loads(text).get("timezone") != "Asia/Tokyo":
            raise SystemExit(f"call_tool failed ({mode}): {text}")
        return str(c.session.protocol_version)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def main(config: str) -> None:
    for mode in ("auto", "legacy"):
        with anyio.fail_after(240):
            stdio = StdioServerParameters(command=TOOLROUTE, args=["serve", "--config", config])
            print(f"stdio, client mode {mode}: protocol {await find_then_call(stdio, mode)}: ok")
    port = free_port()
    proc = subprocess.Popen(
        [TOOLROUTE, "serve", "--config", config, "--transport", "http", "--port", str(port)]
    )
    try:
        deadline = time.monotonic() + 240
        while True:  # until the port accepts (model load and sync first)
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("toolroute serve --transport http did not come up") from None
                time.sleep(0.3)
        for mode in ("auto", "legacy"):
            with anyio.fail_after(120):
                url = f"http://127.0.0.1:{port}/mcp"
                print(f"http, client mode {mode}: protocol {await find_then_call(url, mode)}: ok")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
