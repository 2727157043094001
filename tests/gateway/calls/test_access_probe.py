"""A restricted client probing other servers' resources and prompts (issue 23): a name another
server holds and a name nobody holds get the same error, code and message shape, so an
allow-list hides what exists beyond it."""

from __future__ import annotations

import secrets
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from tests.helpers.relay import conformance_servers as _conformance
from tests.helpers.relay import relay_config as _config
from toolroute.config import load_config

pytestmark = pytest.mark.integration


async def _refusal(ask: Callable[[], Awaitable[Any]]) -> tuple[int, str]:
    with pytest.raises(MCPError) as caught:
        await ask()
    return caught.value.code, caught.value.message


def test_a_restricted_client_cannot_tell_another_servers_resource_or_prompt_from_none(
    tmp_path: Path, onnx: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.conftest import TIME_MAIN
    from tests.helpers.gateways import client_as, http_gateway

    token = secrets.token_urlsafe(24)
    monkeypatch.setenv("TR_PROBE_ALICE", token)
    servers = {"time": {"command": sys.executable, "args": ["-c", TIME_MAIN, "r"]}}
    path = _config(tmp_path, {**servers, **_conformance()}, "all")
    with (tmp_path / "toolroute.toml").open("a") as f:
        f.write('[auth.clients.alice]\ntoken_env = "TR_PROBE_ALICE"\nservers = ["time"]\n')
    cfg = load_config(path)

    async def main() -> None:
        async with http_gateway(cfg, onnx) as (url, _):
            with anyio.fail_after(60):
                async with client_as(url, {"Authorization": f"Bearer {token}"}) as a:
                    held = "test://static-text"  # the conformance server's, not alice's
                    code, said = await _refusal(lambda: a.read_resource(held))
                    none = await _refusal(lambda: a.read_resource("test://no-such-text"))
                    assert (code, said.replace(held, "URI")) == (
                        none[0],
                        none[1].replace("test://no-such-text", "URI"),
                    )
                    held = "test_simple_prompt"
                    code, said = await _refusal(lambda: a.get_prompt(held))
                    none = await _refusal(lambda: a.get_prompt("no_such_prompt"))
                    assert (code, said.replace(held, "NAME")) == (
                        none[0],
                        none[1].replace("no_such_prompt", "NAME"),
                    )

    anyio.run(main)
