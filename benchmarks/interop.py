"""The interop matrix: the MCP client libraries agents are built with, each driven through its
own public API with no LLM, against ``toolroute serve`` over stdio and streamable HTTP, in the
``meta`` and ``bind`` modes, with four kinds of downstream server behind it.

    python -m benchmarks.interop [--client NAME]... [--transport stdio|http]...
                                 [--expose meta|bind]... [--check] [--out docs/interop.md]
                                 [--jobs N]

Every client runs the same flow (benchmarks/interop_clients/flow.py): list the tools,
``find_tools`` for the weather tool, then call the tool it returned (``call_tool`` in meta;
in bind, list again and call the bound tool by its own name), once for each server kind:
tests/fixtures/era_server.py as a 2025-only server, a 2026-only one, and a dual-era one whose
code asks the 2025 way or the 2026 way (each started by a fork of one process that has
imported the SDK, benchmarks/interop_clients/era_farm.py: a gateway's start no longer imports
``mcp`` four times over). A cell says ``works``, ``refused: <the gateway's
reason>`` or ``fails: <what went wrong>``. Clients: the official ``mcp`` SDK (auto and legacy
mode, the project's own venv); openai-agents, pydantic-ai and fastmcp (``.toolroute/
interop-venv``); langchain-mcp-adapters in its README pattern (``get_tools()``, then a session
per tool call) and in one explicit session, and mcp-use (both on ``mcp`` 1.x:
``.toolroute/interop-venv-mcp1``); the TypeScript SDK v1 and v2 (legacy and auto negotiation)
and the MCP Inspector CLI (a process per command) from .toolroute/npm. ``bash .ci/interop``
installs the venvs from requirements-interop*.lock and runs this. A client whose runtime is
missing is listed as skipped. ``--check`` exits 1 unless the official SDK's rows all work and
every client gave a verdict for every cell.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.helpers.net import free_port, stop, wait_port

from benchmarks._report import write_results
from benchmarks.interop_clients.era_farm import launch_command
from benchmarks.interop_clients.flow import CITY, EXPECTED, QUERY, candidates, refusal

REPO = Path(__file__).resolve().parents[1]
CLIENTS_DIR = REPO / "benchmarks" / "interop_clients"
NPM = REPO / ".toolroute" / "npm" / "node_modules"
NODE = NPM / ".bin" / "node"
INSPECTOR = NPM / ".bin" / "mcp-inspector"
VENV = REPO / ".toolroute" / "interop-venv" / "bin" / "python"
VENV_MCP1 = REPO / ".toolroute" / "interop-venv-mcp1" / "bin" / "python"
ERA_FARM = REPO / "benchmarks" / "interop_clients" / "era_farm.py"
OUT = REPO / "docs" / "interop.md"
OUT_JSON = REPO / "benchmarks" / "results" / "interop.json"
RUN_TIMEOUT_S = 300
"""One client's run against one gateway (every server kind), at most."""

SERVERS = {
    "legacy": ("2025", "2025", "2025-only"),
    "modern": ("2026", "2026", "2026-only"),
    "dual25": ("dual", "2025", "dual, asks the 2025 way"),
    "dual26": ("dual", "2026", "dual, asks the 2026 way"),
}
"""Server name behind the gateway → (--era, --asks, column label)."""
GATEWAY = "import sys; from toolroute.cli import main; sys.exit(main())"
"""``python -c GATEWAY ARGS``: ``toolroute ARGS``."""


@dataclass(frozen=True, slots=True)
class ClientSpec:
    name: str
    label: str
    runtime: Path
    argv: tuple[str, ...]
    """After the runtime; the driver's arguments (transport, target, expose, servers) follow."""
    version_of: str = ""
    """Package whose version the row shows (Python: distribution; node: package dir)."""


def _python_client(name: str, label: str, venv: Path, dist: str) -> ClientSpec:
    return ClientSpec(
        name, label, venv, ("-m", "benchmarks.interop_clients.python_clients", name), dist
    )


def _ts(flavour: str, label: str, package: str) -> ClientSpec:
    return ClientSpec(flavour, label, NODE, (str(CLIENTS_DIR / "ts_client.mjs"), flavour), package)


CLIENTS = [
    _python_client("mcp-sdk-auto", "mcp python-sdk `Client` (auto)", Path(sys.executable), "mcp"),
    _python_client(
        "mcp-sdk-legacy", "mcp python-sdk `Client` (legacy)", Path(sys.executable), "mcp"
    ),  # fmt: skip
    _python_client("openai-agents", "openai-agents `MCPServer*`", VENV, "openai-agents"),
    _python_client("pydantic-ai", "pydantic-ai `MCPToolset`", VENV, "pydantic-ai-slim"),
    _python_client("fastmcp", "fastmcp `Client`", VENV, "fastmcp"),
    _python_client(
        "langchain-readme",
        "langchain-mcp-adapters, README (`get_tools()`)",
        VENV_MCP1,
        "langchain-mcp-adapters",
    ),  # fmt: skip
    _python_client(
        "langchain-session",
        "langchain-mcp-adapters, one session",
        VENV_MCP1,
        "langchain-mcp-adapters",
    ),  # fmt: skip
    _python_client("mcp-use", "mcp-use `MCPClient`", VENV_MCP1, "mcp-use"),
    _ts("v1", "TS SDK v1 `Client`", "@modelcontextprotocol/sdk"),
    _ts("v2-legacy", "TS SDK v2 `Client` (legacy)", "@modelcontextprotocol/client"),
    _ts("v2-auto", "TS SDK v2 `Client` (auto)", "@modelcontextprotocol/client"),
    ClientSpec("inspector", "MCP Inspector CLI", INSPECTOR, (), "@modelcontextprotocol/inspector"),
]


def version(spec: ClientSpec) -> str:
    if spec.runtime in (NODE, INSPECTOR):
        meta = NPM / spec.version_of / "package.json"
        return str(json.loads(meta.read_text()).get("version", "?")) if meta.is_file() else "?"
    code = f"import importlib.metadata as m; print(m.version({spec.version_of!r}))"
    out = subprocess.run(
        [str(spec.runtime), "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    return out.stdout.strip() or "?"


def write_config(directory: Path, expose: str, farm: Path) -> Path:
    """The gateway's config: the four era servers, each forked by the farm at ``farm``."""
    directory.mkdir(parents=True, exist_ok=True)
    servers = {}
    for name, (era, asks, _) in SERVERS.items():
        command, *args = launch_command(farm, "--era", era, "--asks", asks)
        servers[name] = {"command": command, "args": args}
    path = directory / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    store = json.dumps(str(directory / "store"))
    (directory / "toolroute.toml").write_text(
        f'[toolroute]\nstore = {store}\nexpose = "{expose}"\n'
    )
    return path


def gateway_command(config: Path, *extra: str) -> list[str]:
    """``toolroute serve`` from this checkout's src/, whatever environment a client gives its
    stdio server (``env`` sets the path: clients pass a server few variables of their own)."""
    return ["env", f"PYTHONPATH={REPO / 'src'}", sys.executable, "-c", GATEWAY,
            "serve", "--config", str(config), *extra]  # fmt: skip


@contextmanager
def era_farm(socket_path: Path, log: Path) -> Iterator[Path]:
    """The process that forks every era server the gateways start (era_farm.py), serving."""
    with log.open("ab") as out:
        proc = subprocess.Popen([sys.executable, str(ERA_FARM), str(socket_path)],
                                stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
        try:
            deadline = time.monotonic() + 120
            while not socket_path.exists():
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the era farm did not start: see {log}")
                time.sleep(0.05)
            yield socket_path
        finally:
            stop(proc, 10)  # killed when it ignores the terminate


@contextmanager
def http_gateway(config: Path, log: Path) -> Iterator[str]:
    port = free_port()
    with log.open("ab") as out:
        proc = subprocess.Popen(
            gateway_command(config, "--transport", "http", "--port", str(port)),
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            wait_port(port, proc, 180)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            stop(proc, 10)


def _short(text: str, n: int = 160) -> str:
    return " ".join(text.split())[:n]


def run_driver(spec: ClientSpec, transport: str, target: str, expose: str) -> dict[str, str]:
    """Each server's cell for one client run (a run that gave no verdict says why)."""
    names = list(SERVERS)
    argv = [str(spec.runtime), *spec.argv, transport, target, expose, ",".join(names)]
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False,
            cwd=REPO, env={**os.environ, "NO_COLOR": "1"},
        )  # fmt: skip
        out, why = done.stdout, f"exit {done.returncode}: {_short(done.stderr[-400:])}"
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        why = f"no verdict within {RUN_TIMEOUT_S} s"
    cells: dict[str, str] = {}
    for line in out.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and row.get("server") in SERVERS:
            cells[row["server"]] = str(row["cell"])
    return {n: cells.get(n, f"error: {why}") for n in names}


def _inspector(target: list[str], *args: str) -> dict[str, Any]:
    """One Inspector CLI command (a process, and a connection, of its own); its JSON output."""
    argv = [str(INSPECTOR), "--cli", "--connect-timeout", "150000", *args]
    argv += ["--", *target] if target[0] != "http" else ["--transport", "http", target[1]]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False, cwd=CLIENTS_DIR
    )
    try:  # a tool's isError result is printed too (and the exit code says so)
        body: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        raise RuntimeError(_short(done.stderr[-400:] or done.stdout[-400:])) from None
    return body


def _texts(result: dict[str, Any]) -> str:
    return "\n".join(c.get("text", "") for c in result.get("content", []) if isinstance(c, dict))


def run_inspector(transport: str, target: str, expose: str) -> dict[str, str]:
    tgt = json.loads(target) if transport == "stdio" else ["http", target]
    cells = {}
    for server in SERVERS:
        try:
            cells[server] = _inspector_cell(tgt, expose, server)
        except Exception as e:  # the CLI's own failure is the cell's verdict
            cells[server] = f"fails: {type(e).__name__}: {_short(str(e))}"
    return cells


def _inspector_cell(target: list[str], expose: str, server: str) -> str:
    listed = [t["name"] for t in _inspector(target, "--method", "tools/list").get("tools", [])]
    if "find_tools" not in listed:
        return "fails: find_tools not listed"
    found = _inspector(target, "--method", "tools/call", "--tool-name", "find_tools",
                       "--tool-arg", f"query={QUERY}", "k=10")  # fmt: skip
    names = [c["name"] for c in candidates(_texts(found)) if c.get("server") == server]
    if not names:
        return "fails: find_tools did not return the server's weather tool"
    if expose == "bind":
        listed = [t["name"] for t in _inspector(target, "--method", "tools/list").get("tools", [])]
        if names[0] not in listed:
            return f"fails: {names[0]} not listed after find_tools (a new connection)"
        args = ["--tool-name", names[0], "--tool-arg", f"city={CITY['city']}"]
    else:
        args = ["--tool-name", "call_tool", "--tool-arg", f"name={names[0]}",
                f"arguments={json.dumps(CITY)}"]  # fmt: skip
    result = _inspector(target, "--method", "tools/call", *args)
    text = _texts(result)
    if not result.get("isError") and EXPECTED in text:
        return "works"
    if why := refusal(text):
        return f"refused: {why}"
    return f"fails: {_short(text)}"


def available(spec: ClientSpec) -> str | None:
    """Why ``spec`` cannot run here (None: it can)."""
    if not spec.runtime.exists():
        hint = "bash .ci/interop" if "interop-venv" in str(spec.runtime) else "bash .ci/run"
        return f"skipped: {spec.runtime.relative_to(REPO)} missing ({hint} installs it)"
    if spec.runtime == NODE and not (NPM / spec.version_of / "package.json").is_file():
        return f"skipped: {spec.version_of} missing from .toolroute/npm"
    return None


def _sync(config: Path) -> None:
    subprocess.run(gateway_command(config)[:-3] + ["sync", "--config", str(config)],
                   capture_output=True, timeout=600, check=False)  # fmt: skip


def _cells(spec: ClientSpec, transport: str, target: str, expose: str) -> dict[str, Any]:
    """One client's row against one gateway target."""
    start = time.monotonic()
    skipped = available(spec)
    if skipped:
        cells = dict.fromkeys(SERVERS, skipped)
    elif spec.name == "inspector":
        cells = run_inspector(transport, target, expose)
    else:
        cells = run_driver(spec, transport, target, expose)
    print(f"{spec.name} {transport} {expose}: {cells}", flush=True)
    return {"client": spec.name, "label": spec.label, "transport": transport, "expose": expose,
            "cells": cells, "seconds": round(time.monotonic() - start, 1)}  # fmt: skip


def evaluate(
    clients: list[ClientSpec], transports: list[str], exposes: list[str], jobs: int = 1
) -> dict[str, Any]:
    """Every client against every (transport, expose) gateway, ``jobs`` client runs at a time
    (each run is a chain of process start-ups: one run uses about one core); the rows come
    back in the matrix's order whatever order they finish in."""
    with tempfile.TemporaryDirectory(prefix="toolroute-interop-") as d, ExitStack() as stack:
        tmp = Path(d)
        farm = stack.enter_context(era_farm(tmp / "era-farm.sock", tmp / "era-farm.log"))
        configs = {e: write_config(tmp / e, e, farm) for e in exposes}
        with ThreadPoolExecutor(max(1, jobs)) as pool:  # index once: every gateway after reads it
            list(pool.map(_sync, configs.values()))
        targets = {
            (t, e): stack.enter_context(_target(t, config, tmp / f"{t}-{e}.log"))
            for t in transports
            for e, config in configs.items()
        }
        with ThreadPoolExecutor(max(1, jobs)) as pool:
            runs = [pool.submit(_cells, spec, t, target, e)
                    for (t, e), target in targets.items() for spec in clients]  # fmt: skip
            rows = [run.result() for run in runs]
    versions = {s.name: version(s) if available(s) is None else "" for s in clients}
    return {"rows": rows, "versions": versions}


@contextmanager
def _target(transport: str, config: Path, log: Path) -> Iterator[str]:
    if transport == "stdio":
        yield json.dumps(gateway_command(config))
        return
    with http_gateway(config, log) as url:
        yield url


def markdown(report: dict[str, Any], command: str) -> str:
    labels = [label for _, _, label in SERVERS.values()]
    lines = [
        "# Interop matrix",
        "",
        "<!-- generated by benchmarks/interop.py: do not edit by hand -->",
        f"Command: `{command}` (`bash .ci/interop` installs the clients and runs it).",
        "",
        "Each client library, driven through its own public API with no LLM, lists the tools,"
        " calls `find_tools` for a weather tool, then calls the tool it returned (`call_tool` in"
        " `meta`; in `bind`, lists again and calls the bound tool by its name), against"
        " `toolroute serve` with no settings but the mode, over stdio and streamable HTTP."
        " Behind the gateway: tests/fixtures/era_server.py as a 2025-only server, a 2026-only"
        " one, and a server of both eras whose code asks the client the 2025 way or the 2026"
        " way. `refused` is the gateway's own answer (its reason quoted); `fails` is anything"
        " else.",
        "",
        "| client | version | transport | mode | " + " | ".join(labels) + " |",
        "|---" * (4 + len(labels)) + "|",
    ]
    for row in report["rows"]:
        cells = [row["cells"][s].replace("|", "\\|") for s in SERVERS]
        version = report["versions"].get(row["client"], "")
        lines.append(
            f"| {row['label']} | {version} | {row['transport']} | {row['expose']} | "
            + " | ".join(cells)
            + " |"
        )
    works = sum(c == "works" for r in report["rows"] for c in r["cells"].values())
    total = sum(len(r["cells"]) for r in report["rows"])
    lines += ["", f"{works} of {total} cells work."]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--client", action="append", choices=[c.name for c in CLIENTS])
    parser.add_argument("--transport", action="append", choices=["stdio", "http"])
    parser.add_argument("--expose", action="append", choices=["meta", "bind"])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--json", type=Path, default=OUT_JSON, help="the cells as JSON")
    parser.add_argument("--check", action="store_true", help="exit 1 unless the targets hold")
    parser.add_argument(
        "--jobs", type=int, default=1, help="client runs at a time (each uses about one core)"
    )
    args = parser.parse_args()
    if shutil.which("node") is None and not NODE.is_file():
        print("node is missing: the TypeScript clients and the Inspector are skipped")
    clients = [c for c in CLIENTS if not args.client or c.name in args.client]
    transports = args.transport or ["stdio", "http"]
    exposes = args.expose or ["meta", "bind"]
    report = evaluate(clients, transports, exposes, args.jobs)
    command = "python -m benchmarks.interop " + " ".join(
        [*(f"--client {c}" for c in args.client or []),
         *(f"--transport {t}" for t in args.transport or []),
         *(f"--expose {e}" for e in args.expose or [])]
    )  # fmt: skip
    write_results(markdown(report, command.strip()), args.out, report, args.json)
    print(f"wrote {args.out}")
    if args.check:
        cells = [c for r in report["rows"] for c in r["cells"].values()]
        sdk = [c for r in report["rows"] if r["client"].startswith("mcp-sdk")
               for c in r["cells"].values()]  # fmt: skip
        ok = all(c == "works" for c in sdk) and not any(c.startswith("error:") for c in cells)
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
