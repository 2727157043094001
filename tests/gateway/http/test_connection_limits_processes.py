"""A real ``toolroute serve --transport http`` with tokens, its descriptor limit low enough that
its connection cap is small, against a peer that keeps more connections than the cap open from
another loopback address, each having sent one byte of a request head and reopened as soon as
it is closed: an authenticated client still initializes and lists tools."""

from __future__ import annotations

import os
import resource
import subprocess
from pathlib import Path

import anyio
import pytest

from tests.conftest import TOOLROUTE
from tests.helpers.gateways import client_as, write_config
from tests.helpers.net import free_port, stop, wait_for_port

pytestmark = pytest.mark.integration

TOKEN = "lock-test-token-0123456789abcdef"
DESCRIPTORS = 128  # the gateway's cap: half of them, 64 connections
PEERS = 70  # more than the cap
ATTACKER = "127.0.0.2"  # loopback too, but another address than the client's


def _low_descriptor_limit() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (DESCRIPTORS, hard))


async def _trickle(port: int, opened: list[int]) -> None:
    """One connection at a time: open, send one byte of a head, wait until the server closes
    it (evicted, refused, timed out), reopen; until cancelled."""
    while True:
        try:
            stream = await anyio.connect_tcp("127.0.0.1", port, local_host=ATTACKER)
        except OSError:
            await anyio.sleep(0.05)
            continue
        opened[0] += 1
        async with stream:
            try:
                await stream.send(b"P")
                while True:
                    await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                pass


def test_peers_trickling_request_heads_never_lock_out_an_authenticated_client(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, str(tmp_path / "store"))
    settings = config.with_name("toolroute.toml")
    settings.write_text(settings.read_text() + '[auth]\nbearer_token_env = "LOCK_TEST_TOKEN"\n')
    port = free_port()
    log = tmp_path / "gateway.log"
    with log.open("w") as err:
        proc = subprocess.Popen(
            [str(TOOLROUTE), "serve", "--config", str(config), "--transport", "http",
             "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env={**os.environ, "LOCK_TEST_TOKEN": TOKEN},
            preexec_fn=_low_descriptor_limit,
        )  # fmt: skip

    async def main() -> None:
        await wait_for_port(port, proc, 180, log)
        opened = [0]
        async with anyio.create_task_group() as tg:
            for _ in range(PEERS):
                tg.start_soon(_trickle, port, opened)
            with anyio.fail_after(60):
                while opened[0] < PEERS:  # every peer has had a connection open
                    await anyio.sleep(0.05)
                for _ in range(3):
                    url = f"http://127.0.0.1:{port}/mcp"
                    async with client_as(url, {"Authorization": f"Bearer {TOKEN}"}) as c:
                        tools = (await c.list_tools()).tools
                        assert {t.name for t in tools} >= {"find_tools", "call_tool"}
            tg.cancel_scope.cancel()

    try:
        anyio.run(main)
    finally:
        stop(proc)
