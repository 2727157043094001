"""The HTTP gateway against slow and greedy peers, over raw loopback sockets before any auth:
a header that never ends is cut, a head that never finishes (slowloris) or a connection that
never speaks is closed, one address's waiting connections (idle, or mid-head) are capped (the
longest waiting closed), waiting connections never keep a new one out at the connection cap,
and past the cap (every connection busy with a request) a new connection is refused at once
with a log line; the gateway serves a normal request afterwards each time.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from anyio.abc import SocketStream

from tests.conftest import HashingEmbedder
from tests.helpers.gateways import write_config
from tests.helpers.net import free_port
from toolroute.config import load_config
from toolroute.gateway.http.connection_limits import HttpLimits
from toolroute.gateway.ops.app import make_gateway, running_downstreams
from toolroute.gateway.ops.serving_http import serve_http
from toolroute.gateway.ops.syncing import sync_router

pytestmark = pytest.mark.integration

STATUS = b"GET /status.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
BODY_AWAITED = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{"


@asynccontextmanager
async def serving(tmp_path: Path, limits: HttpLimits) -> AsyncIterator[int]:
    """`serve_http` with ``limits`` in this event loop; yields its port."""
    cfg = load_config(write_config(tmp_path, str(tmp_path / "store")))
    port = free_port()
    async with running_downstreams(cfg) as downstreams:
        router, _ = await sync_router(cfg, downstreams, embedder=HashingEmbedder())
        gateway = make_gateway(cfg, router, downstreams)
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve_http, cfg, gateway, "127.0.0.1", port, limits)
            with anyio.fail_after(30):
                while True:
                    try:
                        await (await anyio.connect_tcp("127.0.0.1", port)).aclose()
                        break
                    except OSError:
                        await anyio.sleep(0.05)
            yield port
            tg.cancel_scope.cancel()
        router.close()


async def until_closed(stream: SocketStream, timeout_s: float = 15) -> bytes:
    """What the server sends until it closes the connection (a reset ends it too)."""
    got = b""
    with anyio.fail_after(timeout_s):
        while True:
            try:
                got += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                return got


async def response(stream: SocketStream) -> bytes:
    """One whole response (head and Content-Length body) from a kept-alive connection."""
    got = b""
    with anyio.fail_after(15):
        while b"\r\n\r\n" not in got:
            got += await stream.receive()
        head, _, body = got.partition(b"\r\n\r\n")
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        while len(body) < length:
            body += await stream.receive()
    return got


async def served_normally(port: int) -> None:
    async with await anyio.connect_tcp("127.0.0.1", port) as s:
        await s.send(STATUS.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
        assert (await until_closed(s)).startswith(b"HTTP/1.1 200")


def test_a_header_value_that_never_ends_is_cut_at_the_head_limit(tmp_path: Path) -> None:
    async def main() -> None:
        async with serving(tmp_path, HttpLimits(max_head_bytes=16 * 1024)) as port:
            async with await anyio.connect_tcp("127.0.0.1", port) as s:
                await s.send(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Flood: ")
                sent = 0
                with anyio.fail_after(15):  # 8 MB would all be taken in without the limit
                    try:
                        while sent < 8 * 1024 * 1024:
                            await s.send(b"a" * 16384)
                            sent += 16384
                    except (anyio.BrokenResourceError, OSError):
                        pass
                answer = await until_closed(s)
                assert sent < 8 * 1024 * 1024 or answer.startswith(b"HTTP/1.1 431")
            async with await anyio.connect_tcp("127.0.0.1", port) as s:
                fields = b"".join(b"X-%d: 1\r\n" % i for i in range(200))
                await s.send(b"GET /status.json HTTP/1.1\r\nHost: 127.0.0.1\r\n" + fields + b"\r\n")
                assert (await until_closed(s)).startswith(b"HTTP/1.1 400")
            await served_normally(port)

    anyio.run(main)


def test_a_head_that_never_finishes_and_a_silent_connection_are_closed(tmp_path: Path) -> None:
    async def main() -> None:
        async with serving(tmp_path, HttpLimits(head_timeout_s=1)) as port:
            async with (
                await anyio.connect_tcp("127.0.0.1", port) as slow,
                await anyio.connect_tcp("127.0.0.1", port) as silent,
            ):
                await slow.send(b"GET /status.json HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a")
                assert (await until_closed(slow)).startswith(b"HTTP/1.1 408")
                assert await until_closed(silent) == b""
            await served_normally(port)

    anyio.run(main)


def test_past_the_connection_cap_a_new_connection_is_refused_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def main() -> None:
        limits = HttpLimits(max_connections=4, head_timeout_s=60, reserved_for_trusted=0)
        async with serving(tmp_path, limits) as port:
            held = [await anyio.connect_tcp("127.0.0.1", port) for _ in range(4)]
            for s in held:  # a request under way on each (its body awaited): none is waiting
                await s.send(BODY_AWAITED)
            try:
                async with await anyio.connect_tcp("127.0.0.1", port) as extra:
                    assert (await until_closed(extra)).startswith(b"HTTP/1.1 503")
            finally:
                for s in held:
                    await s.aclose()
            with anyio.fail_after(15):  # the server sees the four go
                while True:
                    try:
                        await served_normally(port)
                        break
                    except AssertionError:
                        await anyio.sleep(0.05)

    with caplog.at_level(logging.WARNING, logger="toolroute.gateway.http.connection_limits"):
        anyio.run(main)
    assert any("refused 1 connection(s)" in r.getMessage() for r in caplog.records)


def test_one_address_keeps_a_bounded_number_of_idle_connections(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def main() -> None:
        limits = HttpLimits(head_timeout_s=60, max_idle_per_address=2)
        async with serving(tmp_path, limits) as port:
            first = await anyio.connect_tcp("127.0.0.1", port)
            others = [await anyio.connect_tcp("127.0.0.1", port) for _ in range(2)]
            try:
                assert await until_closed(first) == b""  # the longest idle goes, unanswered
                await others[0].send(STATUS)  # the two kept are served
                assert (await others[0].receive()).startswith(b"HTTP/1.1 200")
            finally:
                for s in (first, *others):
                    await s.aclose()
            await served_normally(port)

    with caplog.at_level(logging.WARNING, logger="toolroute.gateway.http.connection_limits"):
        anyio.run(main)
    assert any("closed 1 waiting connection(s)" in r.getMessage() for r in caplog.records)


def test_idle_connections_never_keep_a_new_one_out_at_the_connection_cap(tmp_path: Path) -> None:
    async def main() -> None:
        limits = HttpLimits(max_connections=4, head_timeout_s=60)
        async with serving(tmp_path, limits) as port:
            idle = [await anyio.connect_tcp("127.0.0.1", port) for _ in range(4)]
            try:
                await served_normally(port)  # one idle connection made room
            finally:
                for s in idle:
                    await s.aclose()

    anyio.run(main)


def test_connections_trickling_a_head_never_keep_a_new_one_out(tmp_path: Path) -> None:
    """One byte of a head sent on every connection used to make each unevictable: the cap
    full of them answered every newcomer 503."""

    async def main() -> None:
        limits = HttpLimits(max_connections=4, head_timeout_s=60)
        async with serving(tmp_path, limits) as port:
            trickling = [await anyio.connect_tcp("127.0.0.1", port) for _ in range(4)]
            try:
                for s in trickling:
                    await s.send(b"G")
                await served_normally(port)  # a trickling one made room
            finally:
                for s in trickling:
                    await s.aclose()

    anyio.run(main)


def test_a_connection_that_passed_the_guard_outlasts_any_number_of_newcomers(
    tmp_path: Path,
) -> None:
    """A client's kept-alive connection, trusted once a request on it passed the guard, is
    never the one closed to make room while an untrusted one waits."""

    async def main() -> None:
        limits = HttpLimits(max_connections=4, head_timeout_s=60)
        async with serving(tmp_path, limits) as port:
            kept = await anyio.connect_tcp("127.0.0.1", port)
            newcomers: list[SocketStream] = []
            try:
                await kept.send(STATUS)
                assert (await response(kept)).startswith(b"HTTP/1.1 200")
                newcomers = [await anyio.connect_tcp("127.0.0.1", port) for _ in range(8)]
                for s in newcomers:
                    await s.send(b"G")  # mid-head, never finished
                await kept.send(STATUS)  # still open: served again
                assert (await response(kept)).startswith(b"HTTP/1.1 200")
            finally:
                for s in (kept, *newcomers):
                    await s.aclose()

    anyio.run(main)
