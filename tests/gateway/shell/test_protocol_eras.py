"""The routed flow (find_tools, then call_tool on what it returned) for a client of either
protocol era: the official client in its default mode (2026-07-28: no initialize, no session)
and in legacy mode (2025-11-25 handshake), in memory, over `toolroute serve` on stdio and over
streamable HTTP, with the call gate on (its default)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.types import Implementation

from tests.conftest import REPO, TIME_MAIN, TOOLROUTE, HashingEmbedder
from tests.helpers.gateways import GatewayProcess
from toolroute.config import load_config
from toolroute.embed.onnx import OnnxEmbedder
from toolroute.gateway.ops.app import make_gateway, running_downstreams
from toolroute.gateway.ops.syncing import sync_router

pytestmark = pytest.mark.integration

MODES = ["auto", "legacy"]
"""The official client's default mode (negotiates 2026-07-28 here) and the handshake era."""
TOKYO = {"name": "time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}


def _config(tmp_path: Path, toml: str = "") -> Path:
    servers = {"time": {"command": sys.executable, "args": ["-c", TIME_MAIN]}}
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    store = json.dumps(str(tmp_path / "store"))
    (tmp_path / "toolroute.toml").write_text(f"[toolroute]\nstore = {store}\n{toml}")
    return path


async def _find_then_call(c: Client) -> dict[str, Any]:
    """find_tools, then call_tool on the time tool it returned; the call's text as JSON."""
    found = await c.call_tool("find_tools", {"query": "what time is it in Tokyo", "k": 3})
    assert not found.is_error, found
    names = [x["name"] for x in found.structured_content["candidates"]]  # type: ignore[index]
    assert TOKYO["name"] in names
    called = await c.call_tool("call_tool", TOKYO)
    text = called.content[0].text  # type: ignore[union-attr]
    assert not called.is_error, text
    return json.loads(text)  # type: ignore[no-any-return]


@pytest.mark.parametrize("mode", MODES)
def test_a_client_calls_the_tool_find_tools_just_returned_in_memory(
    tmp_path: Path, onnx: OnnxEmbedder, mode: str
) -> None:
    cfg = load_config(_config(tmp_path))

    async def main() -> None:
        async with running_downstreams(cfg) as downstreams:
            router, _ = await sync_router(cfg, downstreams, embedder=onnx)
            gw = make_gateway(cfg, router, downstreams)
            with anyio.fail_after(60):
                async with Client(gw.server, mode=mode) as c:  # type: ignore[arg-type]
                    assert (await _find_then_call(c))["timezone"] == "Asia/Tokyo"
            router.close()

    anyio.run(main)


def test_the_refusal_says_what_to_do_and_never_asks_a_client_that_just_searched_to_search(
    tmp_path: Path, onnx: OnnxEmbedder
) -> None:
    cfg = load_config(_config(tmp_path))
    convert = {"name": "time__convert_time", "arguments": {}}

    async def main() -> None:
        async with running_downstreams(cfg) as downstreams:
            router, _ = await sync_router(cfg, downstreams, embedder=onnx)
            gw = make_gateway(cfg, router, downstreams)
            async with Client(gw.server) as c:
                before = (await c.call_tool("call_tool", TOKYO)).structured_content
                assert before is not None and before["error"] == "tool_not_available"
                assert "has not returned" in before["message"]
                assert "clientInfo.name" in before["hint"] and before["call_gate"] == "client"
                await c.call_tool("find_tools", {"query": "what time is it in Tokyo", "k": 1})
                after = (await c.call_tool("call_tool", convert)).structured_content
                assert after is not None and after["error"] == "tool_not_available"
                assert after["available"] == ["time__get_current_time"]
                assert "first" not in after["message"] and "not among" in after["message"]
            router.close()

    anyio.run(main)


def test_a_promotion_reaches_the_same_client_in_another_gateway_process_only(
    tmp_path: Path, onnx: OnnxEmbedder
) -> None:
    """Two gateways over one store (two processes, or replicas behind a load balancer): a
    client's find_tools on one admits its call_tool on the other, in either protocol era;
    another client is still refused there."""
    cfg = load_config(_config(tmp_path))

    def named(gw: Any, name: str, mode: str = "auto") -> Client:
        info = Implementation(name=name, version="1")
        return Client(gw.server, mode=mode, client_info=info)  # type: ignore[arg-type]

    async def main() -> None:
        async with running_downstreams(cfg) as downstreams:
            router, _ = await sync_router(cfg, downstreams, embedder=onnx)
            first, second = (
                make_gateway(cfg, router, downstreams),
                make_gateway(cfg, router, downstreams),
            )
            with anyio.fail_after(60):
                async with named(first, "agent-a") as c:
                    await c.call_tool("find_tools", {"query": "what time is it in Tokyo"})
                async with named(second, "agent-a") as c:
                    assert not (await c.call_tool("call_tool", TOKYO)).is_error
                async with named(second, "agent-b") as c:
                    r = (await c.call_tool("call_tool", TOKYO)).structured_content
                    assert r is not None and r["error"] == "tool_not_available"
                    assert "agent-b" in r["message"]
                async with named(second, "agent-a", "legacy") as c:
                    assert not (await c.call_tool("call_tool", TOKYO)).is_error
                async with named(second, "agent-b", "legacy") as c:
                    r = (await c.call_tool("call_tool", TOKYO)).structured_content
                    assert r is not None and r["error"] == "tool_not_available"
            router.close()

    anyio.run(main)


def test_client_scope_lets_a_gateway_per_call_client_call_what_the_last_one_found(
    tmp_path: Path, onnx: OnnxEmbedder
) -> None:
    """The Inspector CLI over stdio starts a gateway per call: with the default call gate a
    handshake-era client's promotion outlives the gateway process that made it."""
    cfg = load_config(_config(tmp_path))
    info = Implementation(name="inspector-cli", version="1")

    async def one_process(tool: str, args: dict[str, Any]) -> Any:
        async with running_downstreams(cfg) as downstreams:
            router, _ = await sync_router(cfg, downstreams, embedder=onnx)
            gw = make_gateway(cfg, router, downstreams)
            async with Client(gw.server, mode="legacy", client_info=info) as c:
                result = await c.call_tool(tool, args)
            router.close()
            return result

    async def main() -> None:
        with anyio.fail_after(90):
            await one_process("find_tools", {"query": "what time is it in Tokyo"})
            assert not (await one_process("call_tool", TOKYO)).is_error

    anyio.run(main)


@pytest.fixture(scope="module")
def http_gateway_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One real `toolroute serve --transport http` for the module, call gate on."""
    proc = GatewayProcess(_config(tmp_path_factory.mktemp("http")))
    try:
        anyio.run(proc.ready)
        yield proc.url
    finally:
        proc.stop()


@pytest.mark.parametrize("mode", MODES)
def test_serve_over_http_runs_find_then_call_for_either_era(
    http_gateway_url: str, mode: str
) -> None:
    async def main() -> None:
        with anyio.fail_after(60):
            async with Client(http_gateway_url, mode=mode) as c:  # type: ignore[arg-type]
                assert (await _find_then_call(c))["timezone"] == "Asia/Tokyo"

    anyio.run(main)


def _without_psycopg(tmp_path: Path) -> dict[str, str]:
    """The environment of a plain `pip install .` as far as psycopg goes (an extra): importing
    it fails, as it does there."""
    shadow = tmp_path / "no-extras" / "psycopg"
    shadow.mkdir(parents=True)
    message = "No module named 'psycopg'"
    (shadow / "__init__.py").write_text(f"raise ModuleNotFoundError({message!r})\n")
    paths = [str(shadow.parent), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


@pytest.mark.parametrize("mode", MODES)
def test_serve_over_stdio_runs_find_then_call_for_either_era(tmp_path: Path, mode: str) -> None:
    config = _config(tmp_path)
    params = StdioServerParameters(
        command=str(TOOLROUTE),
        args=["serve", "--config", str(config)],
        env=_without_psycopg(tmp_path),
    )

    async def main() -> None:
        with anyio.fail_after(180):
            async with Client(params, mode=mode) as c:  # type: ignore[arg-type]
                assert (await _find_then_call(c))["timezone"] == "Asia/Tokyo"

    anyio.run(main)


LEGACY_SERVER = REPO / "tests" / "fixtures" / "conformance_server.py"
MODERN_SERVER = REPO / "tests" / "fixtures" / "modern_server.py"
PAIRS = {
    # downstream era: (server script, tool, arguments, what its result says)
    "2025-11-25": (LEGACY_SERVER, "test_elicitation", {"message": "who?"}, "action=accept"),
    "2026-07-28": (MODERN_SERVER, "ask_name", {}, "Hello, Ada"),
}


@pytest.mark.parametrize("downstream", sorted(PAIRS))
@pytest.mark.parametrize("mode", MODES)
def test_a_servers_question_reaches_a_client_of_either_era_and_the_answer_goes_back(
    tmp_path: Path, mode: str, downstream: str
) -> None:
    """The four era pairs (client x downstream), pass-through: the downstream asks for the
    user's input mid-call (a 2025 server by an elicitation request, a 2026 server by an
    input-required result); the client's elicitation callback answers; the tool's own result
    comes back. A 2026 client never receives a server-to-client request (none exists there)."""
    script, tool, args, expected = PAIRS[downstream]
    path = tmp_path / "servers.json"
    path.write_text(
        json.dumps({"mcpServers": {"s": {"command": sys.executable, "args": [str(script)]}}})
    )
    (tmp_path / "toolroute.toml").write_text(
        f'[toolroute]\nstore = "{tmp_path / "store"}"\nexpose = "all"\ncall_timeout_s = 20\n'
    )
    cfg = load_config(path)
    asked: list[str] = []

    async def elicitation(ctx: Any, params: Any) -> Any:
        asked.append(params.message)
        return types.ElicitResult(
            action="accept", content={"name": "Ada", "username": "ada", "email": "ada@example.org"}
        )

    async def main() -> None:
        async with running_downstreams(cfg) as downstreams:
            router, _ = await sync_router(cfg, downstreams, embedder=HashingEmbedder())
            gw = make_gateway(cfg, router, downstreams)
            assert downstreams["s"].stateless == (downstream == "2026-07-28")
            with anyio.fail_after(60):
                async with (
                    gw.continuations.serving(),
                    Client(gw.server, mode=mode, elicitation_callback=elicitation) as c,  # type: ignore[arg-type]
                ):
                    r = await c.call_tool(f"s__{tool}", args)
            text = r.content[0].text  # type: ignore[union-attr]
            assert not r.is_error and expected in text, text
            assert len(asked) == 1
            router.close()

    anyio.run(main)
