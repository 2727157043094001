"""Shared fixtures: a tiny catalog, a deterministic embedder for fast unit tests, ../shared;
and, for the tests that start real processes (``integration`` marker), the real model, one
store, one served gateway and one PostgreSQL server per session."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from toolroute.embed.base import Matrix, l2_normalise
from toolroute.index.document import tokenise

if TYPE_CHECKING:
    from tests.helpers.status import Served
    from toolroute.embed.onnx import OnnxEmbedder
    from toolroute.store.local_pg import LocalPostgres

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TOOLROUTE_SHARED", REPO.parent / "shared"))
BENCHMARKS = SHARED / "benchmarks"
NPM_MODULES = REPO / ".toolroute" / "npm" / "node_modules"
"""Where `.ci/run` installs the npm reference MCP servers."""
MEMORY_JS = NPM_MODULES / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
NPM_SERVERS = {
    "memory": MEMORY_JS,
    "filesystem": NPM_MODULES / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js",
    "everything": NPM_MODULES / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js",
}
"""The npm reference servers' entry points (run with ``node``)."""
INSPECTOR = NPM_MODULES / ".bin" / "mcp-inspector"
"""The MCP Inspector CLI."""
TOOLROUTE = Path(sys.executable).with_name("toolroute")
"""The ``toolroute`` console script of the running venv."""
needs_npm = pytest.mark.skipif(
    shutil.which("node") is None or not all(p.is_file() for p in NPM_SERVERS.values()),
    reason="node or the npm reference servers are missing (bash .ci/run installs them)",
)
TIME_MAIN = (
    "import sys; sys.argv[1:] = ['--local-timezone', 'UTC']; "
    "from mcp_server_time import main; main()"
)
"""`python -c TIME_MAIN`: the reference time server (PyPI mcp-server-time) pinned to UTC."""


RAW_INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
"""A 2025-11-25 ``initialize`` request, for tests that speak raw JSON-RPC to the gateway."""


def needs_shared() -> pytest.MarkDecorator:
    return pytest.mark.skipif(
        not (BENCHMARKS / "livemcpbench" / "catalog.json").is_file(),
        reason=f"../shared benchmarks not found at {BENCHMARKS} (set TOOLROUTE_SHARED)",
    )


class HashingEmbedder:
    """Bag-of-words hashed into 256 dims: deterministic and fast, for unit tests only.

    It counts calls so tests can check what the cache let through.
    """

    model_id = "test/hashing-256"
    dim = 256

    def __init__(self) -> None:
        self.calls: list[str] = []

    def embed(self, texts: Sequence[str]) -> Matrix:
        self.calls.extend(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for tok in tokenise(t) or ["<empty>"]:
                h = int(hashlib.md5(tok.encode()).hexdigest()[:8], 16)
                out[i, h % self.dim] += 1.0
        return l2_normalise(out)


def tool(name: str, description: str, props: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "input_schema": {"type": "object", "properties": props or {}},
    }


SMALL_CATALOG: dict[str, Any] = {
    "servers": [
        {
            "id": "time",
            "name": "Time",
            "description": "Current time and timezone conversion",
            "tools": [
                tool(
                    "get_current_time",
                    "Get the current time in a timezone",
                    {"timezone": {"type": "string", "description": "IANA timezone"}},
                ),
                tool("convert_time", "Convert a time between timezones"),
            ],
        },
        {
            "id": "fs",
            "name": "Filesystem",
            "description": "",
            "tools": [
                tool(
                    "read_file",
                    "Read the contents of a file from disk",
                    {"path": {"type": "string"}},
                ),
                tool("write_file", "Write text content to a file on disk"),
                tool("list_directory", "List files in a directory"),
            ],
        },
        {
            "id": "weather",
            "name": "Weather",
            "description": "Forecasts and alerts",
            "tools": [
                tool("get_forecast", "Weather forecast for a city"),
                tool("get_alerts", "Severe weather alerts for a US state"),
            ],
        },
    ]
}


@pytest.fixture(scope="session")
def research_variants() -> None:
    """The benchmarks' research variants (ehrr-*, adaptive-*, pa-rag-*, baseline-*, ...),
    registered as ``--plugin benchmarks/variants.py`` registers them."""
    from benchmarks.variants import register_strategies

    register_strategies()


@pytest.fixture
def catalog_file(tmp_path: Path) -> Path:
    p = tmp_path / "catalog.json"
    p.write_text(json.dumps(SMALL_CATALOG), encoding="utf-8")
    return p


@pytest.fixture
def queries_file(tmp_path: Path) -> Path:
    rows = [
        {
            "id": "q1",
            "query": "what time is it in Paris",
            "relevant": [{"server": "time", "tool": "get_current_time"}],
        },
        {
            "id": "q2",
            "query": "read the file notes.txt and then write a summary file",
            "relevant_groups": [
                [{"server": "fs", "tool": "read_file"}],
                [{"server": "fs", "tool": "write_file"}],
            ],
        },
        {
            "id": "q3",
            "query": "weather forecast for Berlin",
            "relevant": [{"server": "weather", "tool": "get_forecast"}],
        },
    ]
    p = tmp_path / "queries.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return p


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder()


def read_json(handler: BaseHTTPRequestHandler) -> Any:
    """The JSON body of the request ``handler`` is serving."""
    return json.loads(handler.rfile.read(int(handler.headers["Content-Length"])))


def reply_json(handler: BaseHTTPRequestHandler, status: int, body: object) -> None:
    """Answer the request ``handler`` is serving with ``body`` as JSON."""
    payload = json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(payload)))
    handler.end_headers()
    handler.wfile.write(payload)


@contextmanager
def loopback_http(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 (a free port) with ``handler``; yields its /v1 base URL."""
    from tests.helpers.net import http_server

    with http_server(handler) as port:
        yield f"http://127.0.0.1:{port}/v1"


@pytest.fixture(scope="session")
def onnx() -> OnnxEmbedder:
    from toolroute.embed.onnx import OnnxEmbedder

    return OnnxEmbedder()


@pytest.fixture(scope="session")
def shared_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One store for the session: the embedding cache is shared by every benchmark test."""
    return tmp_path_factory.mktemp("store")


@pytest.fixture(scope="session")
def status_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One `toolroute serve --transport http` (no auth) after one agent turn, for the tests
    that only read its status page (test_status_page, test_browser)."""
    from tests.helpers.status import serving_gateway

    with serving_gateway(tmp_path_factory.mktemp("status-gateway")) as served:
        yield served


@pytest.fixture(scope="session")
def pg() -> Iterator[LocalPostgres]:
    """One real PostgreSQL server for the session (the machine's initdb/pg_ctl, loopback, a
    free port, stopped at the end); each test makes its own database. No fsync: the tests kill
    gateways, never the database server, and a shared CI disk makes each fsync slow."""
    from toolroute.store.local_pg import LocalPostgres, postgres_bin_dir

    if postgres_bin_dir() is None:
        pytest.skip("PostgreSQL's initdb/pg_ctl not found (bash .ci/run installs postgresql)")
    with LocalPostgres(settings={"fsync": "off", "synchronous_commit": "off"}) as server:
        yield server
