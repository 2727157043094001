"""The fault suite's servers and gateway: misbehaving MCP servers (tests/fixtures/faults)
beside the real reference servers, and a gateway over them run in the test's event loop."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from tests.conftest import MEMORY_JS, REPO, TIME_MAIN, HashingEmbedder
from tests.helpers import configs
from toolroute.config import GatewayConfig, load_config
from toolroute.downstream.servers import Downstreams
from toolroute.gateway.ops.app import running_downstreams
from toolroute.gateway.ops.syncing import sync_router
from toolroute.gateway.shell.server import Gateway

FAULTS = REPO / "tests" / "fixtures" / "faults"
SDK = FAULTS / "sdk_faults.py"
RAW = FAULTS / "raw_faults.py"


def sdk(mode: str, *extra: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(SDK), "--mode", mode, *extra]}


def rug(tmp_path: Path, state: dict[str, Any]) -> dict[str, Any]:
    path = tmp_path / "rug-state.json"
    path.write_text(json.dumps(state))
    return sdk("rug", "--state", str(path))


def raw(mode: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(RAW), "--mode", mode]}


def reference(tmp_path: Path) -> dict[str, Any]:
    """The real servers every fault runs beside: time, and memory when node has it."""
    servers: dict[str, Any] = {"time": {"command": sys.executable, "args": ["-c", TIME_MAIN]}}
    if shutil.which("node") and MEMORY_JS.is_file():
        servers["memory"] = {
            "command": "node",
            "args": [str(MEMORY_JS)],
            "env": {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")},
        }
    return servers


def write_config(tmp_path: Path, servers: dict[str, Any], **settings: Any) -> Path:
    """The reference servers and ``servers`` (configs.write_config)."""
    return configs.write_config(tmp_path, {**reference(tmp_path), **servers}, **settings)


def config(tmp_path: Path, servers: dict[str, Any], **settings: Any) -> GatewayConfig:
    return load_config(write_config(tmp_path, servers, **settings))


def text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def assert_others_fine(gw: Gateway) -> None:
    """The reference servers answer as usual."""
    r = await gw.calls.checked("time__get_current_time", {"timezone": "Asia/Tokyo"})
    assert not r.is_error and "Asia/Tokyo" in text(r)
    if "memory" in gw.shared.downstreams.servers:
        r = await gw.calls.checked("memory__read_graph", {})
        assert not r.is_error, text(r)


def children() -> set[int]:
    """Live child processes of this process (from /proc)."""
    me = str(os.getpid())
    out = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me and fields[0] != "Z":
            out.add(int(entry.name))
    return out


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def run_gateway(
    cfg: GatewayConfig, body: Callable[[Gateway, Downstreams], Any], **gateway: Any
) -> None:
    """Start the downstreams and a gateway (hashing embedder), run ``body``, stop everything."""

    async def main() -> None:
        async with running_downstreams(cfg) as downstreams:
            router, _ = await sync_router(cfg, downstreams, embedder=HashingEmbedder())
            gw = Gateway(router, downstreams, cfg.settings, **gateway)
            try:
                await body(gw, downstreams)
            finally:
                gw.shared.router.close()

    anyio.run(main)
