"""Hostile HTTP bodies at a real `toolroute serve --transport http` (property-based,
Hypothesis), in both protocol eras: frames nested past any parser's depth, bytes that are not
JSON or not UTF-8, JSON that is no JSON-RPC message. Each is answered with a client error (a
JSON-RPC parse or invalid-request error where the body is read as JSON-RPC), never a 5xx, and
the gateway keeps answering; a body over the size limit is refused with 413 before it is
parsed. A fixed budget of examples: small in the default tier, larger under ``slow``."""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.gateways import GatewayProcess, write_config
from tests.helpers.hostile import hostile_frames
from tests.helpers.net import post_initialize
from toolroute.gateway.http.auth import MAX_BODY_BYTES

pytestmark = pytest.mark.integration

WAIT_S = 180
ERAS = st.sampled_from([None, "2025-11-25", "2026-07-28"])


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    folder: Path = tmp_path_factory.mktemp("bodies")
    gw = GatewayProcess(write_config(folder, str(folder / "store")))
    try:
        anyio.run(gw.ready, WAIT_S)
        yield gw
    finally:
        gw.stop()


def _post(
    port: int, body: bytes, era: str | None, extra: dict[str, str] | None = None
) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if era is not None:
        headers["MCP-Protocol-Version"] = era
    try:
        conn.request("POST", "/mcp", body=body, headers={**headers, **(extra or {})})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def _check(gw: GatewayProcess, frame: bytes, era: str | None) -> None:
    status, body = _post(gw.port, frame, era)
    assert 400 <= status < 500, (frame[:200], era, status, body[:300])
    if body.startswith(b"{"):
        error = json.loads(body)["error"]
        assert error["code"] in (-32700, -32600, -32602, -32001, -32000), error
    assert gw.proc.poll() is None
    assert post_initialize(gw.port, {}) == 200  # and the next client is answered


@settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(frame=hostile_frames(), era=ERAS)
def test_a_hostile_body_is_a_client_error_and_the_gateway_keeps_serving(
    gateway: GatewayProcess, frame: bytes, era: str | None
) -> None:
    _check(gateway, frame, era)


@pytest.mark.slow
@settings(
    max_examples=400,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(frame=hostile_frames(), era=ERAS)
def test_many_hostile_bodies_are_client_errors_and_the_gateway_keeps_serving(
    gateway: GatewayProcess, frame: bytes, era: str | None
) -> None:
    _check(gateway, frame, era)


def test_a_body_over_the_limit_is_refused_with_413_before_it_is_parsed(
    gateway: GatewayProcess,
) -> None:
    chunk = b"[" * (1024 * 1024)
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=60) as sock:
        # chunked, no Content-Length: counted as it comes; the terminating chunk never sent
        sock.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        for _ in range(MAX_BODY_BYTES // len(chunk)):
            sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        sock.sendall(b"1\r\n[\r\n")  # one byte over
        head = sock.recv(4096)
    assert head.startswith(b"HTTP/1.1 413"), head[:200]
    conn = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=60)
    try:  # a Content-Length over the limit: refused without reading the body
        conn.putrequest("POST", "/mcp")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(10 * MAX_BODY_BYTES))
        conn.endheaders()
        assert conn.getresponse().status == 413
    finally:
        conn.close()
    assert post_initialize(gateway.port, {}) == 200
