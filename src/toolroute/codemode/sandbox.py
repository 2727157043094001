"""One script in a sandbox: pydantic-monty (a Python subset interpreted in Rust) in a fresh
worker process per script.

Why Monty (the comparison, with measurements, is in docs/code-mode.md and
benchmarks/codemode_sandbox.py): the agent writes Python, the language it writes best; the
interpreter has no file system, network, environment, subprocess or ``__import__`` at all (not
removed from CPython: never implemented), only a few pure modules; the host answers each
external call, so a tool call can be awaited on the gateway's event loop; and every script runs
in its own ``monty`` process, which the limits below end without touching the gateway.

- ``cpu_s``, ``memory_mb``, ``recursion``: enforced inside the worker (its execution clock runs
  only while the script executes, not while a tool call is awaited); the pool kills a worker
  that does not stop by itself a second after.
- ``wall_s``: a cancel scope around the whole script, tool calls included; cancelling kills
  the worker.
- ``max_calls``: counted here, the script is cancelled on the call past it; Monty's own bound
  on host round trips backs it up.
- ``result_bytes``: the script's value, measured as JSON after it returned.
- The worker runs at a lower CPU priority (nice 10) than the gateway.
- ``print`` output is collected (its first :data:`PRINT_CHARS` characters), never written to
  the gateway's stdout, which carries MCP over stdio.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import math
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import pydantic_monty as monty

from toolroute.codemode.limits import CodeModeLimits, LimitName

__all__ = ["PRINT_CHARS", "Sandbox", "limit_message", "ScriptEnd", "jsonable"]

log = logging.getLogger(__name__)

PRINT_CHARS = 4000
"""print() output kept per script; the rest is dropped (the count says how much)."""
WORKER_NICE = 10
"""Niceness of a script's worker process (the gateway keeps its own)."""
DISPLAY_CHARS = 2000
"""Longest error message (traceback) passed back to the agent."""

CallTool = Callable[[str, dict[str, Any]], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class ScriptEnd:
    """How a script ended: its value, or an error (and the limit it hit, if one did)."""

    value: Any
    calls: int
    printed: str
    error: str | None = None
    limit: LimitName | None = None
    kind: Literal["ok", "syntax", "runtime", "limit", "crashed"] = "ok"


SETTLE_S = 0.5
"""How long after the last script's worker closed the interpreter waits before exiting: the
pool's own threads touching Python during finalization can abort the process (SIGABRT) in
that window (measured on pydantic-monty 1.4)."""
_last_closed = [-SETTLE_S]


@atexit.register
def _settle() -> None:
    wait = SETTLE_S - (time.monotonic() - _last_closed[0])
    if wait > 0:
        time.sleep(wait)


class _Printed:
    """The script's print() output, bounded."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.kept = 0
        self.dropped = 0

    def __call__(self, stream: str, text: str) -> None:
        room = PRINT_CHARS - self.kept
        if room > 0:
            self.parts.append(text[:room])
            self.kept += min(room, len(text))
        self.dropped += max(0, len(text) - max(room, 0))

    def text(self) -> str:
        out = "".join(self.parts)
        return out + (f"\n[{self.dropped} more characters dropped]" if self.dropped else "")


class Sandbox:
    """Runs scripts under :class:`CodeModeLimits`, at most ``concurrent`` at once."""

    def __init__(self, limits: CodeModeLimits) -> None:
        self.limits = limits
        self._slots = anyio.CapacityLimiter(limits.concurrent)

    async def run(self, code: str, call_tool: CallTool) -> ScriptEnd:
        """Run ``code``; ``await call_tool(name, arguments)`` inside it calls ``call_tool``."""
        lim = self.limits
        printed = _Printed()
        calls = 0
        hit: list[LimitName] = []
        value: Any = None
        with anyio.CancelScope() as scope:
            scope.deadline = anyio.current_time() + lim.wall_s

            async def external_call_tool(name: Any = None, arguments: Any = None) -> Any:
                nonlocal calls
                if not isinstance(name, str):
                    raise TypeError("call_tool(name, arguments): name is a string from find_tools")
                arguments = {} if arguments is None else arguments
                if not isinstance(arguments, dict):
                    raise TypeError(f"call_tool({name!r}, arguments): arguments must be a dict")
                calls += 1
                if calls > lim.max_calls:
                    hit.append("max_calls")
                    scope.cancel()
                    raise RuntimeError(f"more than {lim.max_calls} tool calls")
                return await call_tool(name, arguments)

            try:
                async with self._slots:
                    try:
                        value = await self._feed(code, external_call_tool, printed)
                    finally:
                        _last_closed[0] = time.monotonic()
            except monty.MontySyntaxError as e:
                return ScriptEnd(None, calls, printed.text(), _display(e), kind="syntax")
            except monty.MontyRuntimeError as e:
                text = _display(e)
                limit = _limit_of(text)
                kind: Literal["runtime", "limit"] = "limit" if limit else "runtime"
                return ScriptEnd(None, calls, printed.text(), text, limit, kind)
            except monty.MontyCrashedError as e:
                text = _display(e)
                limit = "cpu_s" if getattr(e, "timed_out", False) else _limit_of(text)
                kind2: Literal["crashed", "limit"] = "limit" if limit else "crashed"
                return ScriptEnd(None, calls, printed.text(), text, limit, kind2)
            except monty.MontyError as e:  # any other failure of the worker
                log.warning("code mode: the sandbox failed: %s", e)
                return ScriptEnd(None, calls, printed.text(), _display(e), kind="crashed")
        if scope.cancelled_caught:
            limit = hit[0] if hit else "wall_s"
            return ScriptEnd(None, calls, printed.text(), limit_message(limit, lim), limit, "limit")
        return ScriptEnd(value, calls, printed.text())

    async def _feed(self, code: str, call_tool: Any, printed: _Printed) -> Any:
        lim = self.limits
        limits: monty.ResourceLimits = {
            "max_feed_duration_secs": lim.cpu_s,
            "max_memory": lim.memory_mb * 1024 * 1024,
            "max_recursion_depth": lim.recursion,
            "max_suspensions": lim.max_calls + 20,
        }
        # one worker process per script: nothing of one script (or client) reaches the next
        async with (
            monty.AsyncMonty(
                min_processes=1, max_processes=1, request_timeout=lim.wall_s + 5
            ) as pool,
            pool.checkout(
                script_name="script.py", limits=limits, os_policy={"sleep": "zero"}
            ) as session,
        ):
            _lower_priority(session.worker_pid)
            return await session.feed_run(
                code, external_lookup={"call_tool": call_tool}, print_callback=printed
            )


def _lower_priority(pid: int | None) -> None:
    """A script's worker yields the CPU to the gateway and the downstream servers: a script
    spinning to its CPU limit must not slow another client's call."""
    if pid is not None and hasattr(os, "setpriority"):
        with contextlib.suppress(OSError):  # not permitted here: the limits still hold
            os.setpriority(os.PRIO_PROCESS, pid, WORKER_NICE)


def _display(e: monty.MontyError) -> str:
    try:
        text = e.display() if hasattr(e, "display") else str(e)
    except Exception:  # display() of a worker that died mid-message
        text = str(e)
    return text if len(text) <= DISPLAY_CHARS else text[: DISPLAY_CHARS - 20] + "\n[... cut]"


_LIMIT_MARKS: tuple[tuple[str, LimitName], ...] = (
    ("time limit exceeded", "cpu_s"),
    ("memory limit", "memory_mb"),
    ("MemoryError", "memory_mb"),
    ("RecursionError", "recursion"),
    ("recursion depth", "recursion"),
    ("suspension limit", "max_calls"),
)


def _limit_of(text: str) -> LimitName | None:
    for mark, limit in _LIMIT_MARKS:
        if mark in text:
            return limit
    return None


def limit_message(limit: LimitName, lim: CodeModeLimits) -> str:
    """The message of a script ended by ``limit`` (the setting names it)."""
    what = {
        "wall_s": f"ran longer than wall_s = {lim.wall_s} s (tool calls included)",
        "cpu_s": f"executed longer than cpu_s = {lim.cpu_s} s",
        "memory_mb": f"used more than memory_mb = {lim.memory_mb} MiB",
        "max_calls": f"made more than max_calls = {lim.max_calls} tool calls",
        "result_bytes": f"returned more than result_bytes = {lim.result_bytes} bytes of JSON",
        "recursion": f"recursed deeper than recursion = {lim.recursion}",
    }[limit]
    return f"the script {what}; it was ended"


def jsonable(value: Any, depth: int = 0) -> Any:
    """A script's value as JSON data (tuples and sets as lists, other objects by repr)."""
    if depth > 100:
        return "..."
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, dict):
        return {str(k): jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v, depth + 1) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return repr(value)
