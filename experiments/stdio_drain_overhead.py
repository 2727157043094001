"""What the stdio transport's shutdown bookkeeping (gateway/shell/_stdio_server.py: ``_Reading``,
``_Writing``) costs per request: one request read and its answer written, on in-memory streams,
with and without the wrappers, in alternating blocks.

    python experiments/stdio_drain_overhead.py [--requests 20000] [--rounds 5]

Prints the time per request with and without, and their difference in microseconds (the
stdio hop it sits on is milliseconds: benchmarks/results/gateway_latency.md).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import anyio
import mcp.types as types
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage

from toolroute.gateway.shell._stdio_server import _InFlight, _Reading, _Writing


async def _block(n: int, wrapped: bool) -> float:
    """Seconds per request: read a request, write its answer, ``n`` times."""
    client, read = create_context_streams[SessionMessage | Exception](n)
    write, wire = create_context_streams[SessionMessage](n)
    requests = [
        SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=i, method="ping")) for i in range(n)
    ]
    answers = [
        SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=i, result={})) for i in range(n)
    ]
    for r in requests:
        await client.send(r)  # buffered: the block times only the server side
    reading: Any = read
    writing: Any = write
    if wrapped:
        in_flight = _InFlight(60)
        reading, writing = _Reading(read, in_flight), _Writing(write, in_flight)
    start = time.perf_counter()
    for answer in answers:
        await reading.receive()
        await writing.send(answer)
    elapsed = time.perf_counter() - start
    for stream in (client, read, write, wire):
        await stream.aclose()
    return elapsed / n


async def main(requests: int, rounds: int) -> None:
    plain: list[float] = []
    wrapped: list[float] = []
    for _ in range(rounds):
        plain.append(await _block(requests, wrapped=False))
        wrapped.append(await _block(requests, wrapped=True))
    p, w = statistics.median(plain) * 1e6, statistics.median(wrapped) * 1e6
    print(f"per request, median of {rounds} blocks of {requests}:")
    print(f"  without the wrappers {p:.2f} us, with {w:.2f} us: +{w - p:.2f} us")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    anyio.run(main, args.requests, args.rounds)
