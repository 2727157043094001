"""Loopback ports for the processes a test starts."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio

from tests.conftest import RAW_INITIALIZE


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def wait_for_port(
    port: int, proc: subprocess.Popen[bytes], timeout_s: float, log: Path | None = None
) -> None:
    """Until ``proc`` accepts connections on ``port`` (``timeout_s`` at most); fails at once,
    with ``log``'s text when given, if the process exits first."""
    with anyio.fail_after(timeout_s):
        while True:
            try:
                stream = await anyio.connect_tcp("127.0.0.1", port)
            except OSError:
                if proc.poll() is not None:
                    why = log.read_text() if log is not None else f"exit code {proc.returncode}"
                    raise RuntimeError(f"toolroute serve exited: {why}") from None
                await anyio.sleep(0.1)
            else:
                await stream.aclose()
                return


def wait_port(port: int, proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    """:func:`wait_for_port` for code with no event loop (the conformance and interop runs):
    until ``proc`` listens on ``port``, ``timeout_s`` at most; fails at once if it exits."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"nothing listened on port {port} within {timeout_s} s")


def stop(proc: subprocess.Popen[bytes], timeout_s: float = 20) -> None:
    """Terminate ``proc`` and reap it (killed if it does not exit within ``timeout_s``)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=timeout_s)


@contextmanager
def http_server(handler: type[BaseHTTPRequestHandler]) -> Iterator[int]:
    """A threaded HTTP server on 127.0.0.1 (a free port) answering with ``handler``; yields its
    port and stops it on exit. Its loop polls every 20 ms, not ``serve_forever``'s default
    0.5 s, so stopping it costs a test next to nothing."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02})
    thread.daemon = True
    thread.start()
    try:
        yield int(httpd.server_address[1])
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


class Denying(BaseHTTPRequestHandler):
    """Answers 401 with a Bearer challenge to every GET, POST and DELETE."""

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


@contextmanager
def denying_server(handler: type[BaseHTTPRequestHandler] = Denying) -> Iterator[str]:
    """A loopback HTTP server answering 401 to every request (or as ``handler`` does)."""
    with http_server(handler) as port:
        yield f"http://127.0.0.1:{port}/mcp"


def post_initialize(port: int, headers: dict[str, str], path: str = "/mcp") -> int:
    """The HTTP status of one raw 2025-11-25 initialize POST to a loopback gateway."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(
            "POST",
            path,
            body=json.dumps(RAW_INITIALIZE),
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                **headers,
            },
        )
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()
