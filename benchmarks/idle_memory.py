"""Idle memory and import time of ``toolroute serve`` over the five reference MCP servers.

    python -m benchmarks.idle_memory [--imports 5] [--out FILE] [--json]

Starts ``toolroute serve`` over stdio in front of mcp-server-time, mcp-server-git (PyPI) and
the npm server-memory, server-filesystem and server-everything (in .toolroute/npm), through
the MCP SDK client, twice on one store: a cold start (empty store: every tool is embedded) and
a warm restart (the usual case). Reports the gateway process's own RSS (VmRSS, not its
children's) once it has answered ``tools/list`` (idle), and after one ``find_tools`` (the
first route loads what routing needs), plus its peak (VmHWM); and the median wall time of
``python -c "import toolroute.gateway.ops.app"`` (a fresh interpreter each time) and the modules
that import pulls in among the heavy optional ones.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parents[1]
NPM = REPO / ".toolroute" / "npm" / "node_modules" / "@modelcontextprotocol"
PY = sys.executable
TOOLROUTE = str(Path(PY).with_name("toolroute"))
HEAVY = (
    "matplotlib",
    "onnxruntime",
    "tokenizers",
    "bm25s",
    "scipy",
    "httpx",
    "openai",
    "jsonschema",
    "uvicorn",
    "starlette",
    "tiktoken",
    "xllamacpp",
    "opentelemetry",
)


def _servers(tmp: Path) -> dict[str, Any]:
    repo = tmp / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return {
        "time": {"command": PY, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
        "git": {"command": PY, "args": ["-m", "mcp_server_git", "--repository", str(repo)]},
        "memory": {
            "command": "node",
            "args": [str(NPM / "server-memory" / "dist" / "index.js")],
            "env": {"MEMORY_FILE_PATH": str(tmp / "memory.jsonl")},
        },
        "filesystem": {
            "command": "node",
            "args": [str(NPM / "server-filesystem" / "dist" / "index.js"), str(tmp)],
        },
        "everything": {
            "command": "node",
            "args": [str(NPM / "server-everything" / "dist" / "index.js")],
        },
    }


def _gateway_pid() -> int:
    """The ``toolroute serve`` child of this process (the SDK client does not expose it)."""
    me = str(os.getpid())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        ppid = stat.rsplit(")", 1)[1].split()[1]
        if ppid == me and any(c == b"serve" for c in cmd):
            return int(entry.name)
    raise RuntimeError("toolroute serve process not found")


def _status_mb(pid: int) -> dict[str, float]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = round(int(value.split()[0]) / 1024, 1)
    return fields


def _modules(pid: int) -> list[str]:
    maps = Path(f"/proc/{pid}/maps").read_text()
    return sorted({m for m in HEAVY if f"/{m}" in maps})


async def _start(config: Path, store: Path) -> dict[str, Any]:
    params = StdioServerParameters(
        command=TOOLROUTE,
        args=["serve", "--config", str(config), "--store", str(store)],
        env=dict(os.environ),  # the gateway runs with this interpreter's settings
    )
    async with Client(params, mode="legacy", read_timeout_seconds=600) as c:
        await c.list_tools()
        pid = _gateway_pid()
        idle = _status_mb(pid)
        idle_native = _modules(pid)
        r = await c.call_tool("find_tools", {"query": "what time is it in Tokyo", "k": 5})
        if r.is_error:
            raise RuntimeError("find_tools failed")
        routed = _status_mb(pid)
    return {
        "idle_rss_mb": idle["VmRSS"],
        "after_find_tools_rss_mb": routed["VmRSS"],
        "peak_rss_mb": routed["VmHWM"],
        "shared_libraries_at_idle": idle_native,
    }


async def _measure(tmp: Path) -> dict[str, Any]:
    config = tmp / "servers.json"
    config.write_text(json.dumps({"mcpServers": _servers(tmp)}))
    return {
        "cold start": await _start(config, tmp / "store"),
        "warm restart": await _start(config, tmp / "store"),
    }


def _import_time(runs: int) -> tuple[float, list[str]]:
    code = (
        "import sys, time; t = time.perf_counter(); import toolroute.gateway.ops.app, "
        "toolroute.gateway.shell.server, toolroute.cli.serve; print(time.perf_counter() - t); "
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    times, mods = [], ""
    for _ in range(runs):
        out = subprocess.run([PY, "-c", code], check=True, capture_output=True, text=True)
        first, mods = out.stdout.split("\n")[:2]
        times.append(float(first))
    return statistics.median(times), [m for m in mods.split(",") if m]


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--imports", type=int, default=5, help="fresh interpreters timed")
    ap.add_argument("--out", type=Path, help="also write the markdown report here (+ .json)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if shutil.which("node") is None or not (NPM / "server-everything").is_dir():
        print("error: node or the npm reference servers are missing", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="toolroute-idle-") as tmp:
        rep = anyio.run(_measure, Path(tmp))
    seconds, modules = _import_time(args.imports)
    rep["import_s"] = round(seconds, 3)
    rep["modules_after_import"] = modules
    rep["runtime_s"] = round(time.perf_counter() - t0, 1)
    starts = [k for k in rep if isinstance(rep[k], dict)]
    lines = [
        "`toolroute serve` (stdio) over five reference servers (time, git, memory, "
        "filesystem, everything), the gateway process alone:",
        "",
        "| measure | " + " | ".join(starts) + " |",
        "|---|" + "---:|" * len(starts),
    ]
    for key, label in (
        ("idle_rss_mb", "idle RSS (after tools/list) MB"),
        ("after_find_tools_rss_mb", "RSS after one find_tools MB"),
        ("peak_rss_mb", "peak RSS (VmHWM) MB"),
    ):
        lines.append(f"| {label} | " + " | ".join(str(rep[k][key]) for k in starts) + " |")
    lines += [
        "",
        f"- import of toolroute.gateway.ops.app + server + cli: median {rep['import_s']} s "
        f"over {args.imports} fresh interpreters",
        "- heavy libraries mapped at idle: "
        + "; ".join(
            f"{k}: {', '.join(rep[k]['shared_libraries_at_idle']) or 'none'}" for k in starts
        ),
        f"- heavy modules after the import: {', '.join(modules) or 'none'}",
        "",
    ]
    md = "\n".join(lines)
    if args.out:
        args.out.write_text(md)
        args.out.with_suffix(".json").write_text(json.dumps(rep, indent=2) + "\n")
    print(json.dumps(rep, indent=2) if args.json else md.rstrip("\n"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
