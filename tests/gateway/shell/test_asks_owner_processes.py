"""A server's question during a call reaches the client whose call it is, with another client's
call in flight on the same server: a real `toolroute` HTTP gateway (the app served on loopback)
in front of real stdio servers (tests/fixtures/questioning_server.py). A 2026-07-28 server's
input-required result answers one call, so its question goes to that call's client; the
sessions of one token are one client; a 2025 stdio server's pushed question during calls of two
clients still reaches neither (its request names no call)."""

from __future__ import annotations

import secrets
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest

from tests.conftest import REPO, HashingEmbedder
from tests.helpers.gateways import client_as, http_gateway
from tests.helpers.relay import relay_config
from toolroute.config import load_config

pytestmark = pytest.mark.integration

SERVER = REPO / "tests" / "fixtures" / "questioning_server.py"


def _config(tmp: Path, era: str, tokens: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Any:
    spec = {"command": sys.executable, "args": [str(SERVER), era, str(tmp)]}
    path = relay_config(tmp, {"q": spec}, "all")
    with (tmp / "toolroute.toml").open("a") as f:
        for client, token in tokens.items():
            monkeypatch.setenv(f"TR_ASK_{client.upper()}", token)
            f.write(f'[auth.clients.{client}]\ntoken_env = "TR_ASK_{client.upper()}"\n')
    return load_config(path)


def _answers(name: str) -> Callable[..., Any]:
    async def elicitation(ctx: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"name": name})

    return elicitation


def _text(result: types.CallToolResult) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def _ask_while_held(
    url: str, holder: dict[str, str], asker: dict[str, str], tmp: Path
) -> str:
    """``asker`` calls ask_name while ``holder``'s call of hold is in flight on the same
    server; the answer ``asker`` got (hold is released afterwards)."""
    with anyio.fail_after(60):
        async with (
            client_as(url, holder, "holder", elicitation_callback=_answers("holder")) as h,
            client_as(url, asker, "asker", elicitation_callback=_answers("asker")) as a,
        ):
            held: dict[str, str] = {}

            async def hold() -> None:
                held["text"] = _text(await h.call_tool("hold", {}))

            async with anyio.create_task_group() as tg:
                tg.start_soon(hold)
                await anyio.sleep(0.3)  # an unrelated call in flight first
                try:
                    return _text(await a.call_tool("ask_name", {}))
                finally:
                    (tmp / "go").touch()
    raise AssertionError("unreachable")


def test_an_input_required_question_goes_to_its_callers_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tokens = {"alice": secrets.token_urlsafe(24), "bob": secrets.token_urlsafe(24)}
    cfg = _config(tmp_path, "2026", tokens, monkeypatch)

    async def main() -> str:
        async with http_gateway(cfg, HashingEmbedder()) as (url, _):
            alice = {"Authorization": f"Bearer {tokens['alice']}"}
            bob = {"Authorization": f"Bearer {tokens['bob']}"}
            return await _ask_while_held(url, alice, bob, tmp_path)

    assert anyio.run(main) == "Hello, asker"


def test_the_sessions_of_one_token_are_one_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tokens = {"alice": secrets.token_urlsafe(24), "carol": secrets.token_urlsafe(24)}
    cfg = _config(tmp_path, "2025", tokens, monkeypatch)
    alice = {"Authorization": f"Bearer {tokens['alice']}"}
    carol = {"Authorization": f"Bearer {tokens['carol']}"}

    async def main() -> tuple[str, str]:
        async with http_gateway(cfg, HashingEmbedder()) as (url, _):
            same = await _ask_while_held(url, alice, alice, tmp_path)
            (tmp_path / "go").unlink()
            other = await _ask_while_held(url, carol, alice, tmp_path)
            return same, other

    same, other = anyio.run(main)
    assert same == "Hello, asker"  # two sessions of alice's token: one client
    # carol's call in flight: the pushed question could be either's, so it reaches neither
    assert other.startswith("refused") and "holder" not in other
