"""The gateway's own stdio transport (gateway/shell/_stdio_server.py) with a real `toolroute serve`
and the
real time server behind it (and a slow one, tests/fixtures/slow_server.py, for calls still
running when stdin closes or SIGTERM arrives), spoken to in raw JSON-RPC lines."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.stdio import CALL, HELLO
from tests.helpers.stdio import config as _config
from tests.helpers.stdio import lines as _lines
from tests.helpers.stdio import nap as _nap
from tests.helpers.stdio import read_until as _read_until
from tests.helpers.stdio import serve as _serve
from tests.helpers.stdio import stop_gateway as _stop

pytestmark = pytest.mark.integration


def test_a_garbage_line_on_the_pipe_is_contained_and_calls_go_on(tmp_path: Path) -> None:
    proc = _serve(_config(tmp_path), subprocess.PIPE)
    assert proc.stdin is not None
    try:
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        proc.stdin.write(_lines(*HELLO, b"{not json", b"", listing, CALL))
        proc.stdin.flush()
        answers = _read_until(proc, 3, 180)
        assert answers[1]["result"]["serverInfo"]["name"] == "toolroute"
        tools = [t["name"] for t in answers[2]["result"]["tools"]]
        assert tools[:2] == ["find_tools", "call_tool"]
        assert "Asia/Tokyo" in answers[3]["result"]["content"][0]["text"]
        proc.stdin.close()  # EOF: the gateway stops on its own
        assert proc.wait(timeout=30) == 0
    finally:
        _stop(proc)


def test_a_response_to_no_request_is_dropped_and_logged_never_echoed(tmp_path: Path) -> None:
    """Echoing it would make two such peers bounce one message back and forth for ever."""
    proc = _serve(_config(tmp_path), subprocess.PIPE)
    assert proc.stdin is not None
    try:
        stray_error = {"jsonrpc": "2.0", "id": 4242, "error": {"code": -32000, "message": "x"}}
        stray_result = {"jsonrpc": "2.0", "id": 4243, "result": {}}
        ping = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
        proc.stdin.write(_lines(*HELLO, stray_error, stray_result, ping))
        proc.stdin.flush()
        answers = _read_until(proc, 7, 180)  # in order: the strays came before the ping
        assert set(answers) == {1, 7} and answers[7]["result"] == {}
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
        log = tmp_path.joinpath("serve.err").read_text()
        assert "dropped a response (error) from the client whose id 4242" in log
        assert "dropped a response (result) from the client whose id 4243" in log
    finally:
        _stop(proc)


def test_stdin_closed_ends_the_gateway_while_a_server_never_answers_initialize(
    tmp_path: Path,
) -> None:
    """Its connect is abandoned at once: the exit does not wait out ``connect_timeout_s``."""
    mute = [sys.executable, "-c", "import sys; sys.stdin.read()"]  # reads, never answers
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": {"mute": {"command": mute[0], "args": mute[1:]}}}))
    store = json.dumps(str(tmp_path / "store"))
    (tmp_path / "toolroute.toml").write_text(
        f"[toolroute]\nstore = {store}\nconnect_timeout_s = 120\n"
    )
    proc = _serve(path, subprocess.PIPE)
    assert proc.stdin is not None
    try:
        proc.stdin.write(_lines(*HELLO))
        proc.stdin.flush()
        assert _read_until(proc, 1, 60)[1]["result"]["serverInfo"]["name"] == "toolroute"
        proc.stdin.close()  # EOF while mute's initialize is still unanswered
        assert proc.wait(timeout=60) == 0  # half the connect timeout: it was waited out
    finally:
        _stop(proc)


def test_stdin_from_a_regular_file_falls_back_to_the_sdk_transport_and_answers_all_before_exit(
    tmp_path: Path,
) -> None:
    requests = tmp_path / "requests.jsonl"
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    # EOF follows at once: the nap is still running downstream when the gateway reads it
    requests.write_bytes(_lines(*HELLO, listing, _nap(3, 2)))
    with requests.open("rb") as stdin:
        proc = _serve(_config(tmp_path), stdin)
        out, _ = proc.communicate(timeout=180)
    assert proc.returncode == 0, (tmp_path / "serve.err").read_text()[-2000:]
    answers = {m["id"]: m for m in map(json.loads, out.splitlines()) if "id" in m}
    assert "find_tools" in [t["name"] for t in answers[2]["result"]["tools"]]
    assert answers[3]["result"]["content"][0]["text"] == "rested 2.0"


def test_a_call_in_flight_when_the_client_closes_stdin_is_answered_before_exit(
    tmp_path: Path,
) -> None:
    proc = _serve(_config(tmp_path), subprocess.PIPE)
    assert proc.stdin is not None
    try:
        proc.stdin.write(_lines(*HELLO, _nap(3, 2)))
        proc.stdin.close()  # the client's last request, then EOF while it runs downstream
        answers = _read_until(proc, 3, 180)
        assert answers[3]["result"]["content"][0]["text"] == "rested 2.0"
        assert proc.wait(timeout=30) == 0
    finally:
        _stop(proc)


def test_a_downstream_asking_the_client_after_stdin_closed_is_refused_at_once(
    tmp_path: Path,
) -> None:
    # the drain's bound is the call timeout plus a margin: far past this test's wait for id 3
    proc = _serve(_config(tmp_path, "call_timeout_s = 600\n"), subprocess.PIPE)
    assert proc.stdin is not None
    try:
        hello = json.loads(json.dumps(HELLO))
        hello[0]["params"]["capabilities"] = {"sampling": {}}  # the gateway relays sampling
        ask = {"name": "call_tool", "arguments": {"name": "slow__ask", "arguments": {}}}
        call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": ask}
        proc.stdin.write(_lines(*hello, call))
        proc.stdin.close()  # the model's question can get no answer now
        answers = _read_until(proc, 3, 180)
        said = answers[3]["result"]["content"][0]["text"]
        assert said == "no answer: Connection closed", said
        assert proc.wait(timeout=30) == 0
    finally:
        _stop(proc)


def test_sigterm_during_a_call_answers_it_with_an_error_and_exits(tmp_path: Path) -> None:
    # the call's own timeout far past the nap's start: only the SIGTERM can end it (with the
    # default 30 s, a loaded machine's slow first tools/list let the timeout answer it first)
    proc = _serve(_config(tmp_path, "call_timeout_s = 600\n"), subprocess.PIPE)
    assert proc.stdin is not None
    try:
        listing = {"jsonrpc": "2.0", "id": 4, "method": "tools/list"}
        proc.stdin.write(_lines(*HELLO, _nap(3, 600), listing))
        proc.stdin.flush()
        answers = _read_until(proc, 4, 180)  # read in order: the nap (id 3) is under way
        assert 3 not in answers
        proc.send_signal(signal.SIGTERM)  # stdin stays open: the signal alone ends the session
        answers = _read_until(proc, 3, 60)
        assert "error" in answers[3], (answers[3], (tmp_path / "serve.err").read_text()[-3000:])
        assert proc.wait(timeout=30) == 0
    finally:
        _stop(proc)
