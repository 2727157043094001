"""A stdio transport for downstream servers, bounded where the SDK's is not.

The SDK's ``stdio_client`` reads a server's stdout into one growing string until a newline (a
100 MB result is 100 MB in our memory, built by repeated concatenation) and hands the child
our own stderr, so a server's error lines mix unlabelled into toolroute's. This transport is
the same process handling (the SDK's spawn and its close-stdin / terminate / kill shutdown)
with three differences:

- a stdout line longer than ``max_line_bytes`` is never held: its head and tail are kept to
  find the request it answers, the rest is discarded as it arrives, and that request gets a
  JSON-RPC error (``RESULT_TOO_LARGE``) at once instead of the payload;
- every stderr line is logged under the server's name and the last few are kept
  (:attr:`ProcessInfo.stderr_tail`) to say why a server exited;
- the exit code is kept (:attr:`ProcessInfo.returncode`).

Lines that are not JSON-RPC (garbage, half frames) are logged once per server state and
dropped; the session never sees them.
"""

from __future__ import annotations

import collections
import logging
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import mcp.types as types
from anyio.abc import Process
from mcp import StdioServerParameters
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

from toolroute.downstream.deep import without_deep_tools
from toolroute.sdk import stop_server_process

__all__ = ["RESULT_TOO_LARGE", "ProcessInfo", "bounded_stdio_client"]

log = logging.getLogger("toolroute.downstream")

RESULT_TOO_LARGE = -32099
"""JSON-RPC error code this transport answers with when a reply exceeds the size cap."""

_EDGE = 4096
"""Bytes kept at each end of an oversized line: enough for its ``"id"`` wherever the server
serialised it (Python SDK servers write it first, TypeScript ones last)."""
_ID = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,20})')


@dataclass(slots=True)
class ProcessInfo:
    """What the transport learnt about the child process (read after it ends)."""

    pid: int | None = None
    returncode: int | None = None
    stderr_tail: collections.deque[str] = field(default_factory=lambda: collections.deque(maxlen=5))
    oversized: int = 0
    """Replies refused for exceeding the size cap."""
    garbage: int = 0
    """stdout lines that were not JSON-RPC messages."""
    on_eof: Callable[[], None] | None = None
    """Called when the server's stdout ends (it exited or closed it), even while idle."""

    def exited(self) -> str | None:
        """``exited with code N: <its last stderr line>`` once the process has ended."""
        if self.returncode is None:
            return None
        tail = self.stderr_tail
        return f"exited with code {self.returncode}" + (f": {tail[-1]}" if tail else "")


@asynccontextmanager
async def bounded_stdio_client(
    name: str,
    params: StdioServerParameters,
    *,
    max_line_bytes: int,
    info: ProcessInfo | None = None,
) -> AsyncIterator[Any]:
    """Spawn ``params`` and yield the (read, write) streams an ``mcp.Client`` speaks over."""
    info = info if info is not None else ProcessInfo()
    try:
        process: Process = await anyio.open_process(
            [params.command, *params.args],
            env=get_default_environment() | (params.env or {}),
            cwd=params.cwd,
            start_new_session=True,  # its own process group: shutdown kills the whole tree
        )
    except (FileNotFoundError, PermissionError) as e:
        # uvloop (serve) raises these without the file name the stdlib loop (sync) gives:
        # name the binary, or the working directory when that is what is missing
        if params.cwd is not None and not Path(params.cwd).is_dir():
            raise NotADirectoryError(
                e.errno, "no such working directory", str(params.cwd)
            ) from None
        if e.filename is None:
            raise type(e)(e.errno, e.strerror, str(params.command)) from None
        raise
    info.pid = process.pid
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    pending: set[types.RequestId] = set()

    async def deliver(line: bytes) -> None:
        try:
            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError:
            saved = without_deep_tools(name, line)  # a listing with a too-deep tool in it
            if saved is not None:
                await deliver_message(saved)
                return
            info.garbage += 1
            if info.garbage == 1:
                log.warning("[%s] ignoring stdout that is not JSON-RPC: %.120r", name, line)
            return
        await deliver_message(message)

    async def deliver_message(message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            pending.discard(message.id)
        await read_writer.send(SessionMessage(message))

    async def refuse(size: int, head: bytes, tail: bytes) -> None:
        info.oversized += 1
        found = [m.group(1) for m in (*_ID.finditer(head), *_ID.finditer(tail))]
        ids = [i for raw in found if (i := _request_id(raw)) in pending]
        if not ids and len(pending) == 1:
            ids = list(pending)
        if not ids:
            log.warning("[%s] dropped a %d-byte message (over the size cap)", name, size)
            return
        pending.discard(ids[0])
        error = types.JSONRPCError(
            jsonrpc="2.0",
            id=ids[0],
            error=types.ErrorData(
                code=RESULT_TOO_LARGE,
                message=f"the reply is over {max_line_bytes} bytes (max_result_bytes); "
                "it was discarded",
            ),
        )
        await read_writer.send(SessionMessage(error))

    async def stdout_reader() -> None:
        assert process.stdout is not None
        buffer = bytearray()
        over = 0  # >0: bytes of an oversized line seen so far (its middle is discarded)
        head = b""
        tail = bytearray()
        try:
            async with read_writer:
                async for chunk in process.stdout:
                    while chunk:
                        nl = chunk.find(b"\n")
                        part, chunk = (chunk, b"") if nl < 0 else (chunk[:nl], chunk[nl + 1 :])
                        if over:
                            over += len(part)
                            tail = (tail + part)[-_EDGE:]
                        elif len(buffer) + len(part) > max_line_bytes:
                            head = bytes(buffer[:_EDGE] + part[: max(0, _EDGE - len(buffer))])
                            over = len(buffer) + len(part)
                            tail = bytearray((bytes(buffer[-_EDGE:]) + part)[-_EDGE:])
                            buffer = bytearray()
                        else:
                            buffer += part
                        if nl < 0:
                            break
                        if over:
                            await refuse(over, head, bytes(tail))
                            over, head, tail = 0, b"", bytearray()
                        elif buffer.strip():
                            await deliver(bytes(buffer))
                        buffer = bytearray()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the session is gone, or our shutdown closed the pipe under the read
        if info.on_eof is not None:
            info.on_eof()

    async def stderr_reader() -> None:
        assert process.stderr is not None
        rest = b""
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            async for chunk in process.stderr:
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop()[-_EDGE:]
                for raw in lines:
                    _log_stderr(name, raw, info)
        if rest:
            _log_stderr(name, rest, info)

    async def stdin_writer() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for sm in write_reader:
                    msg = sm.message
                    if isinstance(msg, types.JSONRPCRequest):
                        pending.add(msg.id)
                    elif (
                        isinstance(msg, types.JSONRPCNotification)
                        and msg.method == "notifications/cancelled"
                        and msg.params
                    ):
                        pending.discard(msg.params.get("requestId"))  # never answered now
                    data = msg.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((data + "\n").encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()  # the session sees the connection end

    async with anyio.create_task_group() as tg:
        tg.start_soon(stdout_reader)
        tg.start_soon(stderr_reader)
        tg.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):  # the child must not outlive its session
                read_stream.close()
                write_stream.close()
                await stop_server_process(process)
                info.returncode = process.returncode
                if process.stderr is not None:
                    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                        await process.stderr.aclose()
                for s in (read_stream, write_stream, read_writer, write_reader):
                    await s.aclose()
            tg.cancel_scope.cancel()


def _request_id(raw: bytes) -> types.RequestId:
    if raw.startswith(b'"'):
        return str(raw[1:-1].decode("utf-8", "replace"))
    return int(raw)


def _log_stderr(name: str, raw: bytes, info: ProcessInfo) -> None:
    line = raw.decode("utf-8", "replace").rstrip()
    if line:
        info.stderr_tail.append(line[:500])
        log.info("[%s] %s", name, line[:2000])
