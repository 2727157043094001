"""How the gateway's stdio transport holds the end of input back from the SDK until the
requests it passed on are answered (gateway/shell/_stdio_server.py), on in-memory streams."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp.types as types
import pytest
from anyio import wait_all_tasks_blocked
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage

from toolroute.gateway.shell._stdio_server import _InFlight, _Reading, _Writing


def _request(request_id: Any) -> SessionMessage:
    return SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method="ping"))


def _answer(request_id: Any) -> SessionMessage:
    return SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result={}))


@asynccontextmanager
async def _pair() -> AsyncIterator[tuple[Any, _Reading, _Writing, Any, _InFlight]]:
    """(client side, what the server reads, what the server writes, what the client gets)."""
    client, inner_read = create_context_streams[SessionMessage | Exception](8)
    inner_write, wire = create_context_streams[SessionMessage](8)
    flight = _InFlight(60)
    try:
        yield client, _Reading(inner_read, flight), _Writing(inner_write, flight), wire, flight
    finally:
        for stream in (client, inner_read, inner_write, wire):
            await stream.aclose()


def test_the_end_of_input_reaches_the_server_only_once_its_requests_are_answered() -> None:
    async def main() -> None:
        async with _pair() as (client, reading, writing, _, _):
            await client.send(_request(1))
            await client.aclose()  # EOF right behind the request
            ended = anyio.Event()

            async def serve() -> None:
                with pytest.raises(anyio.EndOfStream):
                    await reading.receive()
                ended.set()

            with anyio.fail_after(10):
                assert (await reading.receive()).message.id == 1
                async with anyio.create_task_group() as tg:
                    tg.start_soon(serve)
                    await wait_all_tasks_blocked()
                    assert not ended.is_set()  # request 1 still runs
                    await writing.send(_answer(1))
                    await ended.wait()

    anyio.run(main)


def test_sigterm_between_two_reads_ends_the_input_without_reading_again() -> None:
    async def main() -> None:
        async with _pair() as (client, reading, writing, _, in_flight):
            await client.send(_request(1))  # stdin stays open: the client never closes it
            with anyio.fail_after(10):
                await reading.receive()
                await writing.send(_answer(1))
                in_flight.terminate()  # no read under way at this moment
                with pytest.raises(anyio.EndOfStream):
                    await reading.receive()

    anyio.run(main)


def test_a_request_the_server_sends_after_input_ended_is_answered_connection_closed() -> None:
    async def main() -> None:
        async with _pair() as (client, reading, writing, wire, _):
            await client.send(_request(1))
            await client.aclose()
            with anyio.fail_after(10):
                await reading.receive()
                ask = types.JSONRPCRequest(jsonrpc="2.0", id=7, method="sampling/createMessage")
                await writing.send(SessionMessage(ask))  # a call relays a downstream's question
                refusal = (await reading.receive()).message
                assert isinstance(refusal, types.JSONRPCError)
                assert (refusal.id, refusal.error.code) == (7, types.CONNECTION_CLOSED)
                await writing.send(_answer(1))
                with pytest.raises(anyio.EndOfStream):
                    await reading.receive()
                assert (await wire.receive()).message == ask  # the client was asked all the same

    anyio.run(main)


def test_a_request_the_client_cancels_is_not_waited_for() -> None:
    async def main() -> None:
        async with _pair() as (client, reading, _, _, _):
            await client.send(_request("1"))
            cancel = types.JSONRPCNotification(
                jsonrpc="2.0", method="notifications/cancelled", params={"requestId": 1}
            )
            await client.send(SessionMessage(cancel))
            await client.aclose()
            with anyio.fail_after(10):
                await reading.receive()
                await reading.receive()
                with pytest.raises(anyio.EndOfStream):  # the SDK never answers a cancelled request
                    await reading.receive()

    anyio.run(main)
