"""Hostile JSON-RPC frames on a real gateway's stdio pipe (property-based, Hypothesis): frames
nested past any parser's depth, bytes that are not JSON or not UTF-8, JSON that is no JSON-RPC
message, numbers past every range. For each one the gateway stays up, everything on its stdout
is a JSON-RPC message, the frame is answered with ``-32700``/``-32600`` whose ``data`` names
the problem, and the next request is answered. A fixed budget of examples: small in the
default tier, larger under ``slow``."""

from __future__ import annotations

import itertools
import json
import selectors
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import mcp.types as types
import pytest
from hypothesis import HealthCheck, given, settings

from tests.helpers.hostile import hostile_frames
from tests.helpers.stdio import HELLO, config, lines, serve, stop_gateway

pytestmark = pytest.mark.integration

WAIT_S = 180  # the first answer waits for the model load and the servers' sync
PROBES = itertools.count(10**9)  # ids of the pings after each frame; no frame uses them


class Pipe:
    """A running stdio gateway and the messages read from its stdout."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def read_until(self, want: Any, timeout_s: float) -> list[dict[str, Any]]:
        """Every message up to the answer with id ``want``; each line must be JSON-RPC."""
        assert self.proc.stdout is not None
        got: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout_s
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            while not any(m.get("id") == want for m in got):
                left = deadline - time.monotonic()
                assert left > 0 and sel.select(left), f"no answer {want} in {timeout_s}s"
                line = self.proc.stdout.readline()
                assert line, f"the gateway closed stdout (exit code {self.proc.poll()})"
                types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                got.append(json.loads(line))
        return got


@pytest.fixture(scope="module")
def pipe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pipe]:
    proc = serve(config(tmp_path_factory.mktemp("hostile")), subprocess.PIPE)
    try:
        p = Pipe(proc)
        p.send(lines(*HELLO))
        p.read_until(1, WAIT_S)
        yield p
    finally:
        stop_gateway(proc)


def _check(pipe: Pipe, frame: bytes) -> None:
    probe = next(PROBES)
    pipe.send(frame + b"\n" + lines({"jsonrpc": "2.0", "id": probe, "method": "ping"}))
    got = pipe.read_until(probe, 60)
    errors = [m for m in got if "error" in m]
    assert len(errors) == 1, (frame[:200], got)
    error = errors[0]["error"]
    assert error["code"] in (types.PARSE_ERROR, types.INVALID_REQUEST), error
    assert isinstance(error.get("data"), str) and error["data"], error  # names the problem
    assert got[-1] == {"jsonrpc": "2.0", "id": probe, "result": {}}
    assert pipe.proc.poll() is None


@settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(frame=hostile_frames())
def test_a_hostile_frame_is_answered_with_an_error_and_the_gateway_keeps_serving(
    pipe: Pipe, frame: bytes
) -> None:
    _check(pipe, frame)


@pytest.mark.slow
@settings(
    max_examples=400,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(frame=hostile_frames())
def test_many_hostile_frames_are_answered_and_the_gateway_keeps_serving(
    pipe: Pipe, frame: bytes
) -> None:
    _check(pipe, frame)


def test_a_frame_nested_a_thousand_levels_deep_does_not_end_the_gateway(pipe: Pipe) -> None:
    """The worked example: a 2 kB line of 1,000 brackets (it ended the gateway with exit 1)."""
    _check(pipe, b"[" * 1000 + b"]" * 1000)
    _check(
        pipe,
        b'{"jsonrpc":"2.0","id":9,"method":"ping","params":' + b"[" * 1000 + b"]" * 1000 + b"}",
    )


def test_nothing_but_json_rpc_reaches_stdout_and_the_pipe_still_works(pipe: Pipe) -> None:
    probe = next(PROBES)
    pipe.send(lines({"jsonrpc": "2.0", "id": probe, "method": "tools/list"}))
    [answer] = [m for m in pipe.read_until(probe, 60) if m.get("id") == probe]
    assert {t["name"] for t in answer["result"]["tools"]} >= {"find_tools", "call_tool"}
