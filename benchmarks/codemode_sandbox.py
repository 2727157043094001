"""Code mode's sandbox: pydantic-monty against an embedded V8 (mini-racer) and QuickJS over
wasmtime (quickjs-rs), for isolation, start-up time and memory; then the gateway itself: another
client's call_tool latency while a script spins or bombs memory.

    python -m benchmarks.codemode_sandbox [--runs 20] [--skip-gateway] [--out FILE] [--json FILE]

Needs requirements-codemode-bench.lock for the two JavaScript engines (an engine that is not
installed is reported as such). Each figure comes from a fresh child interpreter:

- start-up: import of the engine, then the first sandbox running a trivial script (cold), then
  the median over ``--runs`` of a new sandbox running a script that awaits two host calls (what
  one ``execute`` costs toolroute); RSS of the host process, and of the worker process for
  Monty, with one sandbox open.
- isolation: each probe (file read, network, environment, subprocess, an endless loop, a memory
  bomb, deep recursion) in its own child with a 60 s bound: how it ended and how long it took;
  "host died" means the engine took the host process (the gateway) down with it.
- gateway: `toolroute serve --transport http` with code mode on (time server and the code-mode
  fixture server), one client's call_tool latency alone and while another client runs a
  spinning script and a memory bomb.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable
ENGINES = ("monty", "v8", "quickjs")
TWO_CALLS = {
    "monty": 'a = await call_tool("x__a", {"q": 1})\nb = await call_tool("x__b", {})\n[a, b]',
    "js": "const a = await call_tool('x__a', {q: 1}); const b = await call_tool('x__b', {}); "
    "JSON.stringify([a, b])",
}
PROBES: dict[str, dict[str, str]] = {
    "file read": {
        "monty": 'open("/etc/passwd").read()',
        "js": "require('fs').readFileSync('/etc/passwd', 'utf8')",
    },
    "network": {
        "monty": 'import socket\nsocket.create_connection(("127.0.0.1", 9))',
        "js": "await fetch('http://127.0.0.1:9/')",
    },
    "environment": {"monty": 'import os\nos.environ["HOME"]', "js": "process.env.HOME"},
    "subprocess": {
        "monty": 'import subprocess\nsubprocess.run(["id"])',
        "js": "require('child_process').execSync('id')",
    },
    "endless loop": {"monty": "while True:\n    pass", "js": "while (true) {}"},
    "memory bomb": {
        "monty": 'x = []\nwhile True:\n    x.append("a" * 1_000_000)',
        "js": "const x = []; while (true) x.push('a'.repeat(1e6) + Math.random());",
    },
    "deep recursion": {
        "monty": "def f(n):\n    return f(n + 1)\nf(0)",
        "js": "function f(n) { return f(n + 1); } f(0)",
    },
}
LIMIT_S = 2.0
MEMORY = 64 * 1024 * 1024


def _rss_kib(pid: int | str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _children() -> list[int]:
    out = []
    for task in Path("/proc/self/task").iterdir():
        try:  # a thread may end between the listing and the read
            out += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


async def _host_call(name: str, arguments: Any) -> Any:
    return {"name": name, "arguments": arguments}


async def _run(engine: str, code: str) -> tuple[Any, int]:
    """Run ``code`` in a new sandbox of ``engine``; its value and the worker's RSS (KiB)."""
    if engine == "monty":
        import pydantic_monty as monty

        async with (
            monty.AsyncMonty(min_processes=1, max_processes=1, request_timeout=30) as pool,
            pool.checkout(
                limits={"max_feed_duration_secs": LIMIT_S, "max_memory": MEMORY}
            ) as session,
        ):
            worker = sum(_rss_kib(p) for p in _children())
            value = await session.feed_run(
                code,
                external_lookup={"call_tool": _host_call},
                print_callback=monty.CollectString(),
            )
            return value, worker
    if engine == "v8":
        from py_mini_racer import MiniRacer

        async def raw(name: str, arguments: str) -> str:  # mini-racer passes no dicts across
            return json.dumps(await _host_call(name, json.loads(arguments)))

        mr = MiniRacer()
        try:
            mr.set_hard_memory_limit(MEMORY)
            async with mr.wrap_py_function(raw) as js_raw:
                fn = mr.eval(
                    "async (raw) => { const call_tool = async (n, a) => "
                    "JSON.parse(await raw(n, JSON.stringify(a)));\n"
                    + code.replace("JSON.stringify([a, b])", "return JSON.stringify([a, b])")
                    + "\n}"
                )
                import asyncio

                # cancelable: wait_for interrupts the isolate, synchronous code included;
                # the call gives the async function's promise, awaited within the same bound
                started = time.perf_counter()
                value = await asyncio.wait_for(fn.cancelable()(js_raw), LIMIT_S)
                left = max(0.01, LIMIT_S - (time.perf_counter() - started))
                if hasattr(value, "__await__"):
                    value = await asyncio.wait_for(value, left)
                return value, 0
        finally:
            mr.close()
    import quickjs_rs

    rt = quickjs_rs.Runtime(memory_limit=MEMORY)
    ctx = rt.new_context(timeout=LIMIT_S)
    ctx.register("call_tool", _host_call)
    return await ctx.eval_async(code), 0


def _startup(engine: str, runs: int) -> dict[str, Any]:
    import asyncio

    code = TWO_CALLS["monty" if engine == "monty" else "js"]
    t0 = time.perf_counter()
    try:
        if engine == "monty":
            import pydantic_monty  # noqa: F401
        elif engine == "v8":
            import py_mini_racer  # noqa: F401
        else:
            import quickjs_rs  # noqa: F401
    except ImportError:
        return {"engine": engine, "installed": False}
    imported = time.perf_counter() - t0
    rss0 = _rss_kib()
    t1 = time.perf_counter()
    asyncio.run(_run(engine, "1 + 1"))
    cold = time.perf_counter() - t1
    times, workers = [], []
    for _ in range(runs):
        t = time.perf_counter()
        _, worker = asyncio.run(_run(engine, code))
        times.append(time.perf_counter() - t)
        workers.append(worker)
    return {
        "engine": engine,
        "installed": True,
        "import_ms": round(imported * 1000, 1),
        "first_script_ms": round(cold * 1000, 1),
        "script_ms_median": round(statistics.median(times) * 1000, 2),
        "script_ms_p90": round(sorted(times)[int(0.9 * (len(times) - 1))] * 1000, 2),
        "host_rss_growth_mib": round((_rss_kib() - rss0) / 1024, 1),
        "worker_rss_mib": round(statistics.median(workers) / 1024, 1),
    }


def _probe(engine: str, probe: str) -> dict[str, Any]:
    import asyncio

    code = PROBES[probe]["monty" if engine == "monty" else "js"]
    t = time.perf_counter()
    try:
        value = asyncio.run(_run(engine, code))[0]
        outcome = f"ran: {str(value)[:60]}"
    except BaseException as e:  # what the engine raised is the result here
        outcome = f"{type(e).__name__}: {str(e).splitlines()[0][:90] if str(e) else ''}"
    return {"outcome": outcome, "seconds": round(time.perf_counter() - t, 2)}


def _child(args: list[str], timeout_s: float = 60) -> dict[str, Any]:
    """One measurement in a fresh interpreter (its JSON), or how that interpreter ended."""
    t = time.perf_counter()
    try:
        done = subprocess.run(
            [PY, "-m", "benchmarks.codemode_sandbox", *args],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            cwd=REPO,
        )
    except subprocess.TimeoutExpired:
        return {"outcome": f"hung: killed after {timeout_s:.0f} s", "seconds": timeout_s}
    if not done.stdout.strip():
        tail = (done.stderr.strip().splitlines() or ["?"])[-1][:90]
        return {
            "outcome": f"host died (exit {done.returncode}): {tail}",
            "seconds": round(time.perf_counter() - t, 2),
        }
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if done.returncode != 0:  # the figures were written, then the interpreter ended badly
        out["exit"] = done.returncode
        if "outcome" in out:
            out["outcome"] += f" [then the host aborted at exit: {done.returncode}]"
    return out


# -- the gateway under hostile scripts ------------------------------------------------------


def code_mode_gateway(
    tmp: Path, settings: str = ""
) -> tuple[int, subprocess.Popen[bytes], IO[str]]:
    """``toolroute serve --transport http`` with code mode on, its config and store in ``tmp``, in
    front of the time server and the code-mode fixture (``calc``); ``settings`` are more TOML
    lines after ``[toolroute]``'s. Its port, its process, and its log (stderr: close it after)."""
    from tests.helpers.net import free_port

    time_main = (
        "import sys; sys.argv[1:] = ['--local-timezone', 'UTC']; "
        "from mcp_server_time import main; main()"
    )
    servers = {
        "time": {"command": PY, "args": ["-c", time_main]},
        "calc": {"command": PY, "args": [str(REPO / "tests/fixtures/codemode_server.py")]},
    }
    (tmp / "servers.json").write_text(json.dumps({"mcpServers": servers}))
    (tmp / "toolroute.toml").write_text(
        f'[toolroute]\nstore = "{tmp / "store"}"\ncode_mode = true\ncall_gate = false\n' + settings
    )
    port = free_port()
    log = (tmp / "gateway.log").open("w")
    proc = subprocess.Popen(
        [str(Path(PY).with_name("toolroute")), "serve", "--config", str(tmp / "servers.json"),
         "--transport", "http", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=log,
    )  # fmt: skip
    return port, proc, log


def _gateway(runs: int) -> dict[str, Any]:
    import anyio
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from tests.helpers.net import stop, wait_for_port

    tmp = Path(tempfile.mkdtemp(prefix="codemode-bench-"))
    port, proc, log = code_mode_gateway(
        tmp, "[code_mode]\ncpu_s = 3\nwall_s = 10\nmemory_mb = 256\n"
    )
    url = f"http://127.0.0.1:{port}/mcp"
    call = {"name": "time__get_current_time", "arguments": {"timezone": "UTC"}}
    hostile = {
        "spinning script": "while True:\n    pass",
        "memory bomb": 'x = []\nwhile True:\n    x.append("a" * 1_000_000)',
    }

    async def latencies(c: Client, n: int) -> list[float]:
        out = []
        for _ in range(n):
            t = time.perf_counter()
            r = await c.call_tool("call_tool", call)
            assert not r.is_error, r.content
            out.append((time.perf_counter() - t) * 1000)
        return out

    async def main() -> dict[str, Any]:
        await wait_for_port(port, proc, 180, tmp / "gateway.log")
        rows: dict[str, Any] = {}
        with anyio.fail_after(600):
            async with Client(streamable_http_client(url)) as c:
                await latencies(c, 5)  # warm
                rows["alone"] = await latencies(c, runs)
                for name, code in hostile.items():
                    ended: list[str] = []

                    async def attack(code: str = code, ended: list[str] = ended) -> None:
                        async with Client(streamable_http_client(url)) as a:
                            r = await a.call_tool("execute", {"code": code})
                            ended.append((r.structured_content or {}).get("limit", "?"))

                    async with anyio.create_task_group() as tg:
                        tg.start_soon(attack)
                        await anyio.sleep(0.3)  # the script is running
                        rows[f"while a {name} runs"] = await latencies(c, runs)
                    rows[f"while a {name} runs"].append(ended[0])
        return rows

    try:
        rows = anyio.run(main)
    finally:
        stop(proc)
        log.close()
    out = {}
    for name, values in rows.items():
        limit = values.pop() if isinstance(values[-1], str) else None
        ms = sorted(values)
        out[name] = {
            "calls": len(ms),
            "p50_ms": round(statistics.median(ms), 2),
            "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 2),
            "max_ms": round(ms[-1], 2),
            **({"script_ended_by": limit} if limit else {}),
        }
    return out


def _report(startup: list[dict[str, Any]], probes: dict[str, dict[str, Any]], gw: Any) -> str:
    lines = [
        "# Code mode: the sandbox",
        "",
        "`python -m benchmarks.codemode_sandbox` (2-core machine; each row a fresh child "
        f"interpreter; limits {LIMIT_S:.0f} s and {MEMORY >> 20} MiB where the engine has one; "
        f"load average at the end {os.getloadavg()[0]:.1f}: other work shared the 2 cores).",
        "",
        "## Start-up and memory",
        "",
        "| engine | import ms | first script ms | script (2 host calls) ms p50 | p90 "
        "| host RSS growth MiB | worker RSS MiB |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in startup:
        if not s.get("installed"):
            lines.append(f"| {s['engine']} | {s.get('outcome', 'not installed')} | | | | | |")
            continue
        lines.append(
            f"| {s['engine']} | {s['import_ms']} | {s['first_script_ms']} | "
            f"{s['script_ms_median']} | {s['script_ms_p90']} | {s['host_rss_growth_mib']} | "
            f"{s['worker_rss_mib'] or '-'} |"
        )
    lines += ["", "## Isolation", "", "| probe | " + " | ".join(ENGINES) + " |"]
    lines.append("|---|" + "---|" * len(ENGINES))
    for probe, by_engine in probes.items():
        cells = [f"{by_engine[e]['outcome']} ({by_engine[e]['seconds']} s)" for e in ENGINES]
        lines.append(f"| {probe} | " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    if gw:
        lines += [
            "",
            "## The gateway under hostile scripts",
            "",
            "Another client's `call_tool` (time server) through `toolroute serve --transport "
            "http`, sequential calls:",
            "",
            "| while | calls | p50 ms | p95 ms | max ms | the script ended by |",
            "|---|---|---|---|---|---|",
        ]
        for name, r in gw.items():
            lines.append(
                f"| {name} | {r['calls']} | {r['p50_ms']} | {r['p95_ms']} | {r['max_ms']} | "
                f"{r.get('script_ended_by', '')} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--skip-gateway", action="store_true")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks/results/codemode_sandbox.md")
    ap.add_argument("--json", type=Path, default=REPO / "benchmarks/results/codemode_sandbox.json")
    ap.add_argument("--startup", help=argparse.SUPPRESS)
    ap.add_argument("--probe", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.startup:
        print(json.dumps(_startup(a.startup, a.runs)))
        return
    if a.probe:
        print(json.dumps(_probe(*a.probe)))
        return
    startup = [_child(["--startup", e, "--runs", str(a.runs)], 300) for e in ENGINES]
    for e, s in zip(ENGINES, startup, strict=True):
        s.setdefault("engine", e)
        s.setdefault("installed", False)  # the child ended without figures: its outcome says
    probes = {p: {e: _child(["--probe", e, p]) for e in ENGINES} for p in PROBES}
    gw = None if a.skip_gateway else _gateway(a.runs)
    report = _report(startup, probes, gw)
    a.out.write_text(report)
    a.json.write_text(json.dumps({"startup": startup, "probes": probes, "gateway": gw}, indent=1))
    print(report)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
