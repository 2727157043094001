"""What one ``tools/call`` passes through inside a live ``toolroute serve``: toolroute modules,
packages and functions, and the threads and asyncio tasks that run them.

    python -m benchmarks.call_trace [--mode auto|legacy] [--warmup 1] [--settle 1.0]
                                    [--json] [--out F]

Starts ``toolroute serve`` over stdio in front of the reference time server
(``python -m mcp_server_time``), as tests and the latency benchmarks do, driven by the official
MCP client: ``find_tools``, ``--warmup`` untraced ``call_tool`` of ``time__get_current_time``,
then the traced one. The gateway runs in a child process started as
``python -m benchmarks.call_trace --serve-traced OUT N -- serve …``: this module installs a
profile function (``sys.setprofile`` and ``threading.setprofile``, so every thread started
after it is seen; uvloop's C internals are not) and then runs ``toolroute.cli`` as the
``toolroute`` command does. Nothing in the gateway knows about it.

The window is cut at the pipes, not at any toolroute name, so it survives refactors:

- **call**: from the bytes of the Nth ``tools/call`` frame arriving on stdin
  (``StreamReaderProtocol.data_received``) to the reply with its id written to stdout
  (``StreamWriter.write``), with the request to the downstream and its answer marked on the way;
- **after**: from that reply to the next frame from the client (a ``tools/list`` sent ``--settle``
  seconds later), which is when the outcome is recorded and learnt from off the reply's path.

Counts are of distinct toolroute functions called (Python code objects), their modules, and
those modules' packages (``toolroute.gateway.calls.pipeline`` is in ``toolroute.gateway.calls``).
In the call window they count the call's own path: the tasks and threads that handled the
call's data, found by what the traced call alone carries (its ``timezone``, :data:`MARKER`): a
task that passed it through a pipe or an in-memory stream (the frame in, the request to the
server and its answer, the reply out), or a thread given it (the schema check). Other tasks
that ran toolroute code in the window (a background duty's timer that fell into it) are
listed apart, with their modules, and not counted. Prints a markdown report (``--json`` for
the raw figures); ``--out`` also writes it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import runpy
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TIME_ARGS = ["-m", "mcp_server_time", "--local-timezone", "UTC"]
TOOL = "time__get_current_time"
MARKER = "Antarctica/Troll"
"""The traced call's ``timezone``: in the frame in, the server's request and answer and the
reply out, and in nothing else the gateway handles (no tool description names it)."""
STREAM_SENDS = {"send", "send_nowait", "write"}
"""Functions that pass data on (anyio's memory streams, asyncio's ``StreamWriter``): their
``item`` or ``data`` argument is looked at."""
STREAM_RECEIVES = {"receive", "receive_nowait", "readline", "read", "readuntil", "readexactly"}
"""Functions that hand data over (memory streams, pipes): what they return is looked at."""
PHASES = ("call", "after")
END = b"call_trace: end of the window"
"""The query of the ``find_tools`` the script sends to close the window (the client itself may
send frames in between: the 2026-07-28 client re-lists tools after a call)."""


# --- in the gateway's process -------------------------------------------------------------


class _Tracer:
    """The profile function of the traced child: idle until the Nth ``tools/call`` frame, then
    records one row per Python call until the client's next frame, and writes them to ``out``."""

    def __init__(self, out: Path, nth: int, package_dir: str) -> None:
        self.out = out
        self.nth = nth
        self.package_dir = package_dir
        self.seen = 0
        self.request_id: Any = None
        self.phase: str | None = None  # None, "call", "after", "done"
        self.rows: list[tuple[str, int, str, int, str, int]] = []
        self.marks: list[tuple[str, float]] = []
        self.threads: dict[int, str] = {}
        self.tasks: dict[int, str] = {}
        self.carried: set[tuple[int, int]] = set()
        """(thread, task) of the contexts that handled the traced call's data in its window."""
        self.lock = threading.Lock()

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if self.phase == "done":
            return
        if event == "return":
            if self.phase == "call" and frame.f_code.co_name in STREAM_RECEIVES and _carries(arg):
                self.carried.add(_context())
            return
        if event != "call":
            return
        code = frame.f_code
        name = code.co_name
        if name == "data_received" and code.co_filename.endswith("asyncio/streams.py"):
            self._frame_in(frame.f_locals.get("data"))
        elif name == "write" and code.co_filename.endswith("asyncio/streams.py"):
            self._written(frame.f_locals.get("data"))
        elif name == "pipe_data_received" and code.co_filename.endswith("asyncio/subprocess.py"):
            self._answered(frame.f_locals.get("data"))
        if self.phase in PHASES:
            self._record(frame)
        if self.phase == "call":
            self._look(frame)

    def _look(self, frame: FrameType) -> None:
        """Note the context as the call's when this call passes the call's data on, or (off
        the event loop) gives it to toolroute code."""
        code, key = frame.f_code, _context()
        if key in self.carried:
            return
        if code.co_name in STREAM_SENDS:
            if _carries(frame.f_locals.get("item", frame.f_locals.get("data"))):
                self.carried.add(key)
        elif (  # off the event loop (a worker thread): the call's when given its data
            not key[1]
            and code.co_filename.startswith(self.package_dir)
            and any(_carries(v) for v in list(frame.f_locals.values()))
        ):
            self.carried.add(key)

    def _frame_in(self, data: Any) -> None:
        if not isinstance(data, bytes | bytearray):
            return
        message = _json_line(bytes(data))
        if message is None:
            return
        if self.phase is not None:
            self._mark(f"frame in: {message.get('method') or 'a response'}")
            if self.phase == "after" and END in bytes(data):  # the script's closing frame
                self.phase = "done"
                self._dump()
            return
        if message.get("method") != "tools/call" or _called(message) != "call_tool":
            return
        self.seen += 1
        if self.seen == self.nth:
            self.request_id = message.get("id")
            self.phase = "call"
            self._mark("frame in")

    def _written(self, data: Any) -> None:
        if self.phase != "call" or not isinstance(data, bytes | bytearray):
            return
        message = _json_line(bytes(data))
        if message is None:
            return
        if message.get("method") == "tools/call":
            self._mark("downstream asked")
        elif message.get("id") == self.request_id and ("result" in message or "error" in message):
            self._mark("reply out")
            self.phase = "after"

    def _answered(self, data: Any) -> None:
        if self.phase == "call" and isinstance(data, bytes | bytearray) and b'"result"' in data:
            self._mark("downstream answered")

    def _mark(self, what: str) -> None:
        self.marks.append((what, time.perf_counter()))

    def _record(self, frame: FrameType) -> None:
        code = frame.f_code
        thread, task_id = _context()
        if task_id and task_id not in self.tasks:
            task = asyncio.current_task()
            if task is not None:
                coro = task.get_coro()
                what = getattr(coro, "__qualname__", type(coro).__name__)
                self.tasks[task_id] = f"{task.get_name()} ({what})"
        if thread not in self.threads:
            self.threads[thread] = threading.current_thread().name
        with self.lock:
            self.rows.append(
                (
                    self.phase or "",
                    thread,
                    code.co_filename,
                    code.co_firstlineno,
                    code.co_qualname,
                    task_id,
                )
            )

    def _dump(self) -> None:
        payload = {
            "package_dir": self.package_dir,
            "marks": self.marks,
            "threads": {str(k): v for k, v in self.threads.items()},
            "tasks": {str(k): v for k, v in self.tasks.items()},
            "carried": sorted(self.carried),
            "rows": self.rows,
        }
        self.out.write_text(json.dumps(payload), encoding="utf-8")


def _context() -> tuple[int, int]:
    """(thread, task) running now: the task's id, 0 off the event loop or between tasks."""
    loop = asyncio._get_running_loop()
    task = asyncio.current_task(loop) if loop is not None else None
    return threading.get_ident(), id(task) if task is not None else 0


def _carries(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` holds the traced call's :data:`MARKER`: bytes or text, a message
    (the SDK's ``SessionMessage``, a pydantic model) or a small container of them."""
    if isinstance(value, bytes | bytearray):
        return MARKER.encode() in value
    if isinstance(value, str):
        return MARKER in value
    if depth > 2:
        return False
    if isinstance(value, dict) and len(value) <= 50:
        return any(_carries(v, depth + 1) for v in list(value.values()))
    if isinstance(value, tuple | list) and len(value) <= 50:
        return any(_carries(v, depth + 1) for v in value)
    if type(value).__name__ == "SessionMessage" or hasattr(value, "model_dump_json"):
        try:
            return MARKER in repr(value)
        except Exception:
            return False
    return False


def _called(message: dict[str, Any]) -> Any:
    params = message.get("params")
    return params.get("name") if isinstance(params, dict) else None


def _json_line(data: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(data.split(b"\n", 1)[0])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def serve_traced(out: Path, nth: int, argv: list[str]) -> None:
    """Run ``toolroute <argv>`` in this process under the tracer (the child's entry)."""
    import toolroute

    tracer = _Tracer(out, nth, str(Path(toolroute.__file__).parent))
    threading.setprofile(tracer)
    sys.setprofile(tracer)
    sys.argv = ["toolroute", *argv]
    runpy.run_module("toolroute.cli", run_name="__main__", alter_sys=True)


# --- in the script's process --------------------------------------------------------------


def summarise(trace: dict[str, Any]) -> dict[str, Any]:
    """Modules, packages, functions, threads and tasks per phase, from the child's rows: the
    call window's of the contexts that handled the call's data, the others' apart."""
    root = trace["package_dir"] + os.sep
    out: dict[str, Any] = {"marks": _mark_offsets(trace["marks"])}
    carried = {(thread, task) for thread, task in trace["carried"]}
    for phase in (*PHASES, "others"):
        rows = [r for r in trace["rows"] if r[0] == ("call" if phase == "others" else phase)]
        if phase != "after":  # the call's own path, and the other tasks in its window
            rows = [r for r in rows if ((r[1], r[5]) in carried) == (phase == "call")]
        ours = [r for r in rows if r[2].startswith(root)]
        by_context: dict[str, set[str]] = {}
        for r in ours:
            task = trace["tasks"].get(str(r[5]), "no task: a loop or thread callback")
            context = f"{task} [{trace['threads'][str(r[1])]}]"
            by_context.setdefault(context, set()).add(f"{_module(root, r[2])}:{r[4]}")
        functions = {f for fs in by_context.values() for f in fs}
        modules = sorted({f.split(":", 1)[0] for f in functions})
        out[phase] = {
            "modules": modules,
            "packages": sorted({_package(m, root) for m in modules}),
            "functions": sorted(functions),
            "calls": len(ours),
            "threads": sorted({trace["threads"][str(r[1])] for r in ours}),
            "contexts": {k: sorted(v) for k, v in sorted(by_context.items())},
            "other_calls": dict(
                Counter(_top_package(r[2]) for r in rows if not r[2].startswith(root)).most_common()
            ),
        }
    return out


def _mark_offsets(marks: list[tuple[str, float]]) -> list[tuple[str, float]]:
    start = marks[0][1] if marks else 0.0
    return [(what, round((t - start) * 1000, 2)) for what, t in marks]


def _module(root: str, filename: str) -> str:
    """``toolroute.gateway.calls.pipeline`` for ``…/toolroute/gateway/calls/pipeline.py``."""
    rel = Path(filename).relative_to(Path(root).parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package(module: str, root: str) -> str:
    """The package a module is in (a package's ``__init__`` is in the package itself)."""
    init = Path(root, *module.split(".")[1:], "__init__.py")
    return module if init.is_file() else module.rsplit(".", 1)[0]


def _top_package(filename: str) -> str:
    """The top-level package (or stdlib module) a file belongs to, for the non-toolroute calls."""
    parts = Path(filename).parts
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            return parts[parts.index(marker) + 1].removesuffix(".py")
    if filename.startswith("<"):
        return filename
    return "stdlib:" + Path(filename).stem if "python3" in filename else filename


async def drive(args: argparse.Namespace, tmp: Path) -> None:
    """find_tools, the warm-up calls, the traced call, then ``tools/list`` ``settle`` s later."""
    import anyio
    from mcp import Client, StdioServerParameters

    config = tmp / "servers.json"
    config.write_text(
        json.dumps({"mcpServers": {"time": {"command": sys.executable, "args": TIME_ARGS}}})
    )
    serve = ["serve", "--config", str(config), "--store", str(tmp / "store")]
    child = ["-m", "benchmarks.call_trace", "--serve-traced", str(tmp / "trace.json")]
    params = StdioServerParameters(
        command=sys.executable,
        args=[*child, str(args.warmup + 1), "--", *serve],
        cwd=str(REPO),
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])},
    )
    call = {"name": TOOL, "arguments": {"timezone": MARKER}}
    with anyio.fail_after(args.timeout):
        async with Client(params, mode=args.mode) as c:  # type: ignore[arg-type]
            found = await c.call_tool("find_tools", {"query": "what time is it in Tokyo"})
            names = [x["name"] for x in (found.structured_content or {}).get("candidates", [])]
            if TOOL not in names:
                raise SystemExit(f"find_tools did not return {TOOL}: {names}")
            for n in range(args.warmup + 1):
                if n == args.warmup:  # what the warm-up set off ends before the traced call
                    await anyio.sleep(args.settle)
                result = await c.call_tool("call_tool", call)
                if result.is_error:
                    raise SystemExit(f"call_tool failed: {result.content}")
            await anyio.sleep(args.settle)  # what is recorded after the reply, off its path
            await c.call_tool("find_tools", {"query": END.decode()})  # closes the window
            for _ in range(100):  # the child writes the trace on that frame
                if (tmp / "trace.json").exists():
                    break
                await anyio.sleep(0.05)


def render(s: dict[str, Any], args: argparse.Namespace) -> str:
    call, after, others = s["call"], s["after"], s["others"]
    lines = [
        f"One `tools/call` of `call_tool` → `{TOOL}` through `toolroute serve` (stdio, client "
        f"mode {args.mode}; {args.warmup} untraced call(s) first, then {args.settle} s quiet), "
        "traced in the gateway's process by `python -m benchmarks.call_trace`. The call's path "
        "counts the tasks and threads that handled its data (its frame in, the server's request "
        "and answer, the reply out, the schema check); other tasks that ran in its window are "
        "listed apart, not counted.",
        "",
        "| window | toolroute modules | packages | functions | calls | threads | tasks |",
        "|---|---|---|---|---|---|---|",
    ]
    windows = (
        ("frame in → reply out: the call's path", call),
        ("frame in → reply out: other tasks", others),
        (f"after the reply ({args.settle} s)", after),
    )
    for name, p in windows:
        lines.append(
            f"| {name} | {len(p['modules'])} | {len(p['packages'])} | {len(p['functions'])} "
            f"| {p['calls']} | {len(p['threads'])} | {len(p['contexts'])} |"
        )
    marks = ", ".join(f"{w} +{ms} ms" for w, ms in s["marks"])
    lines += ["", f"Marks (traced, so slower than served): {marks}.", ""]
    for name, p in windows:
        if not p["contexts"]:
            lines += [f"## {name}", "", "None ran toolroute code.", ""]
            continue
        lines += [f"## {name}", "", "Packages: " + ", ".join(f"`{x}`" for x in p["packages"])]
        lines += ["", "Tasks [thread] that ran toolroute code, with its modules:", ""]
        for context, fns in p["contexts"].items():
            mods = sorted({f.split(":", 1)[0].removeprefix("toolroute.") for f in fns})
            lines.append(f"- {context}: {len(fns)} functions in " + ", ".join(mods))
        lines += ["", "Modules and their functions:", ""]
        for module in p["modules"]:
            fns = [f.split(":", 1)[1] for f in p["functions"] if f.split(":", 1)[0] == module]
            lines.append(f"- `{module}` ({len(fns)}): " + ", ".join(fns))
        others = ", ".join(f"{k} {v}" for k, v in list(p["other_calls"].items())[:12])
        lines += ["", f"Calls outside toolroute, by package (top 12): {others}", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--serve-traced"]:
        out, nth, sep, *rest = argv[1:]
        if sep != "--":
            raise SystemExit("usage: --serve-traced OUT N -- serve …")
        serve_traced(Path(out), int(nth), rest)
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=["auto", "legacy"], default="auto", help="client mode")
    ap.add_argument("--warmup", type=int, default=1, help="untraced call_tool calls first")
    ap.add_argument("--settle", type=float, default=1.0, help="seconds after the reply traced")
    ap.add_argument("--timeout", type=float, default=300.0, help="bound on the whole run (s)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--out", type=Path, help="also write the report here")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        import anyio

        anyio.run(drive, args, Path(tmp))
        trace_file = Path(tmp) / "trace.json"
        if not trace_file.exists():
            raise SystemExit("the gateway wrote no trace: was the tools/call frame seen?")
        summary = summarise(json.loads(trace_file.read_text(encoding="utf-8")))
    text = json.dumps(summary, indent=1) if args.json else render(summary, args)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
