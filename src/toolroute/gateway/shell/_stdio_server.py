"""The gateway's stdio transport: the SDK's ``stdio_server`` without a thread hop per line.

The SDK reads stdin and writes stdout through ``anyio.wrap_file``: every line read, every write
and every flush is a round trip to a worker thread, three per request on a path whose whole
budget is about one direct stdio call. Here the event loop reads and writes the
pipes itself (``connect_read_pipe`` / ``connect_write_pipe``); messages are parsed and
serialised as the SDK does. Like the SDK, it claims the descriptors while serving: fd 0 reads
the null device and fd 1 goes to stderr, so a handler's or a child's stray output can never
corrupt the wire; both are restored on exit. A line that is no JSON-RPC message is answered
here (``-32700 Parse error``, id null, or ``-32600 Invalid Request``, ``data`` naming the
problem), as JSON-RPC 2.0 asks; the SDK would drop it silently. Each line is parsed once,
bounded in size and depth (:func:`parse_frame`). A response is never answered: one whose id
names no request the gateway sent (and is still waiting on) is dropped and logged, so two
peers that answer what they cannot place never bounce a message back and forth.

When stdin or stdout is not a pipe, socket or terminal (a regular file, as in
``serve < requests.jsonl``, or ``/dev/null``), the event loop cannot watch it, so
:func:`serve_stdio` falls back to the SDK's transport.

Shutdown. The SDK's dispatcher cancels every running handler the moment its read
stream ends, so a client that writes its last requests and closes stdin would get "Connection
closed" (or nothing) for whatever was still running. :func:`serve_stdio` therefore holds the
end of input back from the SDK until every request it has passed on is answered (or a bound
passes); only then does the SDK see EOF, and its own shutdown answers what is left with a
JSON-RPC error. SIGTERM stops reading at once and does the same within a few seconds.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import signal
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from dataclasses import dataclass
from typing import Any, Self

import anyio
import mcp.types as types
import pydantic_core
from mcp.server.stdio import stdio_server
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.jsonrpc_dispatcher import cancelled_request_id_from_params
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from toolroute.sdk import ReadStream, WriteStream, create_context_streams

Incoming = ReadStream[SessionMessage | Exception]
"""Messages read from the client (an unparsable frame arrives as its exception)."""
Outgoing = WriteStream[SessionMessage]
"""Messages written to the client."""

__all__ = [
    "MAX_LINE_BYTES",
    "TERM_GRACE_S",
    "BadFrame",
    "parse_frame",
    "serve_stdio",
    "stdio_pipes",
]

log = logging.getLogger(__name__)

MAX_LINE_BYTES = 256 * 1024 * 1024
"""Longest request line read from stdin; a longer one is answered as unparsable and dropped."""

TERM_GRACE_S = 3.0
"""After SIGTERM, how long running requests may still finish before they are answered with an
error."""


def _watchable(fd: int) -> bool:
    """A pipe, socket or terminal: what the event loop can watch. Other character devices
    (``/dev/null``) are not: epoll refuses them and uvloop aborts the process."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or (stat.S_ISCHR(mode) and os.isatty(fd))


@dataclass(frozen=True, slots=True)
class BadFrame:
    """A stdin line that is no JSON-RPC message, and the error that answers it (apart from
    a well-formed error response, which is a message like any other)."""

    answer: types.JSONRPCError


def parse_frame(line: bytes) -> types.JSONRPCMessage | BadFrame:
    """One stdin line as a JSON-RPC message, or the JSON-RPC 2.0 error answering it, from one
    bounded parse: pydantic-core's JSON parser (no recursion past its depth limit of 200, so a
    frame nested 100,000 levels deep is an error, not a crash), then the message model on the
    parsed value. Nothing is parsed a second time to build the error: ``-32700 Parse error``
    (id null) when the line is not JSON, ``-32600 Invalid Request`` when it is JSON but no
    JSON-RPC message (with its id when it carries a usable one); ``data`` names the problem."""
    try:
        frame = pydantic_core.from_json(line)
    except ValueError as e:  # not JSON, not UTF-8, or nested past the limit
        return BadFrame(_error(types.PARSE_ERROR, "Parse error", None, str(e)))
    try:
        return types.jsonrpc_message_adapter.validate_python(frame, by_name=False)
    except ValidationError as e:
        request_id = None
        if isinstance(frame, dict):
            found = frame.get("id")
            if isinstance(found, str) or (type(found) is int):
                request_id = found
        first = e.errors(include_url=False, include_input=False)[0] if e.errors() else None
        why = f"{'.'.join(map(str, first['loc']))}: {first['msg']}" if first else str(e)
        return BadFrame(_error(types.INVALID_REQUEST, "Invalid Request", request_id, why[:200]))


def _error(
    code: int, message: str, request_id: types.RequestId | None, data: str | None
) -> types.JSONRPCError:
    error = types.ErrorData(code=code, message=message, data=data)
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)


def _claim(fd: int, diversion: int) -> tuple[int, int]:
    """A private duplicate of ``fd`` (the wire) and a saved copy; ``fd`` now points at
    ``diversion``."""
    private = os.dup(fd)
    saved = os.dup(fd)
    os.dup2(diversion, fd)
    return private, saved


@asynccontextmanager
async def stdio_pipes() -> AsyncIterator[tuple[Incoming, Outgoing]]:
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
    in_transport: asyncio.ReadTransport | None = None
    out_transport: asyncio.WriteTransport | None = None
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
                        too_long = f"line longer than {MAX_LINE_BYTES} bytes"
                        await reply(_error(types.PARSE_ERROR, "Parse error", None, too_long))
                        await read_writer.send(e)
                        continue
                    if not line:
                        return  # EOF: the client closed stdin
                    if not line.strip():
                        continue
                    message = parse_frame(line)
                    if isinstance(message, BadFrame):  # JSON-RPC 2.0 §5.1: the client
                        await reply(message.answer)  # hears why, the SDK's observer too
                        await read_writer.send(ValueError(message.answer.error.data))
                        continue
                    await read_writer.send(SessionMessage(message))

        async def reply(error: types.JSONRPCError) -> None:
            """An answer the transport writes itself (the SDK never sees the bad frame's id)."""
            data = error.model_dump_json(by_alias=True, exclude_unset=True)
            writer.write(data.encode("utf-8") + b"\n")  # one whole line: never interleaved
            await writer.drain()

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


class _InFlight:
    """The client's requests passed on to the server and not answered yet, and the wait for
    them to drain once input has ended (EOF or SIGTERM).

    Once input has ended, the server's own requests to the client (a downstream's sampling or
    elicitation, relayed) can get no answer: each is answered here with "Connection closed",
    so the call that asked ends now instead of at the drain's bound."""

    def __init__(self, drain_s: float) -> None:
        self.ids: set[types.RequestId] = set()
        self.drain_s = drain_s
        self.terminated = False
        self._asked: dict[types.RequestId, types.RequestId] = {}  # the server's, unanswered
        self._replies: list[SessionMessage] = []  # answers to those, once input has ended
        self._ended = False
        self._changed = anyio.Event()
        self._deadline = float("inf")
        self._reading: anyio.CancelScope | None = None
        self._draining: anyio.CancelScope | None = None

    def accept(self, item: SessionMessage | Exception) -> bool:
        """Note a message read from the client, before the server gets it; False for a
        response to no request the server is waiting on (dropped, and logged)."""
        if not isinstance(item, SessionMessage):
            return True
        message = item.message
        if isinstance(message, types.JSONRPCRequest):
            self.ids.add(coerce_request_id(message.id))  # "7" and 7 correlate, as in the SDK
        elif isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            key = coerce_request_id(message.id) if message.id is not None else None
            if key is None or key not in self._asked:
                kind = "error" if isinstance(message, types.JSONRPCError) else "result"
                log.warning(
                    "dropped a response (%s) from the client whose id %.100r answers no "
                    "request of the gateway",
                    kind,
                    message.id,
                )
                return False
            del self._asked[key]
        elif message.method == "notifications/cancelled":  # the SDK never answers those
            self._settle(cancelled_request_id_from_params(message.params))
        return True

    def sending(self, item: SessionMessage) -> None:
        """Note a request the server is about to write to the client (before the client
        can answer it)."""
        message = item.message
        if isinstance(message, types.JSONRPCRequest):
            self._asked[coerce_request_id(message.id)] = message.id

    def sent(self, item: SessionMessage) -> None:
        """Note a message the server wrote (or gave up writing) to the client."""
        message = item.message
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            self._settle(message.id)
        elif isinstance(message, types.JSONRPCRequest) and self._ended:
            self._refuse_asked()

    def _settle(self, request_id: types.RequestId | None) -> None:
        if request_id is not None:
            self.ids.discard(coerce_request_id(request_id))
        if not self.ids:
            self._changed.set()

    def _refuse_asked(self) -> None:
        closed = types.ErrorData(code=types.CONNECTION_CLOSED, message="Connection closed")
        for request_id in self._asked.values():
            reply = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=closed)
            self._replies.append(SessionMessage(reply))
        self._asked.clear()
        self._changed.set()

    async def receive(self, inner: Incoming) -> SessionMessage | Exception:
        """The next message from ``inner``; once it has ended (or SIGTERM came), the refusals
        of the server's requests, then the end when the drain is over."""
        if not self._ended and not self.terminated:  # SIGTERM may come between two reads
            with anyio.CancelScope() as self._reading:
                try:
                    while True:
                        item = await inner.receive()
                        if self.accept(item):
                            return item
                except anyio.EndOfStream:
                    pass
            # input ended (a request arriving as SIGTERM cancels the read above is dropped)
            self._ended = True
            grace = TERM_GRACE_S if self.terminated else self.drain_s
            self._deadline = min(self._deadline, anyio.current_time() + grace)
            self._refuse_asked()
        with anyio.CancelScope(deadline=self._deadline) as self._draining:
            while not self._replies and self.ids:
                self._changed = anyio.Event()
                await self._changed.wait()
        if self._replies:
            return self._replies.pop(0)
        if self.ids:
            log.warning(
                "%d request(s) still running at shutdown: answered with an error", len(self.ids)
            )
        raise anyio.EndOfStream

    def terminate(self) -> None:
        """SIGTERM: stop reading; what runs gets TERM_GRACE_S more at most."""
        self.terminated = True
        self._deadline = min(self._deadline, anyio.current_time() + TERM_GRACE_S)
        if self._reading is not None:
            self._reading.cancel()
        if self._draining is not None:
            self._draining.deadline = self._deadline


class _Reading:
    """The read stream the SDK serves: ``inner``'s messages, with the end held back until the
    requests passed on are answered (:class:`_InFlight`)."""

    def __init__(self, inner: Incoming, in_flight: _InFlight) -> None:
        self._inner = inner
        self._in_flight = in_flight

    @property
    def last_context(
        self,
    ) -> contextvars.Context | None:  # the sender's context, for the SDK's dispatcher
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        return await self._in_flight.receive(self._inner)

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _Writing:
    """The write stream the SDK serves: ``inner``, noting which requests got their answer."""

    def __init__(self, inner: Outgoing, in_flight: _InFlight) -> None:
        self._inner = inner
        self._in_flight = in_flight

    async def send(self, item: SessionMessage) -> None:
        self._in_flight.sending(item)
        try:
            await self._inner.send(item)
        finally:  # sent or given up on: the SDK will not answer it again either way
            self._in_flight.sent(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


async def _on_sigterm(in_flight: _InFlight) -> None:
    """The first SIGTERM ends the session gracefully; a second one kills as by default (the
    handler is gone), should shutting down hang (the SDK's transport waits for stdin)."""
    with anyio.open_signal_receiver(signal.SIGTERM) as signals:
        async for _ in signals:
            log.info("SIGTERM: finishing the requests under way (at most %ss)", TERM_GRACE_S)
            in_flight.terminate()
            return


async def serve_stdio(server: Any, drain_s: float = 60.0) -> None:
    """Run ``server`` (an SDK ``Server``) over stdin/stdout until the client closes stdin or
    SIGTERM arrives; either way every request read is answered before returning: by its
    handler, which gets ``drain_s`` after EOF (``TERM_GRACE_S`` after SIGTERM), else by the
    SDK's "Connection closed" error."""
    in_flight = _InFlight(drain_s)
    async with anyio.create_task_group() as tg:
        if sys.platform != "win32":  # no SIGTERM to catch there
            tg.start_soon(_on_sigterm, in_flight)
        async with _transport() as (read, write):
            await server.run(
                _Reading(read, in_flight),
                _Writing(write, in_flight),
                server.create_initialization_options(),
            )
        tg.cancel_scope.cancel()


def _transport() -> AbstractAsyncContextManager[tuple[Incoming, Outgoing]]:
    """Ours over pipes, sockets and terminals; the SDK's for anything else (a regular file)."""
    if _watchable(0) and _watchable(1):
        return stdio_pipes()
    return stdio_server()
