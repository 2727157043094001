"""Gateway latency: what one call through ``toolroute serve`` costs over calling the server direct.

    python -m benchmarks.gateway_latency [--calls 200] [--warmup 20] [--http] [--relay]
                                         [--proxies PYTHON]
                                         [--mode legacy] [--mode auto]
                                         [--breakdown] [--json] [--out F]

``--mode`` picks the official client's mode(s): ``legacy`` (the 2025-11-25 handshake; SSE
stream per HTTP request) and ``auto`` (2026-07-28 here: single exchange, no session); with
both, every path is measured in each era, each gateway path against the direct call of its
own era.

Opens, all at once, one MCP SDK client over stdio straight to the reference time server
(``python -m mcp_server_time``) and one over stdio to ``toolroute serve`` fronting only that
server (plus, with --http, one over streamable HTTP to a second ``toolroute serve``). After
warm-up calls on each, it times ``get_current_time {"timezone": "Asia/Tokyo"}`` direct, the same
call as ``call_tool time__get_current_time`` through each gateway, and ``find_tools`` through
each gateway, in alternating batches (the order rotates each round) so that machine noise hits
every path alike. Every result is checked (no is_error; the time mentions Asia/Tokyo, the
candidates hold time__get_current_time). Prints a markdown table of p50/p95/mean per path and
the added p50/p95 (gateway - direct); --json prints a JSON object instead.

With --proxies PYTHON it also times two pass-through proxies over stdio, each in front of its
own time server: ``toolroute serve`` with ``expose = "all"`` and FastMCP's ``create_proxy`` (run
by PYTHON, which has fastmcp installed), and reports the CPU each kind of process spent while
the calls were timed.

With --relay it measures the relay instead: it opens the conformance test server
(tests/fixtures/conformance_server.py) direct and behind a ``toolroute serve`` in pass-through
mode (``expose = "all"``) and times, on that one server, a tool call (``test_simple_text``), a
resource read (``test://static-text``) and a prompt get (``test_prompt_with_arguments``), each
direct and through the gateway, so that what the relay adds to a read or a get is compared with
what it adds to a tool call.

--breakdown also times, in this process and in blocks, the pieces of one call_tool: the
gateway's own downstream call (its downstreams' client to the same server), ``Gateway.call``
(argument validation + that call + recording the outcome), the whole handler behind the SDK's
server (an in-memory client: dispatch, request validation, serialisation; as served, without
the SDK's per-request OTel span, and with it as the SDK adds it by default),
and, alone, argument validation and recording an outcome with and without waiting for the
store write. What the stdio path adds beyond the in-memory handler is transport.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult
from tests.helpers.net import stop

PY = sys.executable
TOOLROUTE = str(Path(PY).with_name("toolroute"))
TIME_ARGS = ["-m", "mcp_server_time", "--local-timezone", "UTC"]
TZ_ARGS: dict[str, Any] = {"timezone": "Asia/Tokyo"}
VIA_ARGS: dict[str, Any] = {"name": "time__get_current_time", "arguments": TZ_ARGS}
FIND_ARGS: dict[str, Any] = {"query": "what time is it in Tokyo", "k": 5}
DIRECT = "direct (stdio)"
REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "conformance_server.py"
RELAY_KINDS = ("tool call", "resource read", "prompt get")
ERAS = {"legacy": "2025-11-25", "auto": "2026-07-28"}
"""The official client's modes and the protocol each negotiates with toolroute and the server."""

Call = Callable[[], Awaitable[None]]
Report = dict[str, Any]


def _check_time(r: CallToolResult) -> None:
    text = " ".join(getattr(c, "text", "") for c in r.content)
    if r.is_error or "Asia/Tokyo" not in text:
        raise RuntimeError(f"bad time result: is_error={r.is_error} {text[:200]!r}")


def _check_find(r: CallToolResult) -> None:
    cands = (r.structured_content or {}).get("candidates", [])
    if r.is_error or "time__get_current_time" not in [c.get("name") for c in cands]:
        raise RuntimeError(f"bad find_tools result: is_error={r.is_error} {cands!r:.200}")


def _env(src: Path) -> dict[str, str]:
    """The environment of a ``toolroute serve`` child that runs the package in ``src`` (the
    SDK's stdio client passes no PYTHONPATH of its own, so an editable install elsewhere would
    win)."""
    return {**os.environ, "PYTHONPATH": str(src)}


def _caller(c: Client, tool: str, args: dict[str, Any], check: Callable[..., None]) -> Call:
    async def call() -> None:
        check(await c.call_tool(tool, args))

    call.client = c  # type: ignore[attr-defined]  # whose process serves it (CPU per call)
    return call


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _wait_port(port: int, proc: subprocess.Popen[bytes], timeout_s: float = 120.0) -> None:
    """Bounded wait until the HTTP gateway accepts connections (it indexes before it binds)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"toolroute serve --transport http exited with {proc.returncode}")
        try:
            stream = await anyio.connect_tcp("127.0.0.1", port)
        except OSError:
            await anyio.sleep(0.1)
            continue
        await stream.aclose()
        return
    raise TimeoutError(f"port {port} did not open within {timeout_s:.0f}s")


async def _timed(paths: dict[str, Call], args: argparse.Namespace) -> dict[str, list[float]]:
    """Warm up every path, then time them in alternating batches (the order rotates)."""
    return await _timed_blocks(paths, args.calls, args.warmup, args.batch)


async def _relay_paths(
    connect: Callable[[StdioServerParameters], Awaitable[Client]], tmp: Path
) -> dict[str, Call]:
    """Tool call, resource read and prompt get on the conformance server, direct and through a
    pass-through gateway; every answer is checked against the server's own content."""
    from mcp.types import GetPromptResult, ReadResourceResult

    folder = tmp / "relay"
    folder.mkdir()
    server = {"command": PY, "args": [str(FIXTURE)]}
    (folder / "servers.json").write_text(json.dumps({"mcpServers": {"conformance": server}}))
    (folder / "toolroute.toml").write_text(
        f'[toolroute]\nstore = "{folder / "store"}"\nexpose = "all"\n'
    )
    direct = await connect(StdioServerParameters(command=PY, args=[str(FIXTURE)]))
    gateway = await connect(
        StdioServerParameters(
            command=TOOLROUTE,
            args=["serve", "--config", str(folder / "servers.json")],
            env=_env(REPO / "src"),
        )
    )

    def kinds(c: Client) -> dict[str, Call]:
        async def tool() -> None:
            r = await c.call_tool("test_simple_text", {})
            if r.is_error or "simple text response" not in getattr(r.content[0], "text", ""):
                raise RuntimeError(f"bad tool result {r!r:.200}")

        async def read() -> None:
            r: ReadResourceResult = await c.read_resource("test://static-text")
            if "static text resource" not in getattr(r.contents[0], "text", ""):
                raise RuntimeError(f"bad resource {r!r:.200}")

        async def get() -> None:
            r: GetPromptResult = await c.get_prompt(
                "test_prompt_with_arguments", {"arg1": "a", "arg2": "b"}
            )
            if "arg1='a'" not in getattr(r.messages[0].content, "text", ""):
                raise RuntimeError(f"bad prompt {r!r:.200}")

        return dict(zip(RELAY_KINDS, (tool, read, get), strict=True))

    paths = {f"relay direct {k} (stdio)": call for k, call in kinds(direct).items()}
    paths |= {f"relay gateway {k} (stdio)": call for k, call in kinds(gateway).items()}
    return paths


def _relay_added(stats: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Gateway minus direct, per relayed request kind (only with --relay)."""
    return {
        kind: {
            k: stats[f"relay gateway {kind} (stdio)"][k] - stats[f"relay direct {kind} (stdio)"][k]
            for k in ("p50_ms", "p95_ms")
        }
        for kind in RELAY_KINDS
        if f"relay gateway {kind} (stdio)" in stats
    }


def _stats(ms: list[float]) -> dict[str, float]:
    q = statistics.quantiles(ms, n=100, method="inclusive")
    return {
        "calls": len(ms),
        "p50_ms": q[49],
        "p95_ms": q[94],
        "p99_ms": q[98],
        "mean_ms": statistics.fmean(ms),
    }


async def _measure(args: argparse.Namespace, tmp: Path) -> dict[str, list[float]]:
    config = tmp / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"time": {"command": PY, "args": TIME_ARGS}}}))
    serve = ["serve", "--config", str(config), "--store"]
    paths: dict[str, Call] = {}
    proc: subprocess.Popen[bytes] | None = None
    pids: dict[int, int] = {}  # id(client) -> the pid of the process serving it
    try:
        async with AsyncExitStack() as stack:

            async def connect(target: StdioServerParameters | str, mode: str = "legacy") -> Client:
                client = Client(target, mode=mode, read_timeout_seconds=60)  # type: ignore[arg-type]
                spawned = _children()
                entered = await stack.enter_async_context(client)
                spawned = _children() - spawned  # the process this client talks to (stdio)
                if len(spawned) == 1:
                    pids[id(entered)] = spawned.pop()
                elif proc is not None:  # HTTP: the gateway started above
                    pids[id(entered)] = proc.pid
                return entered

            if args.relay:  # its own comparison, on its own server (see the docstring)
                paths.update(await _relay_paths(connect, tmp))
                return await _timed(paths, args)
            url = None
            if args.http:
                port = _free_port()
                cmd = [TOOLROUTE, *serve, str(tmp / "store-http"), "--transport", "http"]
                proc = subprocess.Popen([*cmd, "--port", str(port)], env=_env(REPO / "src"))
                await _wait_port(port, proc)
                url = f"http://127.0.0.1:{port}/mcp"
            gws: dict[str, Client] = {}
            for mode in args.modes:
                era = "" if args.modes == ["legacy"] else f", {ERAS[mode]}"
                direct = await connect(StdioServerParameters(command=PY, args=TIME_ARGS), mode)
                paths[DIRECT + era] = _caller(direct, "get_current_time", TZ_ARGS, _check_time)
                store = str(tmp / f"store-stdio-{mode}")
                target = StdioServerParameters(
                    command=TOOLROUTE, args=[*serve, store], env=_env(REPO / "src")
                )
                gws[f"stdio{era}"] = await connect(target, mode)
                if args.baseline_src:  # the same gateway from another source tree, same run
                    env = _env(Path(args.baseline_src) / "src")
                    old = [*serve, str(tmp / f"store-baseline-{mode}")]
                    target = StdioServerParameters(command=TOOLROUTE, args=old, env=env)
                    gws[f"stdio{era}, baseline"] = await connect(target, mode)
                if args.abstain_off:  # this tree's gateway without the "no tool fits" check
                    folder = tmp / f"abstain-off-{mode}"
                    folder.mkdir()
                    (folder / "servers.json").write_text(config.read_text())
                    (folder / "toolroute.toml").write_text(
                        f'[toolroute]\nstore = "{folder / "store"}"\nabstain = "off"\n'
                    )
                    off = ["serve", "--config", str(folder / "servers.json")]
                    target = StdioServerParameters(
                        command=TOOLROUTE, args=off, env=_env(REPO / "src")
                    )
                    gws[f"stdio{era}, abstain off"] = await connect(target, mode)
                if url is not None:
                    gws[f"http{era}"] = await connect(url, mode)
            if args.proxies:  # pass-through: toolroute's and FastMCP's, the same server behind
                for mode in args.modes:
                    era = "" if args.modes == ["legacy"] else f", {ERAS[mode]}"
                    for label, target in _proxies(args.proxies, tmp, mode).items():
                        proxy = await connect(target, mode)
                        paths[f"{label} (stdio{era})"] = _caller(
                            proxy, "get_current_time", TZ_ARGS, _check_time
                        )
            for t, gw in gws.items():
                paths[f"gateway call_tool ({t})"] = _caller(gw, "call_tool", VIA_ARGS, _check_time)
            for t, gw in gws.items():
                find = _caller(gw, "find_tools", FIND_ARGS, _check_find)
                paths[f"gateway find_tools ({t})"] = find

            for t in gws:  # find_tools first: the call gate admits only promoted tools
                await paths[f"gateway find_tools ({t})"]()
            before = _cpu_of_children()
            args.sources = _sources_of(before)
            owners = {
                name: pids[id(c)]
                for name, call in paths.items()
                if (c := getattr(call, "client", None)) is not None and id(c) in pids
            }
            cpu_ns: dict[str, list[int]] = {}
            timed = await _timed_blocks(paths, args.calls, args.warmup, args.batch, owners, cpu_ns)
            args.cpu = _cpu_spent(before, _cpu_of_children())
            args.cpu_per_call = {n: sum(v) / len(timed[n]) / 1e6 for n, v in cpu_ns.items()}
            return timed
    finally:
        if proc is not None:
            stop(proc, 10)


FASTMCP_PROXY = """
import sys
from fastmcp.server.server import create_proxy
servers = {"time": {"command": sys.argv[1], "args": sys.argv[2:]}}
create_proxy({"mcpServers": servers}, name="fastmcp-proxy").run(show_banner=False)
"""


def _proxies(python: str, tmp: Path, mode: str) -> dict[str, StdioServerParameters]:
    """toolroute in pass-through (``expose = "all"``) and FastMCP's proxy (run by
    ``python``, an interpreter with fastmcp installed), each over stdio in front of its own
    time server."""
    folder = tmp / f"passthrough-{mode}"
    folder.mkdir()
    (folder / "servers.json").write_text(
        json.dumps({"mcpServers": {"time": {"command": PY, "args": TIME_ARGS}}})
    )
    (folder / "toolroute.toml").write_text(
        f'[toolroute]\nstore = "{folder / "store"}"\nexpose = "all"\n'
    )
    script = tmp / "fastmcp_proxy.py"
    script.write_text(FASTMCP_PROXY)
    return {
        "toolroute pass-through": StdioServerParameters(
            command=TOOLROUTE, args=["serve", str(folder / "servers.json")], env=_env(REPO / "src")
        ),
        "fastmcp proxy": StdioServerParameters(command=python, args=[str(script), PY, *TIME_ARGS]),
    }


def _cpu_of_children() -> dict[int, tuple[str, float]]:
    """CPU seconds (user + system) of every process below this one, with its command line
    (Linux /proc; empty elsewhere)."""
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    parent: dict[int, int] = {}
    cpu: dict[int, tuple[str, float]] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        pid = int(entry.name)
        parent[pid] = int(fields[1])
        cpu[pid] = (cmd.strip(), (int(fields[11]) + int(fields[12])) / ticks)
    me, out = os.getpid(), {}
    for pid in cpu:
        p = pid
        while p in parent and p != me:
            p = parent[p]
        if p == me and pid != me:
            out[pid] = cpu[pid]
    return out


def _label(cmd: str) -> str:
    """A child process by a short label (its command line tells what it runs)."""
    if "fastmcp_proxy" in cmd:
        return "fastmcp proxy"
    if " serve " in cmd:
        return "toolroute serve" + (" (pass-through)" if "passthrough-" in cmd else "")
    return "time server" if "mcp_server_time" in cmd else "other"


def _sources_of(children: dict[int, tuple[str, float]]) -> dict[str, list[str]]:
    """The PYTHONPATH each ``toolroute serve`` child runs with: the tree whose code was timed."""
    out: dict[str, set[str]] = {}
    for pid, (cmd, _) in children.items():
        label = _label(cmd)
        if not label.startswith("toolroute"):
            continue
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        paths = [e[len(b"PYTHONPATH=") :].decode() for e in env if e.startswith(b"PYTHONPATH=")]
        out.setdefault(label, set()).update(paths or ["(none: the installed package)"])
    return {k: sorted(v) for k, v in sorted(out.items())}


def _cpu_spent(
    before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]]
) -> dict[str, float]:
    """CPU seconds each child process spent between two snapshots, by a short label."""
    spent: dict[str, float] = {}
    for pid, (cmd, seconds) in after.items():
        if pid not in before:
            continue
        used = seconds - before[pid][1]
        label = _label(cmd)
        spent[label] = spent.get(label, 0.0) + used
    return spent


def _children() -> set[int]:
    """The pids of this process's own children (Linux /proc; empty elsewhere)."""
    me, out = os.getpid(), set()
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == me:
                out.add(int(entry.name))
        except (OSError, ValueError):
            continue
    return out


def _cpu_ns(pid: int) -> int:
    """Nanoseconds ``pid``'s threads (not its children) have run on a CPU: the scheduler's own
    count, finer than the clock ticks of /proc/PID/stat."""
    total = 0
    for task in Path(f"/proc/{pid}/task").glob("[0-9]*"):
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total


async def _timed_blocks(
    paths: dict[str, Call],
    calls: int,
    warmup: int,
    batch: int,
    owners: dict[str, int] | None = None,
    cpu_ns: dict[str, list[int]] | None = None,
) -> dict[str, list[float]]:
    """Warm up, then time each path in alternating batches; with ``owners`` (path -> pid of
    the process serving it), the CPU that process spent on each batch goes into ``cpu_ns``."""
    owners = owners or {}
    for call in paths.values():
        for _ in range(warmup):
            await call()
    ms: dict[str, list[float]] = {name: [] for name in paths}
    order, done = list(paths), 0
    while done < calls:
        n = min(batch, calls - done)
        for name in order:
            pid = owners.get(name)
            cpu0 = _cpu_ns(pid) if pid else 0
            for _ in range(n):
                t0 = time.perf_counter()
                await paths[name]()
                ms[name].append((time.perf_counter() - t0) * 1e3)
            if pid and cpu_ns is not None:
                cpu_ns.setdefault(name, []).append(_cpu_ns(pid) - cpu0)
        order = order[1:] + order[:1]
        done += n
    return ms


async def _breakdown(args: argparse.Namespace, tmp: Path) -> dict[str, list[float]]:
    """The pieces of one call_tool, timed in this process (see the module docstring)."""
    from dataclasses import replace

    from toolroute.config import load_config
    from toolroute.gateway.calls import argument_errors
    from toolroute.gateway.ops.app import make_gateway, running_downstreams
    from toolroute.gateway.ops.syncing import sync_router
    from toolroute.sdk import OpenTelemetryMiddleware
    from toolroute.stats import Outcome

    config = tmp / "breakdown.json"
    config.write_text(json.dumps({"mcpServers": {"time": {"command": PY, "args": TIME_ARGS}}}))
    cfg = load_config(config, None)
    own = {"store": str(tmp / "store-breakdown"), "call_gate": "off"}
    cfg = replace(cfg, settings=cfg.settings.model_copy(update=own))
    async with running_downstreams(cfg) as downstreams:
        router, _ = await sync_router(cfg, downstreams)
        gw = make_gateway(cfg, router, downstreams)  # as served: no SDK span unless otel is on
        name = VIA_ARGS["name"]
        schema = dict(gw.shared.presenter.tools_by_name[name].input_schema)
        outcome = Outcome("time", "get_current_time", success=True, latency_s=0.001)

        async def downstream() -> None:
            _check_time((await downstreams["time"].call_tool("get_current_time", TZ_ARGS, 30))[0])

        async def gateway_call() -> None:
            _check_time(await gw.calls.checked(name, TZ_ARGS))

        async def validate() -> None:
            argument_errors(schema, TZ_ARGS)

        async def record_wait() -> None:
            router.record(outcome)

        traced = make_gateway(cfg, router, downstreams)
        traced.server.middleware = [OpenTelemetryMiddleware()]  # the SDK's default
        try:
            async with (
                Client(gw.server, mode="legacy") as c,
                Client(traced.server, mode="legacy") as c_traced,
            ):
                paths: dict[str, Call] = {
                    "gateway's downstream call (downstreams client, stdio)": downstream,
                    "Gateway.call (validate + downstream + record)": gateway_call,
                    "handler behind the SDK server (in-memory client)": _caller(
                        c, "call_tool", VIA_ARGS, _check_time
                    ),
                    "the same with the SDK's OTel middleware (its default)": _caller(
                        c_traced, "call_tool", VIA_ARGS, _check_time
                    ),
                    "argument validation": validate,
                    "record outcome, waiting for the store write": record_wait,
                }
                return await _timed_blocks(paths, args.calls, args.warmup, args.batch)
        finally:
            router.close()


def _direct_of(name: str) -> str:
    """The direct path of the same protocol era as the gateway path ``name``."""
    era = next((e for e in ERAS.values() if e in name), None)
    return f"{DIRECT}, {era}" if era else DIRECT


def _report(ms: dict[str, list[float]], args: argparse.Namespace, runtime_s: float) -> Report:
    stats = {name: _stats(v) for name, v in ms.items()}
    added = {
        name: {k: stats[name][k] - stats[_direct_of(name)][k] for k in ("p50_ms", "p95_ms")}
        for name in stats
        if name.startswith("gateway call_tool")
    }
    rep: Report = {
        "calls": args.calls,
        "warmup": args.warmup,
        "batch": args.batch,
        "python": sys.version.split()[0],
        "paths": stats,
        "added_vs_direct": added,
        "relay_added_vs_direct": _relay_added(stats),
        "runtime_s": runtime_s,
        "cpu_s": getattr(args, "cpu", {}),
        "sources": getattr(args, "sources", {}),
        "cpu_ms_per_call": getattr(args, "cpu_per_call", {}),
        "modes": args.modes,
    }
    return rep


def _markdown(rep: Report) -> str:
    lines = [
        "| path | calls | p50 ms | p95 ms | p99 ms | mean ms | CPU ms per call |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    cpu = rep.get("cpu_ms_per_call", {})
    for name, s in rep["paths"].items():
        keys = ("p50_ms", "p95_ms", "p99_ms", "mean_ms")
        cells = [name, str(s["calls"])] + [f"{s[k]:.2f}" for k in keys]
        cells.append(f"{cpu[name]:.2f}" if name in cpu else "")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    if cpu:
        lines.append(
            "CPU ms per call: what the process answering the path (the time server direct, "
            "else the gateway or proxy, not the server behind it) ran on a CPU during the "
            "timed batches (all its threads, /proc/PID/task/*/schedstat), per timed call."
        )
        lines.append("")
    if rep.get("cpu_s"):
        lines.append(
            "CPU seconds spent by each kind of process while the calls were timed (all its "
            "processes, every path's calls): "
            + ", ".join(f"{k} {v:.2f} s" for k, v in sorted(rep["cpu_s"].items()))
        )
        served = (rep["calls"] + rep["warmup"]) * len(rep.get("modes", ["legacy"]))
        for kind in ("toolroute serve (pass-through)", "fastmcp proxy"):
            if kind in rep["cpu_s"]:
                per_call = rep["cpu_s"][kind] / served * 1e3
                lines.append(f"- {kind}: {per_call:.2f} ms of CPU per call it relayed")
        lines.append("")
    for kind, srcs in rep.get("sources", {}).items():
        lines.append(f"- {kind} ran the package from PYTHONPATH {', '.join(srcs)}")
    for name, a in rep["added_vs_direct"].items():
        lines.append(
            f"- added by the gateway, {name} - direct: "
            f"p50 {a['p50_ms']:+.2f} ms, p95 {a['p95_ms']:+.2f} ms"
        )
    for kind, a in rep["relay_added_vs_direct"].items():
        lines.append(
            f"- added by the pass-through relay to a {kind} (conformance server): "
            f"p50 {a['p50_ms']:+.2f} ms, p95 {a['p95_ms']:+.2f} ms"
        )
    lines.append(
        f"- {rep['calls']} timed calls per path after {rep['warmup']} warm-up calls, "
        f"alternating batches of {rep['batch']}; runtime {rep['runtime_s']:.1f} s"
    )
    for name, a in rep["added_vs_direct"].items():
        direct = rep["paths"][_direct_of(name)]["p50_ms"]
        lines.append(f"- {name} adds {a['p50_ms'] / direct:.2f}x one direct call (p50)")
    if rep.get("breakdown"):
        lines += [
            "",
            "Breakdown of one call_tool, in the gateway's process (blocks, same run):",
            "",
            "| piece | p50 ms | p95 ms |",
            "|---|---:|---:|",
        ]
        for name, b in rep["breakdown"].items():
            lines.append(f"| {name} | {b['p50_ms']:.3f} | {b['p95_ms']:.3f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(
        description=(
            "Measure the latency toolroute's gateway adds per MCP tool call: get_current_time on "
            "mcp-server-time called direct vs through `toolroute serve` (call_tool), plus "
            "find_tools, timed in alternating batches within one run."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    ap.add_argument("--calls", "-n", type=int, default=200, help="timed calls per path")
    ap.add_argument("--warmup", "-w", type=int, default=20, help="untimed warm-up calls per path")
    ap.add_argument("--batch", type=int, default=20, help="calls per path before switching path")
    ap.add_argument("--http", action="store_true", help="also measure over streamable HTTP")
    ap.add_argument(
        "--baseline-src",
        metavar="DIR",
        help="also time the stdio gateway run from the source tree DIR (e.g. a worktree of an "
        "earlier commit: git worktree add /tmp/before COMMIT), in the same run",
    )
    ap.add_argument(
        "--abstain-off",
        action="store_true",
        help='also time the stdio gateway with abstain = "off" (what find_tools costs '
        "beside the no-tool-fits check), in the same run",
    )
    ap.add_argument(
        "--proxies",
        metavar="PYTHON",
        help="also time pass-through proxies over stdio: toolroute (expose = all) and FastMCP's "
        "create_proxy run by PYTHON, an interpreter with fastmcp installed "
        "(e.g. .toolroute/interop-venv/bin/python)",
    )
    ap.add_argument(
        "--mode",
        dest="modes",
        action="append",
        choices=sorted(ERAS),
        help="client mode(s): legacy (2025-11-25 handshake) and/or auto (2026-07-28, "
        "single exchange); each path is measured in each (default: legacy)",
    )
    ap.add_argument(
        "--relay",
        action="store_true",
        help="instead, time a tool call, a resource read and a prompt get through the "
        "pass-through relay, each against the same server direct",
    )
    ap.add_argument(
        "--breakdown", action="store_true", help="also time the pieces of call_tool in-process"
    )
    ap.add_argument("--json", action="store_true", help="print a JSON object, not markdown")
    ap.add_argument("--out", type=Path, help="also write the markdown report to this file")
    args = ap.parse_args()
    args.modes = args.modes or ["legacy"]
    if args.calls < 2 or args.warmup < 0 or args.batch < 1:
        ap.error("need --calls >= 2, --warmup >= 0, --batch >= 1")

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="toolroute-latency-") as tmp:
        ms = anyio.run(_measure, args, Path(tmp))
        pieces = anyio.run(_breakdown, args, Path(tmp)) if args.breakdown else {}
    rep = _report(ms, args, time.perf_counter() - t0)
    rep["breakdown"] = {name: _stats(v) for name, v in pieces.items()}
    md = _markdown(rep)
    if args.out:
        args.out.write_text(md)
    print(json.dumps(rep, indent=2) if args.json else md.rstrip("\n"))


if __name__ == "__main__":
    main()
