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
- ``result_bytes``, ``result_depth``: the script's value is written as JSON **in the worker**
  (:mod:`toolroute.codemode._writer`, fed to the worker before the script), counted as it is
  written and stopped at the first piece past either limit, so a structure shared many times
  over (``x = [x, x]`` twenty times, ``[s] * 20000``) is never expanded beyond ``result_bytes``;
  only that text, at most ``result_bytes``, crosses to the gateway. The arguments of each
  ``call_tool`` are written the same way, under the gateway's argument limits, and cross as
  text the gateway reads back.
- ``concurrent``, ``per_client``, ``queue_s``: slots shared fairly between clients
  (:mod:`toolroute.codemode.slots`); the time a script waits for one is not part of its
  ``wall_s``.
- The worker runs at a lower CPU priority (nice 10) than the gateway.
- ``message_chars``: the script runs as the body of a ``with`` whose guard, in the worker,
  cuts an uncaught error's message to its first :data:`MESSAGE_CHARS` characters before it
  crosses (the traceback then shows the script's failing top-level line, not the frames below
  it), and ``call_tool`` refuses a name longer than :data:`NAME_CHARS` there.
- The names the gateway gives the worker (the host call, the writer's finish, the guard) end in
  a secret drawn per script, and the function that made them is gone before the script runs:
  a script can neither call the host nor replace how its value is written.
- ``print`` output is collected (its first :data:`PRINT_CHARS` characters), never written to
  the gateway's stdout, which carries MCP over stdio.
"""

from __future__ import annotations

import ast
import atexit
import contextlib
import io
import json
import logging
import os
import re
import secrets
import time
import tokenize
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
import pydantic_monty as monty

from toolroute.codemode import _writer
from toolroute.codemode.limits import CodeModeLimits, LimitName
from toolroute.codemode.slots import FairSlots
from toolroute.gateway.calls import MAX_ARGUMENT_BYTES, MAX_ARGUMENT_DEPTH

__all__ = [
    "MESSAGE_CHARS",
    "NAME_CHARS",
    "PRINT_CHARS",
    "Sandbox",
    "ScriptEnd",
    "guarded",
    "limit_message",
    "with_value_assigned",
]

log = logging.getLogger(__name__)

PRINT_CHARS = 4000
"""print() output kept per script; the rest is dropped (the count says how much)."""
WORKER_NICE = 10
"""Niceness of a script's worker process (the gateway keeps its own)."""
DISPLAY_CHARS = 2000
"""Longest error message (traceback) passed back to the agent."""
MESSAGE_CHARS = 1000
"""Longest message of a script's uncaught error that leaves the worker (the limit
``message_chars``); a longer one is cut there, saying how long it was."""
NAME_CHARS = 1000
"""Longest tool name a script's ``call_tool`` hands the gateway (no tool's name is near it); a
longer one raises in the worker."""

CallTool = Callable[[str, dict[str, Any]], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class ScriptEnd:
    """How a script ended: its value as JSON text (written in the worker), or an error (and
    the limit it hit, if one did)."""

    value: str | None
    calls: int
    printed: str
    error: str | None = None
    limit: LimitName | None = None
    kind: Literal["ok", "syntax", "runtime", "limit", "crashed"] = "ok"
    is_text: bool = False
    """The value was a string (``value`` is its JSON): paged as itself, its lines readable."""


VALUE = "_toolroute_value"
"""The global a script's last expression is assigned to, for the worker to write."""
HOST_CALL = "_toolroute_call"
"""Prefix of the host function ``call_tool`` in the worker calls with its arguments' JSON."""
FINISH = "_toolroute_finish"
"""Prefix of the worker's function writing the script's value."""
GUARD = "_toolroute_guard"
"""Prefix of the ``with`` guard the script runs under."""
_WRITER_SOURCE = Path(_writer.__file__).read_text(encoding="utf-8")
_REFUSED_ARGUMENTS = {
    "bytes": f"`arguments` are larger than {MAX_ARGUMENT_BYTES} bytes of JSON",
    "depth": f"`arguments` are nested deeper than {MAX_ARGUMENT_DEPTH} levels",
    "digits": f"`arguments` hold an integer longer than {_writer.INT_DIGITS} digits",
    "type": "`arguments` must be plain JSON",
}
_ERRORS = [
    "ArithmeticError", "AssertionError", "AttributeError", "FileExistsError",
    "FileNotFoundError", "ImportError", "IndexError", "IsADirectoryError", "KeyError",
    "LookupError", "ModuleNotFoundError", "NameError", "NotADirectoryError",
    "NotImplementedError", "OSError", "OverflowError", "PermissionError", "RuntimeError",
    "StopIteration", "TypeError", "UnboundLocalError", "UnicodeDecodeError",
    "UnicodeEncodeError", "ValueError", "ZeroDivisionError",
]  # fmt: skip
"""The errors a cut message is raised again as (any other as RuntimeError, named)."""
_MESSAGE_MARK = "; message_chars = "
"""What the worker's cut message says, read back by the gateway as the limit."""
_PRELUDE = """
def _toolroute_seal(write):
    isinst = isinstance
    length = len
    t_str = str
    t_dict = dict
    kind_of = type
    refused_as = REFUSED
    errors = ERRORS
    t_runtime = RuntimeError

    async def call_tool(name=None, arguments=None):
        if not isinst(name, t_str):
            raise TypeError("call_tool(name, arguments): name is a string from find_tools")
        if length(name) > NAME_CHARS:
            raise ValueError("call_tool(name, ...): no tool has a name over NAME_CHARS characters")
        if arguments is None:
            arguments = {}
        if not isinst(arguments, t_dict):
            raise TypeError("call_tool(" + repr(name) + ", arguments): arguments must be a dict")
        text, refused, size = write(arguments, ARGUMENT_BYTES, ARGUMENT_DEPTH, True, True)
        if text is None:
            raise RuntimeError(name + ": " + refused_as[refused])
        return await HOST_CALL(name, text)

    def finish(value):
        text, refused, size = write(value, VALUE_BYTES, VALUE_DEPTH, False, True)
        return text, refused, size, isinst(value, t_str)

    class Guard:
        def __enter__(self):
            return self

        def __exit__(self, kind, error, trace):
            if error is None:
                return False
            shown = t_str(error)
            if length(shown) <= MESSAGE_CHARS:
                return False
            cut = shown[:MESSAGE_CHARS] + "… (truncated, " + t_str(length(shown))
            cut = cut + " characters" + MARK + t_str(MESSAGE_CHARS) + ")"
            name = kind_of(error).__name__
            make = errors.get(name)
            if make is None:
                raise t_runtime(name + ": " + cut)
            raise make(cut)

    return call_tool, finish, Guard()


call_tool, FINISH, GUARD = _toolroute_seal(bounded_writer())
_toolroute_seal = None
VALUE = None
"""
_VALUE_LIMITS: dict[str, LimitName] = {
    "bytes": "result_bytes",
    "depth": "result_depth",
    "digits": "int_digits",
}


def _prelude(lim: CodeModeLimits, secret: str) -> str:
    """What the worker runs before the script: the writer, ``call_tool`` writing its
    arguments as JSON, ``FINISH`` writing the value and ``GUARD`` bounding an error's message
    (all three holding the writer and the builtins in a closure, so a script that rebinds
    names cannot change how its values are bounded), each named with ``secret``; the
    function that made them is then dropped, so the script cannot make others."""
    refused = {
        k: json.dumps({"error": "invalid_arguments", "message": v})
        for k, v in _REFUSED_ARGUMENTS.items()
    }
    errors = "{" + ", ".join(f"{name!r}: {name}" for name in _ERRORS) + "}"
    seal = (
        _PRELUDE.replace("REFUSED", repr(refused))
        .replace("ERRORS", errors)
        .replace("MARK", repr(_MESSAGE_MARK))
        .replace("MESSAGE_CHARS", str(MESSAGE_CHARS))
        .replace("NAME_CHARS", str(NAME_CHARS))
        .replace("ARGUMENT_BYTES", str(MAX_ARGUMENT_BYTES))
        .replace("ARGUMENT_DEPTH", str(MAX_ARGUMENT_DEPTH))
        .replace("VALUE_BYTES", str(lim.result_bytes))
        .replace("VALUE_DEPTH", str(lim.result_depth))
        .replace("HOST_CALL", f"{HOST_CALL}_{secret}")
        .replace("FINISH", f"{FINISH}_{secret}")
        .replace("GUARD", f"{GUARD}_{secret}")
        .replace("VALUE", VALUE)
    )
    return _WRITER_SOURCE + seal


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
    """Runs scripts under :class:`CodeModeLimits`: ``concurrent`` at once, ``per_client`` of
    them one client's."""

    def __init__(self, limits: CodeModeLimits) -> None:
        self.limits = limits
        self._slots = FairSlots(limits.concurrent, limits.per_client)

    async def run(self, code: str, call_tool: CallTool, client: Hashable = "") -> ScriptEnd:
        """Run ``code`` for ``client``; ``await call_tool(name, arguments)`` inside it calls
        ``call_tool``. The wait for a slot is bounded by ``queue_s``, the script from the
        moment it has one by ``wall_s``."""
        lim = self.limits
        with anyio.move_on_after(lim.queue_s) as queued:
            await self._slots.acquire(client)
        if queued.cancelled_caught:
            return ScriptEnd(None, 0, "", limit_message("queue_s", lim), "queue_s", "limit")
        try:
            return await self._run(code, call_tool)
        finally:
            self._slots.release(client)

    async def _run(self, code: str, call_tool: CallTool) -> ScriptEnd:
        lim = self.limits
        printed = _Printed()
        calls = 0
        hit: list[LimitName] = []
        out: Any = None
        with anyio.CancelScope() as scope:
            scope.deadline = anyio.current_time() + lim.wall_s

            async def host_call(name: Any = None, text: Any = None) -> Any:
                nonlocal calls
                if not isinstance(name, str) or not isinstance(text, str):
                    raise TypeError("call_tool(name, arguments): name is a string from find_tools")
                if len(text) > MAX_ARGUMENT_BYTES:
                    raise ValueError(_REFUSED_ARGUMENTS["bytes"])
                try:
                    arguments = json.loads(text)
                except (ValueError, RecursionError):
                    raise TypeError(
                        f"call_tool({name!r}, arguments): arguments must be a dict"
                    ) from None
                if not isinstance(arguments, dict):
                    raise TypeError(f"call_tool({name!r}, arguments): arguments must be a dict")
                calls += 1
                if calls > lim.max_calls:
                    hit.append("max_calls")
                    scope.cancel()
                    raise RuntimeError(f"more than {lim.max_calls} tool calls")
                return await call_tool(name, arguments)

            try:
                try:
                    out = await self._feed(code, host_call, printed)
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
        return self._ended(out, calls, printed.text())

    def _ended(self, out: Any, calls: int, printed: str) -> ScriptEnd:
        """The script's end from what the worker's writer handed back: ``(text, refused,
        size, is_text)``. Checked again here all the same (the writer is sealed in the worker,
        out of the script's reach), reading no more than ``result_bytes`` of it."""
        lim = self.limits
        if not (isinstance(out, tuple | list) and len(out) == 4):
            message = f"the script replaced {VALUE} or the gateway's writer; return a value instead"
            return ScriptEnd(None, calls, printed, message, kind="runtime")
        text, refused, _, is_text = out
        if refused is not None or not isinstance(text, str):
            limit = (
                _VALUE_LIMITS.get(refused, "result_bytes")
                if isinstance(refused, str)
                else "result_bytes"
            )
            return ScriptEnd(None, calls, printed, limit_message(limit, lim), limit, "limit")
        if len(text) > lim.result_bytes or len(text.encode()) > lim.result_bytes:
            message = limit_message("result_bytes", lim)
            return ScriptEnd(None, calls, printed, message, "result_bytes", "limit")
        return ScriptEnd(text, calls, printed, is_text=is_text is True)

    async def _feed(self, code: str, host_call: Any, printed: _Printed) -> Any:
        """The prelude, the script (under the guard) with its last expression assigned to
        :data:`VALUE`, then the value written as JSON: three feeds of one worker session."""
        lim = self.limits
        limits: monty.ResourceLimits = {
            "max_feed_duration_secs": lim.cpu_s,
            "max_memory": lim.memory_mb * 1024 * 1024,
            "max_recursion_depth": lim.recursion,
            "max_suspensions": lim.max_calls + 20,
        }
        secret = secrets.token_hex(16)  # the script cannot name what it cannot guess
        lookup = {f"{HOST_CALL}_{secret}": host_call}
        guard = f"{GUARD}_{secret}"
        code = code.replace("\r\n", "\n").replace("\r", "\n")  # as Python reads source
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
            await session.feed_run(_prelude(lim, secret), print_callback=printed)
            # a script ends on a statement, so no value of the script itself crosses
            plain = code + "\npass"
            assigned = with_value_assigned(code)
            try:
                await session.feed_run(
                    guarded(assigned or plain, guard),
                    external_lookup=lookup,
                    print_callback=printed,
                )
            except monty.MontySyntaxError:
                if assigned is None:
                    raise
                # the last statement only looked like an expression: nothing ran, run as is
                await session.feed_run(
                    guarded(plain, guard), external_lookup=lookup, print_callback=printed
                )
            return await session.feed_run(f"{FINISH}_{secret}({VALUE})", print_callback=printed)


_COMPOUND = {"if", "for", "while", "with", "try", "def", "class", "async", "elif", "else",
             "except", "finally", "match", "case", "@"}  # fmt: skip
_STATEMENT = {"pass", "return", "import", "from", "del", "global", "nonlocal", "raise", "assert",
              "break", "continue"}  # fmt: skip
_ASSIGNING = {"=", "+=", "-=", "*=", "/=", "//=", "%=", "**=", ">>=", "<<=", "&=", "^=", "|=",
              "@=", ":"}  # fmt: skip


def with_value_assigned(code: str) -> str | None:
    """``code`` with its last statement, when it is an expression, assigned to :data:`VALUE`
    (on the same line, so tracebacks keep their line numbers); None when the last statement is
    no expression or the code cannot be read (the script then runs as it is and returns
    None). Read with the tokenizer, not the parser, so syntax newer than this Python's still
    reads."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    skip = {tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    last: list[tokenize.TokenInfo] = []
    line: list[tokenize.TokenInfo] = []
    for tok in tokens:
        if tok.type == tokenize.NEWLINE:
            last, line = (line, []) if line else (last, line)
        elif tok.type not in skip:
            line.append(tok)
    last = line or last
    if not last or last[0].start[1] != 0 or last[0].string in _COMPOUND:
        return None  # inside a block, or a compound statement: no value
    depth, start = 0, 0
    for i, tok in enumerate(last):  # the statement after the line's last top-level `;`
        if tok.type == tokenize.OP:
            depth += (tok.string in "([{") - (tok.string in ")]}")
            if depth == 0 and tok.string == ";":
                start = i + 1
    statement = last[start:]
    if not statement or statement[0].string in _STATEMENT:
        return None
    depth = 0
    for tok in statement:
        if tok.type == tokenize.NAME and tok.string == "lambda" and depth == 0:
            break  # a lambda's colon is no annotation, and nothing after it assigns
        if tok.type == tokenize.OP:
            depth += (tok.string in "([{") - (tok.string in ")]}")
            if depth == 0 and tok.string in _ASSIGNING:
                return None
    starts = [0]
    for text_line in code.split("\n"):
        starts.append(starts[-1] + len(text_line) + 1)
    begin = starts[statement[0].start[0] - 1] + statement[0].start[1]
    end = starts[statement[-1].end[0] - 1] + statement[-1].end[1]
    return f"{code[:begin]}{VALUE} = ({code[begin:end]}\n){code[end:]}"


def guarded(code: str, guard: str) -> str:
    """``code`` as the body of ``with guard:``: each line indented one space, except a line
    that starts inside a string spanning lines (indenting it would change the string). Which
    lines those are is read with the tokenizer, and the result is then checked with the
    parser to be one ``with`` statement holding all of it; where either cannot read the code
    (syntax newer than this Python's, or none at all), every line is indented, so no line of
    a script ever runs outside the guard. Form feeds are dropped from indentation, where
    they only reset the column. The ``with`` takes a line: :func:`_display` counts it back."""
    lines = code.split("\n")
    inside = _string_lines(code)
    wrapped = _with(guard, lines, inside)
    if inside and not _one_with(wrapped):
        wrapped = _with(guard, lines, set())
    return wrapped


def _with(guard: str, lines: list[str], inside: set[int]) -> str:
    body = (line if i in inside else " " + _unfed(line) for i, line in enumerate(lines))
    return f"with {guard}:\n" + "\n".join(body)


def _unfed(line: str) -> str:
    """``line`` with its indentation's form feeds dropped (each resets the column to 0)."""
    rest = line.lstrip(" \t\f")
    lead = line[: len(line) - len(rest)]
    return lead[lead.rfind("\f") + 1 :] + rest


def _string_lines(code: str) -> set[int]:
    """The lines (0-based) that start inside a token spanning lines (a string); none when
    the tokenizer cannot read the code."""
    inside: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            inside.update(range(tok.start[0], tok.end[0]))
    except (tokenize.TokenError, SyntaxError, ValueError):
        return set()
    return inside


def _one_with(code: str) -> bool:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return len(tree.body) == 1 and isinstance(tree.body[0], ast.With)


def _lower_priority(pid: int | None) -> None:
    """A script's worker yields the CPU to the gateway and the downstream servers: a script
    spinning to its CPU limit must not slow another client's call."""
    if pid is not None and hasattr(os, "setpriority"):
        with contextlib.suppress(OSError):  # not permitted here: the limits still hold
            os.setpriority(os.PRIO_PROCESS, pid, WORKER_NICE)


_FRAME = re.compile(r'(File "<python-input-[1-9][0-9]*>", line )([0-9]+)')
"""A frame of a feed after the prelude: the script's, one line below its own."""


def _display(e: monty.MontyError) -> str:
    try:
        text = e.display() if hasattr(e, "display") else str(e)
    except Exception:  # display() of a worker that died mid-message
        text = str(e)
    text = text if len(text) <= DISPLAY_CHARS else text[: DISPLAY_CHARS - 20] + "\n[... cut]"
    # the script's lines as the agent wrote them: the guard's `with` took line 1
    return _FRAME.sub(lambda m: m[1] + str(max(1, int(m[2]) - 1)), text)


_LIMIT_MARKS: tuple[tuple[str, LimitName], ...] = (
    (_MESSAGE_MARK, "message_chars"),
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
        "result_depth": f"returned a value nested deeper than result_depth = {lim.result_depth}",
        "int_digits": "returned an integer longer than int_digits = "
        f"{_writer.INT_DIGITS} digits, which no JSON here carries (return a smaller number)",
        "queue_s": f"waited longer than queue_s = {lim.queue_s} s for a free sandbox "
        "(every slot was taken)",
        "handle_store_mb": "found the result store full (handle_store_mb = "
        f"{lim.handle_store_mb} MiB across clients) of other clients' results",
        "recursion": f"recursed deeper than recursion = {lim.recursion}",
        "message_chars": "raised an error whose message is longer than message_chars = "
        f"{MESSAGE_CHARS} characters, cut there (its start is in `detail`)",
    }[limit]
    then = {
        "queue_s": "it was not run",
        "handle_store_mb": "try again shortly",
        "message_chars": "raise a shorter one",
    }
    return f"the script {what}; {then.get(limit, 'it was ended')}"
