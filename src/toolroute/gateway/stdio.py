"""The gateway's stdio transport: the SDK's ``stdio_server`` without a thread hop per line.

The SDK reads stdin and writes stdout through ``anyio.wrap_file``: every line read, every write
and every flush is a round trip to a worker thread, three per request on a path whose whole
budget is about one direct stdio call (issue 13). Here the event loop reads and writes the
pipes itself (``connect_read_pipe`` / ``connect_write_pipe``); messages are parsed and
serialised as the SDK does. Like the SDK, it claims the descriptors while serving: fd 0 reads
the null device and fd 1 goes to stderr, so a handler's or a child's stray output can never
corrupt the wire; both are restored on exit.

When stdin or stdout is not a pipe, socket or terminal (a regular file, as in
``serve < requests.jsonl``), the event loop cannot watch it, so :func:`serve_stdio` falls back
to the SDK's transport.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio
import mcp.types as types
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage

__all__ = ["MAX_LINE_BYTES", "serve_stdio", "stdio_pipes"]

log = logging.getLogger(__name__)

MAX_LINE_BYTES = 256 * 1024 * 1024
"""Longest request line read from stdin; a longer one is answered as unparsable and dropped."""


def _watchable(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


def _claim(fd: int, diversion: int) -> tuple[int, int]:
    """A private duplicate of ``fd`` (the wire) and a saved copy; ``fd`` now points at
    ``diversion``."""
    private = os.dup(fd)
    saved = os.dup(fd)
    os.dup2(diversion, fd)
    return private, saved


@asynccontextmanager
async def stdio_pipes() -> AsyncIterator[tuple[Any, Any]]:
    """(read stream, write stream) of MCP messages over this process's stdin and stdout, read
    and written by the event loop. Requires both to be pipes, sockets or terminals."""
    loop = asyncio.get_running_loop()
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        in_fd, saved_in = _claim(0, null)
    finally:
        os.close(null)
    try:
        out_fd, saved_out = _claim(1, 2)
    except OSError:
        os.dup2(saved_in, 0)
        os.close(saved_in)
        os.close(in_fd)
        raise
    reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
    in_file = os.fdopen(in_fd, "rb", buffering=0)
    out_file = os.fdopen(out_fd, "wb", buffering=0)
    in_transport: Any = None
    out_transport: Any = None
    try:
        in_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), in_file
        )
        out_transport, out_protocol = await loop.connect_write_pipe(
            lambda: asyncio.streams.FlowControlMixin(), out_file
        )
        writer = asyncio.StreamWriter(out_transport, out_protocol, None, loop)
        read_writer, read_stream = create_context_streams[SessionMessage | Exception](0)
        write_stream, write_reader = create_context_streams[SessionMessage](0)

        async def read_lines() -> None:
            async with read_writer:
                while True:
                    try:
                        line = await reader.readline()
                    except ValueError as e:  # longer than MAX_LINE_BYTES: dropped by asyncio
                        await read_writer.send(e)
                        continue
                    if not line:
                        return  # EOF: the client closed stdin
                    if not line.strip():
                        continue
                    try:
                        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                    except Exception as e:  # the session answers a bad frame, as the SDK does
                        await read_writer.send(e)
                        continue
                    await read_writer.send(SessionMessage(message))

        async def write_lines() -> None:
            async with write_reader:
                async for session_message in write_reader:
                    data = session_message.message.model_dump_json(
                        by_alias=True, exclude_unset=True
                    )
                    writer.write(data.encode("utf-8") + b"\n")
                    await writer.drain()

        async with anyio.create_task_group() as tg:
            tg.start_soon(write_lines)
            async with anyio.create_task_group() as reading:
                reading.start_soon(read_lines)
                try:
                    yield read_stream, write_stream
                finally:
                    reading.cancel_scope.cancel()  # the client may keep stdin open
                    await write_stream.aclose()  # write_lines ends after the last message
        with anyio.move_on_after(5, shield=True):  # what the pipe has not taken yet
            while out_transport.get_write_buffer_size():
                await anyio.sleep(0.01)
    finally:
        for transport in (in_transport, out_transport):
            if transport is not None:
                transport.close()
        for f in (in_file, out_file):
            with suppress(OSError):
                f.close()
        for fd, saved in ((0, saved_in), (1, saved_out)):
            with suppress(OSError):
                os.set_blocking(saved, True)  # the loop made the shared description non-blocking
                os.dup2(saved, fd)
            os.close(saved)


async def serve_stdio(server: Any) -> None:
    """Run ``server`` (an SDK ``Server``) over stdin/stdout until the client closes stdin."""
    if _watchable(0) and _watchable(1):
        async with stdio_pipes() as (read, write):
            await server.run(read, write, server.create_initialization_options())
        return
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
