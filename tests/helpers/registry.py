"""An MCP registry the tests run on loopback, as an organization runs its own: ``GET
/v0.1/servers`` (``limit``, ``cursor``, ``search``, ``version``) over real ``server.json``
entries (benchmarks/registry/servers.json), with an ETag, and the ways a registry can lie or
fail switched on per test (:class:`Registry.mode`)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

LISTING = Path(__file__).parents[2] / "benchmarks" / "registry" / "servers.json"
"""Real registry entries (benchmarks/registry_data.py says where each comes from)."""


def real_entries() -> list[dict[str, Any]]:
    return list(json.loads(LISTING.read_text(encoding="utf-8")))


def entry_named(name: str) -> dict[str, Any]:
    return next(e for e in real_entries() if e["server"]["name"] == name)


@dataclass
class Registry:
    """What the loopback registry serves and how."""

    entries: list[dict[str, Any]] = field(default_factory=real_entries)
    mode: str = "ok"
    """``ok``; ``endless`` (a new cursor every page), ``loop`` (the same cursor again),
    ``huge`` (a body of many MB), ``drip`` (one byte at a time, slowly), ``slow`` (no
    answer for a long time), ``status`` (HTTP 503), ``notjson``, ``redirect``, ``shape``."""
    requests: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    @property
    def etag(self) -> str:
        return '"' + hashlib.sha256(json.dumps(self.entries).encode()).hexdigest()[:16] + '"'


def _handler(reg: Registry) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes, **headers: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for k, v in headers.items():
                self.send_header(k.replace("_", "-"), v)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            reg.requests.append(self.path)
            url = urlsplit(self.path)
            q = {k: v[0] for k, v in parse_qs(url.query).items()}
            if url.path != "/v0.1/servers":
                return self._send(404, b'{"error": "not found"}')
            if reg.mode == "slow":
                reg.stop.wait(60)
                return None
            if reg.mode == "status":
                return self._send(503, b'{"error": "unavailable"}')
            if reg.mode == "notjson":
                return self._send(200, b"<html>maintenance</html>")
            if reg.mode == "shape":
                return self._send(200, b'{"items": []}')
            if reg.mode == "redirect":
                self.send_response(302)
                self.send_header("Location", "http://evil.example/v0.1/servers")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            if reg.mode == "huge":
                pad = {"server": {"name": "io.example/x", "description": "x" * 60, "version": "1"}}
                chunk = json.dumps(pad).encode() + b","
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                try:
                    self.wfile.write(b'{"servers": [')
                    for _ in range(200_000):  # ~25 MB unless the client hangs up first
                        self.wfile.write(chunk)
                except OSError:
                    pass
                return None
            if reg.mode == "drip":
                body = json.dumps({"servers": reg.entries[:2]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    for b in body:
                        if reg.stop.wait(0.2):
                            return None
                        self.wfile.write(bytes([b]))
                        self.wfile.flush()
                except OSError:
                    pass
                return None
            if self.headers.get("If-None-Match") == reg.etag and reg.mode == "ok":
                self.send_response(304)
                self.send_header("ETag", reg.etag)
                self.end_headers()
                return None
            limit = int(q.get("limit", "30"))
            cursor = q.get("cursor", "0")
            start = int(cursor) if cursor.isdigit() else 0
            rows = reg.entries
            if "search" in q:
                rows = [e for e in rows if q["search"] in e["server"]["name"]]
            page = rows[start : start + limit]
            nxt = str(start + limit) if start + limit < len(rows) else None
            if reg.mode == "endless":
                page, nxt = rows[:limit], str(start + limit)
            if reg.mode == "loop":
                page, nxt = rows[:limit], "again"
            meta: dict[str, Any] = {"count": len(page)}
            if nxt is not None:
                meta["nextCursor"] = nxt
            body = json.dumps({"servers": page, "metadata": meta}).encode()
            self._send(200, body, ETag=reg.etag)
            return None

    return Handler


@contextmanager
def serve_registry(reg: Registry | None = None) -> Iterator[tuple[str, Registry]]:
    """The registry on 127.0.0.1 (a free port): its base URL and its state."""
    reg = reg if reg is not None else Registry()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(reg))
    server.daemon_threads = True
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", reg
    finally:
        reg.stop.set()
        server.shutdown()
        server.server_close()
