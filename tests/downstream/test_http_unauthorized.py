"""A ``url`` server that answers 401: its status says it needs credentials and where they go,
not the SDK's "Server returned an error response"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.helpers.faults import config
from tests.helpers.net import Denying as _Denying
from tests.helpers.net import denying_server
from toolroute.downstream.servers import DownstreamError
from toolroute.downstream.sync import list_all
from toolroute.gateway.ops.app import running_downstreams

pytestmark = pytest.mark.integration


class _ExpiringToken(_Denying):
    """Speaks just enough MCP (JSON replies) to connect and list one tool, then answers
    tools/call with 401: a token that expired after the session opened."""

    def do_POST(self) -> None:
        msg = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        if "id" not in msg:  # a notification
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if msg["method"] == "tools/call":
            self.headers.replace_header("content-length", "0")
            return self._deny()
        result: dict[str, Any] = {}
        if msg["method"] == "initialize":
            result = {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "expiring", "version": "1"},
            }
        elif msg["method"] == "tools/list":
            result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": msg["id"], "result": result}
        if msg["method"] not in ("initialize", "tools/list", "ping"):
            reply = {"jsonrpc": "2.0", "id": msg["id"]}
            reply["error"] = {"code": -32601, "message": "Method not found"}
        body = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # no server-to-client stream
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:  # the test reads statuses, not access logs
        pass


@pytest.mark.parametrize("sse", [False, True])
@pytest.mark.parametrize("headers", [None, {"Authorization": "Bearer stale"}])
def test_a_url_server_answering_401_is_reported_as_needing_credentials(
    tmp_path: Path, headers: dict[str, str] | None, sse: bool
) -> None:
    with denying_server() as url:
        entry: dict[str, Any] = {"url": url}
        if headers:
            entry["headers"] = headers
        if sse:
            entry["type"] = "sse"
        cfg = config(tmp_path, {"locked": entry}, connect_timeout_s=10)

        async def main() -> None:
            with anyio.fail_after(30):
                async with running_downstreams(cfg) as downstreams:
                    got = (await list_all(downstreams, 10, ["locked"]))["locked"]
                    assert isinstance(got, DownstreamError)
                    assert downstreams["locked"].status == "down"
                    why = str(downstreams["locked"].error)
                    assert why.startswith("unauthorized (HTTP 401): "), why
                    assert '"headers"' in why and "Authorization" in why
                    if headers:
                        assert "refused the credentials" in why
                    assert why in str(got.detail)

        anyio.run(main)


def test_a_call_refused_with_401_after_connecting_names_the_credentials(tmp_path: Path) -> None:
    with denying_server(_ExpiringToken) as url:
        cfg = config(tmp_path, {"expiring": {"url": url, "headers": {"Authorization": "B t"}}})

        async def main() -> None:
            with anyio.fail_after(30):
                async with running_downstreams(cfg) as downstreams:
                    d = downstreams["expiring"]
                    assert d.status == "up", d.error
                    with pytest.raises(DownstreamError) as refused:
                        await d.call_tool("echo", {})
                    assert str(refused.value.detail).startswith("unauthorized (HTTP 401): ")

        anyio.run(main)
