"""The stdio gateway as a client drives it: a config over the time and slow fixture servers,
raw JSON-RPC lines on the pipe, and a bounded wait for answers. Shared by the stdio tests."""

from __future__ import annotations

import json
import selectors
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.conftest import REPO, TIME_MAIN, TOOLROUTE

SLOW = REPO / "tests" / "fixtures" / "slow_server.py"
HELLO = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]
CALL = {
    "jsonrpc": "2.0",
    "id": 3,
    "method": "tools/call",
    "params": {
        "name": "call_tool",
        "arguments": {"name": "time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}},
    },
}


def config(tmp_path: Path, settings: str = "") -> Path:
    servers = {
        "time": {"command": sys.executable, "args": ["-c", TIME_MAIN]},
        "slow": {"command": sys.executable, "args": [str(SLOW)]},
    }
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    store = json.dumps(str(tmp_path / "store"))
    toml = f"[toolroute]\nstore = {store}\ncall_gate = false\n{settings}"
    (tmp_path / "toolroute.toml").write_text(toml)
    return path


def nap(request_id: int, seconds: float) -> dict[str, Any]:
    """A call to the slow server's tool: answered ``rested <seconds>`` after that long."""
    arguments = {"name": "slow__nap", "arguments": {"seconds": seconds}}
    params = {"name": "call_tool", "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def lines(*messages: Any) -> bytes:
    return b"".join(
        (m if isinstance(m, bytes) else json.dumps(m).encode()) + b"\n" for m in messages
    )


def serve(config: Path, stdin: Any) -> subprocess.Popen[bytes]:
    with config.with_name("serve.err").open("wb") as err:  # the child keeps its own descriptor
        return subprocess.Popen(
            [str(TOOLROUTE), "serve", "--config", str(config)],
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=err,
            # unbuffered: read_until waits on the pipe with select, and a buffered readline
            # would swallow two answers that arrived together, leaving the second in Python's
            # buffer while select waits for the pipe (the CI hang of test_stdio_bad_frame)
            bufsize=0,
        )


def read_until(proc: subprocess.Popen[bytes], want: int, timeout_s: float) -> dict[Any, Any]:
    """Responses by id, read line by line until id ``want`` arrives (bounded in time)."""
    assert proc.stdout is not None
    answers: dict[Any, Any] = {}
    deadline = time.monotonic() + timeout_s
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while want not in answers:
            left = deadline - time.monotonic()
            assert left > 0 and sel.select(left), f"no answer {want} in {timeout_s}s"
            line = proc.stdout.readline()
            assert line, "the gateway closed stdout"
            message = json.loads(line)  # nothing but MCP messages on stdout
            if "id" in message:
                answers[message["id"]] = message
    return answers


def stop_gateway(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=10)
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            pipe.close()
