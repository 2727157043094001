"""The HTTP gateway's front door, tried from outside: ``toolroute serve --transport http`` with
three bearer-token clients and allow-lists, in front of the real time server and a real
streamable-HTTP SDK server that records every header it receives (tests/fixtures/
header_server.py). Raw HTTP requests check Host (421), Origin (403) and tokens (401) on every
route; SDK clients and the npm MCP Inspector CLI check allow-lists and the call gate's
``client`` scope. Loopback only; every process started here is stopped.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import secrets
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.conftest import INSPECTOR, RAW_INITIALIZE, REPO, TIME_MAIN, TOOLROUTE, needs_npm
from tests.helpers.gateways import client_as, http_gateway
from tests.helpers.net import post_initialize
from toolroute.config import load_config
from toolroute.embed.onnx import OnnxEmbedder

pytestmark = pytest.mark.integration

HEADER_SERVER = REPO / "tests" / "fixtures" / "header_server.py"
NOW_IN_TOKYO = {"name": "time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}


@dataclass
class Gw:
    port: int
    tokens: dict[str, str]
    headers_log: Path
    stderr: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"


def _wait_line(path: Path, pattern: str, proc: subprocess.Popen[bytes], timeout_s: float) -> str:
    async def wait() -> str:
        with anyio.fail_after(timeout_s):
            while True:
                text = path.read_text(errors="replace") if path.exists() else ""
                if m := re.search(pattern, text):
                    return m.group(1)
                assert proc.poll() is None, f"process exited: {text[-2000:]}"
                await anyio.sleep(0.2)

    return anyio.run(wait)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gw]:
    tmp = tmp_path_factory.mktemp("http-security")
    headers_log = tmp / "downstream-headers.jsonl"
    down_out = tmp / "header-server.out"
    with down_out.open("wb") as out:  # the child keeps its own copy of the descriptor
        down = subprocess.Popen(
            [sys.executable, str(HEADER_SERVER), str(headers_log)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        down_port = _wait_line(down_out, r"PORT (\d+)", down, 30)
        servers = {
            "time": {"command": sys.executable, "args": ["-c", TIME_MAIN, "x"]},
            "web": {
                "url": f"http://127.0.0.1:{down_port}/mcp",
                "headers": {"X-Downstream-Key": "configured-for-web"},
            },
        }
        (tmp / "servers.json").write_text(json.dumps({"mcpServers": servers}))
        (tmp / "toolroute.toml").write_text(
            f'[toolroute]\nstore = "{tmp / "store"}"\ncall_gate = "client"\n'
            '[auth.clients.alice]\ntoken_env = "TR_TEST_ALICE"\nservers = ["time"]\n'
            '[auth.clients.bob]\ntoken_env = "TR_TEST_BOB"\ntools = ["web__*"]\n'
            '[auth.clients.carol]\ntoken_env = "TR_TEST_CAROL"\n'
            '[auth.clients.dave]\ntoken_env = "TR_TEST_DAVE"\n'
            '[http]\nallowed_hosts = ["gateway.test:*"]\n'
            'allowed_origins = ["https://app.gateway.test"]\n'
        )
        tokens = {c: secrets.token_urlsafe(24) for c in ("alice", "bob", "carol", "dave")}
        env = {**os.environ, **{f"TR_TEST_{c.upper()}": t for c, t in tokens.items()}}
        stderr = tmp / "serve.err"
        with stderr.open("wb") as err:
            proc = subprocess.Popen(
                [str(TOOLROUTE), "serve", "--config", str(tmp / "servers.json")]
                + ["--transport", "http", "--port", "0"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        try:
            port = _wait_line(stderr, r"listening on http://127\.0\.0\.1:(\d+)/mcp", proc, 180)
            yield Gw(int(port), tokens, headers_log, stderr)
        finally:
            _stop(proc)
    finally:
        _stop(down)


def _post(gw: Gw, headers: dict[str, str], path: str = "/mcp") -> int:
    return post_initialize(gw.port, headers, path)


@asynccontextmanager
async def _client(gw: Gw, who: str | None, **kw: Any) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {gw.tokens[who]}"} if who else {}
    async with create_mcp_http_client(headers) as http:
        transport = streamable_http_client(gw.url, http_client=http)
        async with Client(transport, mode="legacy", **kw) as c:
            yield c


def _names(result: Any) -> list[str]:
    return [c["name"] for c in result.structured_content["candidates"]]


def test_http_serve_prints_its_address_and_listens_on_loopback_only(gw: Gw) -> None:
    lines = [line for line in gw.stderr.read_text().splitlines() if "listening on" in line]
    assert lines == [f"toolroute: listening on http://127.0.0.1:{gw.port}/mcp"]
    with pytest.raises(OSError):  # bound to 127.0.0.1 itself, not every address
        http.client.HTTPConnection("127.0.0.2", gw.port, timeout=5).connect()


@pytest.mark.parametrize("path", ["/mcp", "/status", "/anything"])
def test_foreign_host_gets_421_and_foreign_origin_403_on_every_route(gw: Gw, path: str) -> None:
    token = {"Authorization": f"Bearer {gw.tokens['carol']}"}
    assert _post(gw, {**token, "Host": "evil.example"}, path) == 421
    assert _post(gw, {**token, "Host": f"evil.example:{gw.port}"}, path) == 421
    assert _post(gw, {**token, "Host": f"127.0.0.1.evil.example:{gw.port}"}, path) == 421
    assert _post(gw, {**token, "Origin": "http://evil.example"}, path) == 403
    assert _post(gw, {**token, "Origin": f"http://evil.example:{gw.port}"}, path) == 403
    assert _post(gw, {**token, "Origin": "null"}, path) == 403
    # DNS rebinding: the page's own origin, resolved to 127.0.0.1, with no token yet: 403 first
    assert _post(gw, {"Origin": "http://attacker.test", "Host": f"127.0.0.1:{gw.port}"}) == 403


@pytest.mark.parametrize("path", ["/mcp", "/status", "/anything"])
def test_missing_or_wrong_bearer_token_gets_401_on_every_route(gw: Gw, path: str) -> None:
    alice = gw.tokens["alice"]
    for headers in (
        {},
        {"Authorization": ""},
        {"Authorization": "Bearer "},
        {"Authorization": f"Basic {alice}"},
        {"Authorization": f"Bearer {alice[:-1]}"},
        {"Authorization": f"Bearer {alice}x"},
        {"Authorization": f"Bearer {alice.upper()}"},
        {"Authorization": "Bearer " + secrets.token_urlsafe(24)},
    ):
        assert _post(gw, headers, path) == 401, headers


def test_configured_host_and_origin_with_a_token_are_served(gw: Gw) -> None:
    token = {"Authorization": f"Bearer {gw.tokens['carol']}"}
    assert _post(gw, token) == 200
    assert _post(gw, {**token, "Host": f"gateway.test:{gw.port}"}) == 200
    assert _post(gw, {**token, "Origin": "https://app.gateway.test"}) == 200
    assert _post(gw, {**token, "Origin": f"http://localhost:{gw.port}"}) == 200
    assert _post(gw, {"Authorization": f"bearer {gw.tokens['bob']}"}) == 200
    assert _post(gw, token, "/anything") == 404  # past the guard, no such route


def test_downstream_server_never_receives_the_clients_authorization_header(gw: Gw) -> None:
    async def main() -> None:
        with anyio.fail_after(60):
            async with _client(gw, "bob") as c:
                found = await c.call_tool("find_tools", {"query": "whisper a message", "k": 3})
                assert "web__whisper" in _names(found)
                r = await c.call_tool(
                    "call_tool", {"name": "web__whisper", "arguments": {"text": "psst"}}
                )
                assert not r.is_error and "whispered: psst" in r.content[0].text  # type: ignore[union-attr]

    anyio.run(main)
    received = [json.loads(line) for line in gw.headers_log.read_text().splitlines()]
    assert received, "the downstream server recorded no request"
    assert all(h.get("x-downstream-key") == "configured-for-web" for h in received)
    assert not any("authorization" in h for h in received)
    dump = json.dumps(received)
    assert not any(token in dump for token in gw.tokens.values())


def test_allow_lists_filter_find_tools_and_are_rechecked_on_call(gw: Gw) -> None:
    async def main() -> None:
        with anyio.fail_after(60):
            async with _client(gw, "alice") as alice:  # servers = ["time"]
                for query in ("whisper a message", "what time is it in Tokyo"):
                    r = await alice.call_tool("find_tools", {"query": query, "k": 10})
                    names = _names(r)
                    assert names and all(n.startswith("time__") for n in names)
                    assert all(
                        g["name"].startswith("time__") for g in r.structured_content["gated_out"]
                    )
                r = await alice.call_tool(
                    "call_tool", {"name": "web__whisper", "arguments": {"text": "x"}}
                )
                assert r.is_error and r.structured_content["error"] == "unknown_tool"
                assert all(n.startswith("time__") for n in r.structured_content["closest"])
                r = await alice.call_tool("call_tool", NOW_IN_TOKYO)
                assert not r.is_error
            async with _client(gw, "bob") as bob:  # tools = ["web__*"]
                r = await bob.call_tool("find_tools", {"query": "what time is it in Tokyo"})
                assert all(n.startswith("web__") for n in _names(r))
                r = await bob.call_tool("call_tool", NOW_IN_TOKYO)
                assert r.is_error and r.structured_content["error"] == "unknown_tool"
                r = await bob.call_tool("request_capability", {"need": "the current time"})
                assert all(
                    c["name"].startswith("web__") for c in r.structured_content["candidates"]
                )
            async with _client(gw, "carol") as carol:  # no list: every tool
                r = await carol.call_tool("find_tools", {"query": "time in Tokyo or whisper"})
                assert {n.split("__")[0] for n in _names(r)} == {"time", "web"}

    anyio.run(main)


@needs_npm
@pytest.mark.skipif(
    not INSPECTOR.exists(), reason="npm MCP Inspector missing (.ci/run installs it)"
)
def test_client_scope_keeps_promotions_across_inspector_cli_processes(gw: Gw) -> None:
    def inspector(tool: str, *args: str, error: bool = False) -> dict[str, Any]:
        out = subprocess.run(
            [str(INSPECTOR), "--cli", gw.url, "--transport", "http"]
            + ["--header", f"Authorization: Bearer {gw.tokens['dave']}"]
            + ["--method", "tools/call", "--tool-name", tool, "--tool-arg", *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert out.returncode == (5 if error else 0), out.stderr[-2000:]  # 5: isError
        result: dict[str, Any] = json.loads(out.stdout)
        return result

    call = ["name=time__get_current_time", 'arguments={"timezone": "Asia/Tokyo"}']
    refused = inspector(
        "call_tool", *call, error=True
    )  # one process = one session: nothing promoted
    assert refused["isError"] and "tool_not_available" in refused["content"][0]["text"]
    found = inspector("find_tools", "query=what time is it in Tokyo", "k=2")
    assert "time__get_current_time" in found["content"][0]["text"]
    done = inspector("call_tool", *call)  # a third process: the promotion is dave's
    assert not done.get("isError") and "Asia/Tokyo" in done["content"][0]["text"]


def _time_only(tmp_path: Path, toml: str, **more: Any) -> Any:
    servers = {"time": {"command": sys.executable, "args": ["-c", TIME_MAIN, "y"]}, **more}
    (tmp_path / "servers.json").write_text(json.dumps({"mcpServers": servers}))
    (tmp_path / "toolroute.toml").write_text(
        f'[toolroute]\nstore = "{tmp_path / "store"}"\n' + toml
    )
    return load_config(tmp_path / "servers.json")


def test_client_scope_without_tokens_keys_on_the_header_else_the_client_name(
    tmp_path: Path, onnx: OnnxEmbedder
) -> None:
    """No [auth]: the X-Toolroute-Client header names the client; without it, clientInfo.name."""
    cfg = _time_only(tmp_path, 'call_gate = "client"\n')

    async def main() -> None:
        async with http_gateway(cfg, onnx) as (url, _):

            def client(header: str | None, name: str) -> Any:
                return client_as(url, {"X-Toolroute-Client": header} if header else {}, name)

            async def call(header: str | None, name: str) -> str | None:
                async with client(header, name) as c:
                    r = await c.call_tool("call_tool", NOW_IN_TOKYO)
                    return r.structured_content["error"] if r.is_error else None  # type: ignore[index]

            with anyio.fail_after(60):
                assert await call("agent-1", "same") == "tool_not_available"
                async with client("agent-1", "same") as c:
                    await c.call_tool("find_tools", {"query": "what time is it in Tokyo", "k": 2})
                assert await call("agent-1", "other-name") is None  # same header
                assert await call("agent-2", "same") == "tool_not_available"
                assert await call(None, "inspector") == "tool_not_available"
                async with client(None, "inspector") as c:
                    await c.call_tool("find_tools", {"query": "what time is it in Tokyo", "k": 2})
                assert await call(None, "inspector") is None  # same clientInfo.name
                assert await call(None, "someone-else") == "tool_not_available"

    anyio.run(main)


def test_bound_tools_follow_each_clients_allow_list(
    tmp_path: Path, onnx: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """expose = "bind": a tool another client's find_tools bound is not in a restricted
    client's tools/list, and calling it by name is refused."""
    tokens = {c: secrets.token_urlsafe(24) for c in ("alice", "carol")}
    for c, t in tokens.items():
        monkeypatch.setenv(f"TR_BIND_{c.upper()}", t)
    recorder = REPO / "tests" / "fixtures" / "recording_server.py"
    cfg = _time_only(
        tmp_path,
        'expose = "bind"\n'
        '[auth.clients.alice]\ntoken_env = "TR_BIND_ALICE"\nservers = ["time"]\n'
        '[auth.clients.carol]\ntoken_env = "TR_BIND_CAROL"\n',
        rec={"command": sys.executable, "args": [str(recorder), str(tmp_path / "rec.jsonl")]},
    )

    async def main() -> None:
        async with http_gateway(cfg, onnx) as (url, _):
            with anyio.fail_after(60):
                carol = client_as(url, {"Authorization": f"Bearer {tokens['carol']}"})
                alice = client_as(url, {"Authorization": f"Bearer {tokens['alice']}"})
                async with carol as c, alice as a:
                    r = await c.call_tool("find_tools", {"query": "stamp a label on a parcel"})
                    assert "rec__stamp" in _names(r)
                    assert "rec__stamp" in {t.name for t in (await c.list_tools()).tools}
                    assert "rec__stamp" not in {t.name for t in (await a.list_tools()).tools}
                    r = await a.call_tool("rec__stamp", {"label": "mine"})
                    assert r.is_error and r.structured_content["error"] == "unknown_tool"  # type: ignore[index]
                    r = await c.call_tool("rec__stamp", {"label": "carol's"})
                    assert not r.is_error
        received = [json.loads(line) for line in (tmp_path / "rec.jsonl").read_text().splitlines()]
        assert received == [{"name": "stamp", "arguments": {"label": "carol's"}}]

    anyio.run(main)


def _raw(
    gw: Gw, method: str, who: str, session: str | None = None, body: Any = None
) -> tuple[int, dict[str, str], bytes]:
    """One request as ``who`` (on ``session``); for a GET stream only the status is read."""
    conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=30)
    headers = {
        "Authorization": f"Bearer {gw.tokens[who]}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2025-11-25",
    }
    if session is not None:
        headers["Mcp-Session-Id"] = session
    try:
        conn.request(
            method, "/mcp", body=None if body is None else json.dumps(body), headers=headers
        )
        response = conn.getresponse()
        data = b"" if method == "GET" and response.status == 200 else response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, data
    finally:
        conn.close()


def test_a_session_answers_only_the_token_that_opened_it(gw: Gw) -> None:
    """Bob, with his own valid token and Alice's session id, can neither ping her session, open
    its GET stream, answer a request relayed to her (a JSON-RPC response), nor DELETE it: each
    is 404 as for an unknown session, and her session goes on."""
    status, headers, _ = _raw(gw, "POST", "alice", body=RAW_INITIALIZE)
    assert status == 200
    session = headers["mcp-session-id"]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert _raw(gw, "POST", "alice", session, note)[0] == 202
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    forged = {"jsonrpc": "2.0", "id": 0, "result": {"action": "accept", "content": {"ok": True}}}
    assert _raw(gw, "POST", "bob", session, ping)[0] == 404
    assert _raw(gw, "POST", "bob", session, forged)[0] == 404
    assert _raw(gw, "GET", "bob", session)[0] == 404
    assert _raw(gw, "DELETE", "bob", session)[0] == 404
    assert _raw(gw, "POST", "alice", session, ping)[0] == 200  # hers, still open
    assert _raw(gw, "DELETE", "alice", session)[0] == 200
    assert _raw(gw, "POST", "alice", session, ping)[0] == 404  # and now gone


def _get(gw: Gw, who: str, path: str) -> str:
    conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=30)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {gw.tokens[who]}"})
        response = conn.getresponse()
        assert response.status == 200
        return response.read().decode()
    finally:
        conn.close()


def test_the_status_page_shows_a_client_only_what_its_allow_list_allows(gw: Gw) -> None:
    async def route() -> None:  # a routing decision of carol's that names web's tools
        with anyio.fail_after(60):
            async with _client(gw, "carol") as c:
                await c.call_tool("find_tools", {"query": "whisper a message"})

    anyio.run(route)
    everything = json.loads(_get(gw, "carol", "/status.json"))
    assert {s["name"] for s in everything["servers"]} == {"time", "web"}
    assert everything["events"]
    alice = json.loads(_get(gw, "alice", "/status.json"))  # servers = ["time"]
    assert [s["name"] for s in alice["servers"]] == ["time"]
    assert alice["events"] == [] and alice["tool_count"] == len(alice["servers"][0]["tools"])
    page = _get(gw, "alice", "/status")
    assert "web" not in page.replace("webkit", "") and "whisper" not in page
    bob = json.loads(_get(gw, "bob", "/status.json"))  # tools = ["web__*"]
    assert [s["name"] for s in bob["servers"]] == ["web"] and bob["events"] == []
