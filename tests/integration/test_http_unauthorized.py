"""A ``url`` server that answers 401: its status says it needs credentials and where they go,
not the SDK's "Server returned an error response"."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.integration.test_faults import config
from toolroute.gateway.app import running_pool
from toolroute.sources.pool import DownstreamError
from toolroute.sources.sync import list_all

pytestmark = pytest.mark.integration


class _Denying(BaseHTTPRequestHandler):
    def _deny(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = json.dumps({"error": "invalid_token"}).encode()
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Bearer realm="mcp"')
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = _deny

    def log_message(self, *args: Any) -> None:  # the test reads statuses, not access logs
        pass


@contextmanager
def denying_server() -> Iterator[str]:
    """A loopback HTTP server answering 401 to every request; its MCP URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Denying)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


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
                async with running_pool(cfg) as pool:
                    got = (await list_all(pool, 10, ["locked"]))["locked"]
                    assert isinstance(got, DownstreamError)
                    assert pool["locked"].status == "down"
                    why = str(pool["locked"].error)
                    assert why.startswith("unauthorized (HTTP 401): "), why
                    assert '"headers"' in why and "Authorization" in why
                    if headers:
                        assert "refused the credentials" in why
                    assert why in str(got.detail)

        anyio.run(main)
