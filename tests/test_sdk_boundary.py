"""toolroute/sdk.py is the one place that uses names the MCP SDK does not export, so an SDK
upgrade is checked against one file (pyproject bounds mcp to the minor it was tested on)."""

from __future__ import annotations

import dataclasses
import re

from tests.conftest import REPO

SRC = REPO / "src" / "toolroute"
PRIVATE = re.compile(
    r"^\s*(from\s+mcp[\w.]*\._\w+|from\s+mcp[\w.]*\s+import\s+.*\b_\w+|import\s+mcp[\w.]*\._)"
    r"|\._connection\b|\._stamp\b|\bsuper\(\)\._[a-z]\w*",
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
    assert PRIVATE.search("        await super()._handle_token_response(response)")
    assert not PRIVATE.search("from mcp.server.runner import serve_loop")
    assert not PRIVATE.search("        super().__init__(inner)")


def test_the_private_oauth_methods_and_fields_the_sdk_module_overrides_are_in_the_sdk() -> None:
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.auth.oauth2 import OAuthContext

    from toolroute.sdk import EarlyRefreshProvider

    ours = {"_keep_discovery", "_early"}
    overridden = {
        name
        for name, value in vars(EarlyRefreshProvider).items()
        if callable(value) and name.startswith("_") and not name.startswith("__")
    }
    assert overridden - ours == {
        "_initialize",
        "_handle_token_response",
        "_handle_refresh_response",
    }
    assert all(callable(getattr(OAuthClientProvider, name, None)) for name in overridden - ours)
    assert not ours & set(dir(OAuthClientProvider))  # our helpers shadow nothing of the SDK's
    fields = {f.name for f in dataclasses.fields(OAuthContext)}
    used = {
        "current_tokens",
        "token_expiry_time",
        "oauth_metadata",
        "protected_resource_metadata",
        "auth_server_url",
    }
    assert used <= fields
