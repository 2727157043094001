"""toolroute/sdk.py is the one place that uses names the MCP SDK does not export, so an SDK
upgrade is checked against one file (pyproject bounds mcp to the minor it was tested on)."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "toolroute"
PRIVATE = re.compile(
    r"^\s*(from\s+mcp[\w.]*\._\w+|from\s+mcp[\w.]*\s+import\s+.*\b_\w+|import\s+mcp[\w.]*\._)"
    r"|\._connection\b|\._stamp\b",
    re.M,
)


def test_only_the_sdk_module_reaches_into_the_sdks_private_names() -> None:
    offenders = [
        f"{path.relative_to(SRC)}:{text[: m.start()].count(chr(10)) + 1}"
        for path in sorted(SRC.rglob("*.py"))
        if path.name != "sdk.py"
        for text in [path.read_text()]
        for m in PRIVATE.finditer(text)
    ]
    assert offenders == []


def test_the_pattern_catches_a_private_import() -> None:
    assert PRIVATE.search("from mcp.server._otel import OpenTelemetryMiddleware")
    assert PRIVATE.search("from mcp.client.stdio import _stop_server_process, x")
    assert PRIVATE.search("session = ctx.session._connection")
    assert not PRIVATE.search("from mcp.server.runner import serve_loop")
