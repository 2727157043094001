"""Frames that are no JSON-RPC message, on the gateway's stdio pipe (issue 23): each is answered
with the JSON-RPC 2.0 error for it (``-32700 Parse error`` with id null, ``-32600 Invalid
Request``), and the gateway keeps serving the requests around it."""

from __future__ import annotations

import json
import selectors
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.stdio import CALL, HELLO
from tests.helpers.stdio import config as _config
from tests.helpers.stdio import lines as _lines
from tests.helpers.stdio import read_until as _read_until
from tests.helpers.stdio import serve as _serve
from tests.helpers.stdio import stop_gateway as _stop

pytestmark = pytest.mark.integration


def _next_line(proc: subprocess.Popen[bytes], timeout_s: float) -> Any:
    """The next message on the gateway's stdout, waited for at most ``timeout_s``."""
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        assert sel.select(timeout_s), f"nothing on stdout in {timeout_s}s"
    return json.loads(proc.stdout.readline())


def test_unparseable_frames_get_a_json_rpc_error_and_the_gateway_keeps_serving(
    tmp_path: Path,
) -> None:
    proc = _serve(_config(tmp_path), subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        proc.stdin.write(_lines(*HELLO, ping))
        proc.stdin.flush()
        _read_until(proc, 2, 180)  # initialised: what follows is read in order
        proc.stdin.write(_lines(b"{not json"))
        proc.stdin.flush()
        parse = _next_line(proc, 60)
        assert parse == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32700,
                "message": "Parse error",
                "data": "key must be a string at line 1 column 2",
            },
        }
        proc.stdin.write(_lines({"jsonrpc": "2.0", "id": 7, "method": 5}, CALL))
        proc.stdin.flush()
        answers = _read_until(proc, 3, 180)
        assert answers[7]["error"] == {
            "code": -32600,
            "message": "Invalid Request",
            "data": "JSONRPCRequest.method: Input should be a valid string",
        }
        assert "Asia/Tokyo" in answers[3]["result"]["content"][0]["text"]
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        _stop(proc)
