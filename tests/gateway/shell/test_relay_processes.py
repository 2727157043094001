"""The whole protocol through the gateway, driven by the official SDK client: resources, prompts,
completion, logging, progress, sampling, elicitation, cancellation and list changes, from the
conformance suite's test server (tests/fixtures/conformance_server.py, stdio) and from the npm
reference server-everything, in the pass-through mode and through ``call_tool`` in the routed
mode. Every check compares with what the downstream server itself sends.
"""

from __future__ import annotations

import json
import secrets
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
import mcp.types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.conftest import REPO, HashingEmbedder
from tests.fixtures import conformance_server as fixture
from tests.helpers.relay import conformance_servers as _conformance
from tests.helpers.relay import relay_config as _config
from toolroute.config import load_config
from toolroute.gateway.ops.app import running_downstreams
from toolroute.gateway.ops.syncing import sync_router
from toolroute.gateway.shell._relay import STATUS_URI
from toolroute.gateway.shell.server import Gateway
from toolroute.route.preconditions import Preconditions
from toolroute.settings import ToolrouteSettings

pytestmark = pytest.mark.integration

FIXTURE = Path(fixture.__file__)
EVERYTHING = (
    REPO / ".toolroute" / "npm" / "node_modules" / "@modelcontextprotocol" / "server-everything"
)
needs_everything = pytest.mark.skipif(
    shutil.which("node") is None or not (EVERYTHING / "dist" / "index.js").is_file(),
    reason="node or npm server-everything is missing (bash .ci/run installs it)",
)


def _everything() -> dict[str, Any]:
    return {"everything": {"command": "node", "args": [str(EVERYTHING / "dist" / "index.js")]}}


@asynccontextmanager
async def gateway(
    tmp: Path, servers: dict[str, Any], expose: Literal["meta", "bind", "all"]
) -> AsyncIterator[Gateway]:
    cfg = load_config(_config(tmp, servers, expose))
    async with running_downstreams(cfg) as downstreams:
        router, result = await sync_router(cfg, downstreams, embedder=HashingEmbedder())
        assert all(s.status == "ok" for s in result.servers), result.to_dict()
        try:
            yield Gateway(
                router,
                downstreams,
                ToolrouteSettings(call_timeout_s=20, expose=expose, call_gate=False),
            )
        finally:
            router.close()


@asynccontextmanager
async def connected(
    tmp: Path,
    servers: dict[str, Any],
    expose: Literal["meta", "bind", "all"],
    **client: Any,
) -> AsyncIterator[Client]:
    """An SDK client (handshake era) connected to a gateway over ``servers``."""
    async with (
        gateway(tmp, servers, expose) as gw,
        Client(gw.server, mode="legacy", **client) as c,
    ):
        yield c


def _text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def _call(expose: str, name: str, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(tool, arguments) to call ``conformance__name`` directly or through call_tool."""
    if expose == "all":
        return name, arguments
    return "call_tool", {"name": f"conformance__{name}", "arguments": arguments}


async def _set_level(c: Client, level: types.LoggingLevel) -> None:
    request = types.SetLevelRequest(params=types.SetLevelRequestParams(level=level))
    await c.session.send_request(request, types.EmptyResult)


def test_pass_through_lists_every_tool_as_its_server_defines_it(tmp_path: Path) -> None:
    async def main() -> None:
        async with connected(tmp_path, _conformance(), "all", raise_exceptions=True) as c:
            listed = {t.name: t for t in (await c.list_tools()).tools}
            assert set(listed) == {t.name for t in fixture.TOOLS}  # own names, no meta-tools
            schema = listed["json_schema_2020_12_tool"].input_schema
            assert schema == fixture.TOOLS[12].input_schema  # $schema, $defs kept

            r = await c.call_tool("test_simple_text", {})
            assert _text(r) == fixture.SIMPLE_TEXT and not r.is_error
            r = await c.call_tool("test_error_handling", {})
            assert r.is_error and _text(r) == fixture.ERROR_TEXT  # the server's own text
            r = await c.call_tool("test_multiple_content_types", {})
            kinds = [(x.type, getattr(x, "data", None)) for x in r.content]
            assert kinds == [("text", None), ("image", fixture.PNG), ("resource", None)]
            r = await c.call_tool("test_audio_content", {})
            assert r.content[0] == types.AudioContent(
                type="audio", data=fixture.WAV, mime_type="audio/wav"
            )
            r = await c.call_tool("conformance__test_simple_text", {})  # namespaced works too
            assert _text(r) == fixture.SIMPLE_TEXT

    anyio.run(main)


def test_pass_through_still_enforces_preconditions(tmp_path: Path) -> None:
    async def main() -> None:
        cfg = load_config(_config(tmp_path, _conformance(), "all"))
        async with running_downstreams(cfg) as downstreams:
            router, _ = await sync_router(cfg, downstreams, embedder=HashingEmbedder())
            gate = Preconditions(milestone="plan_confirmed")
            gw = Gateway(
                router,
                downstreams,
                ToolrouteSettings(expose="all"),
                tool_preconditions={"conformance__test_sampling": gate},
            )
            async with Client(gw.server, mode="legacy") as c:
                names = [t.name for t in (await c.list_tools()).tools]
                assert "set_milestone" in names and "test_sampling" in names
                r = await c.call_tool("test_sampling", {"prompt": "hi"})
                assert r.is_error and r.structured_content["error"] == "precondition_failed"
                assert "plan_confirmed" in r.structured_content["message"]
            router.close()

    anyio.run(main)


def test_colliding_names_are_namespaced_and_each_reaches_its_own_server(tmp_path: Path) -> None:
    async def main() -> None:
        async with connected(tmp_path, _conformance(copies=2), "all", raise_exceptions=True) as c:
            tools = {t.name for t in (await c.list_tools()).tools}
            assert "conformance__test_simple_text" in tools
            assert "twin__test_simple_text" in tools and "test_simple_text" not in tools
            prompts = {p.name for p in (await c.list_prompts()).prompts}
            assert {"conformance__test_simple_prompt", "twin__test_simple_prompt"} <= prompts
            uris = {r.uri for r in (await c.list_resources()).resources}
            assert "twin__test://static-text" in uris
            r = await c.read_resource("twin__test://static-text")
            assert r.contents[0].text == fixture.STATIC_TEXT  # type: ignore[union-attr]
            r2 = await c.call_tool("twin__test_simple_text", {})
            assert _text(r2) == fixture.SIMPLE_TEXT

    anyio.run(main)


@pytest.mark.parametrize("expose", ["all", "meta"])
def test_resources_prompts_and_completion_come_from_their_server(
    tmp_path: Path, expose: Literal["all", "meta"]
) -> None:
    async def main() -> None:
        async with connected(tmp_path, _conformance(), expose, raise_exceptions=True) as c:
            caps = c.server_capabilities
            assert caps.resources and caps.prompts and caps.completions and caps.logging
            uris = [r.uri for r in (await c.list_resources()).resources]
            assert uris == [STATUS_URI, *(r.uri for r in fixture.RESOURCES)]  # the gateway's own
            status = json.loads((await c.read_resource(STATUS_URI)).contents[0].text)  # type: ignore[union-attr]
            assert status["servers"]["conformance"]["status"] == "up"
            templates = (await c.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == ["test://template/{id}/data"]
            r = await c.read_resource("test://static-text")
            assert r.contents[0].text == fixture.STATIC_TEXT  # type: ignore[union-attr]
            r = await c.read_resource("test://static-binary")
            assert r.contents[0].blob == fixture.PNG  # type: ignore[union-attr]
            r = await c.read_resource("test://template/123/data")
            assert json.loads(r.contents[0].text)["data"] == "Data for ID: 123"  # type: ignore[union-attr]
            with pytest.raises(MCPError, match="Resource not found: test://nope"):
                await c.read_resource("test://nope")  # the server's own error
            names = [p.name for p in (await c.list_prompts()).prompts]
            assert names == [p.name for p in fixture.PROMPTS]
            p = await c.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
            assert p.messages[0].content == types.TextContent(
                type="text", text="Prompt with arguments: arg1='a', arg2='b'"
            )
            p = await c.get_prompt("test_prompt_with_image")
            assert p.messages[0].content.data == fixture.PNG  # type: ignore[union-attr]
            with pytest.raises(MCPError, match="Unknown prompt: nope"):
                await c.get_prompt("nope")
            done = await c.complete(
                types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments"),
                {"name": "arg1", "value": "par"},
            )
            assert done.completion.values == ["paris", "park", "party"]

    anyio.run(main)


@pytest.mark.parametrize("expose", ["all", "meta", "bind"])
def test_progress_logs_sampling_and_elicitation_reach_the_calling_client(
    tmp_path: Path, expose: Literal["all", "meta", "bind"]
) -> None:
    progress: list[tuple[float, float | None]] = []
    logs: list[str] = []
    asked: list[Any] = []

    async def on_progress(p: float, total: float | None, message: str | None) -> None:
        progress.append((p, total))

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(str(params.data))

    async def sampling(ctx: Any, params: types.CreateMessageRequestParams) -> Any:
        asked.append(params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="forty-two"),
            model="test-model",
        )

    async def elicitation(ctx: Any, params: types.ElicitRequestParams) -> Any:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"username": "ada", "email": "a@b.c"})

    async def main() -> None:
        async with connected(
            tmp_path,
            _conformance(),
            expose,
            raise_exceptions=True,
            logging_callback=on_log,
            sampling_callback=sampling,
            elicitation_callback=elicitation,
        ) as c:
            with anyio.fail_after(20):
                r = await c.call_tool(
                    *_call(expose, "test_tool_with_progress", {}), progress_callback=on_progress
                )
                assert not r.is_error
                assert progress == [(0, 100), (50, 100), (100, 100)]
                await _set_level(c, "info")
                await c.call_tool(*_call(expose, "test_tool_with_logging", {}))
                assert logs == [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ]
                await _set_level(c, "error")  # filtered below the level asked for
                await c.call_tool(*_call(expose, "test_tool_with_logging", {}))
                assert len(logs) == 3
                r = await c.call_tool(*_call(expose, "test_sampling", {"prompt": "6 x 7?"}))
                assert _text(r) == "LLM response: forty-two"
                assert asked[0].messages[0].content.text == "6 x 7?"
                r = await c.call_tool(*_call(expose, "test_elicitation", {"message": "who?"}))
                assert _text(r).startswith("User response: action=accept")
                assert "ada" in _text(r) and asked[1].message == "who?"

    anyio.run(main)


def test_a_client_without_sampling_gets_the_servers_own_failure(tmp_path: Path) -> None:
    async def main() -> None:
        async with connected(tmp_path, _conformance(), "all") as c:
            with anyio.fail_after(20):
                r = await c.call_tool("test_sampling", {"prompt": "hi"})
            assert r.is_error and "does not support sampling" in _text(r)

    anyio.run(main)


def test_cancelling_a_call_cancels_it_on_the_downstream_server(tmp_path: Path) -> None:
    marker = tmp_path / "cancelled.txt"

    async def main() -> None:
        async with connected(tmp_path, _conformance(), "all") as c:
            with pytest.raises(MCPError):  # the client gives up: it sends notifications/cancelled
                await c.call_tool(
                    "test_wait_for_cancel", {"marker": str(marker)}, read_timeout_seconds=1
                )
            with anyio.fail_after(10):  # the gateway cancels its own downstream request
                while not marker.exists():
                    await anyio.sleep(0.05)
            assert marker.read_text() == "cancelled"

    anyio.run(main)


def test_a_server_cancelling_its_sampling_request_cancels_it_at_the_client(
    tmp_path: Path,
) -> None:
    cancelled = anyio.Event()

    async def sampling(ctx: Any, params: types.CreateMessageRequestParams) -> Any:
        try:
            await anyio.sleep(30)  # an answer that never comes in time
        finally:
            cancelled.set()
        raise AssertionError("the sampling request was not cancelled")

    async def main() -> None:
        async with connected(tmp_path, _conformance(), "all", sampling_callback=sampling) as c:
            with anyio.fail_after(10):
                r = await c.call_tool("test_sampling_abandoned", {})
                assert _text(r) == "sampling abandoned"
                await cancelled.wait()

    anyio.run(main)


def test_subscribed_clients_get_resource_updates_and_everyone_gets_list_changes(
    tmp_path: Path,
) -> None:
    seen: list[Any] = []
    changed = anyio.Event()

    async def on_message(msg: Any) -> None:
        seen.append(msg)
        if isinstance(msg, types.PromptListChangedNotification):
            changed.set()

    async def main() -> None:
        async with connected(tmp_path, _conformance(), "all", message_handler=on_message) as c:
            request = types.SubscribeRequest(
                params=types.SubscribeRequestParams(uri=fixture.WATCHED)
            )
            await c.session.send_request(request, types.EmptyResult)
            await c.call_tool("test_touch_watched", {})
            await c.call_tool("test_change_lists", {})
            with anyio.fail_after(10):
                await changed.wait()
        kinds = [type(m).__name__ for m in seen]
        assert "ResourceUpdatedNotification" in kinds
        assert "ResourceListChangedNotification" in kinds
        updated = next(m for m in seen if isinstance(m, types.ResourceUpdatedNotification))
        assert updated.params.uri == fixture.WATCHED

    anyio.run(main)


def test_pass_through_tells_clients_when_a_servers_tools_change(tmp_path: Path) -> None:
    changed = anyio.Event()

    async def on_message(msg: Any) -> None:
        if isinstance(msg, types.ToolListChangedNotification):
            changed.set()

    changing = REPO / "tests" / "fixtures" / "changing_server.py"
    servers = {"changing": {"command": sys.executable, "args": [str(changing)]}}

    async def main() -> None:
        async with connected(tmp_path, servers, "all", message_handler=on_message) as c:
            assert [t.name for t in (await c.list_tools()).tools] == ["add_tool"]
            await c.call_tool("add_tool", {})
            with anyio.fail_after(10):
                await changed.wait()
            names = [t.name for t in (await c.list_tools()).tools]
            assert names == ["add_tool", "fresh_tool"]

    anyio.run(main)


@needs_everything
@pytest.mark.parametrize("expose", ["all", "meta"])
def test_server_everything_resources_prompts_progress_sampling_elicitation(
    tmp_path: Path, expose: Literal["all", "meta"]
) -> None:
    progress: list[float] = []

    async def on_progress(p: float, total: float | None, message: str | None) -> None:
        progress.append(p)

    async def sampling(ctx: Any, params: types.CreateMessageRequestParams) -> Any:
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="sampled through toolroute"),
            model="test-model",
        )

    async def elicitation(ctx: Any, params: types.ElicitRequestParams) -> Any:
        return types.ElicitResult(action="accept", content={"name": "Ada Lovelace", "check": True})

    def call(name: str, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        if expose == "all":
            return name, arguments
        return "call_tool", {"name": f"everything__{name}", "arguments": arguments}

    async def main() -> None:
        servers = {**_everything(), **_conformance()}
        async with connected(
            tmp_path,
            servers,
            expose,
            raise_exceptions=True,
            sampling_callback=sampling,
            elicitation_callback=elicitation,
        ) as c:
            with anyio.fail_after(60):
                resources = (await c.list_resources()).resources
                uris = [r.uri for r in resources]
                assert "test://static-text" in uris  # both servers' resources, side by side
                demo = next(u for u in uris if u.startswith("demo://"))
                read = await c.read_resource(demo)
                assert read.contents and read.contents[0].uri == demo
                prompts = [p.name for p in (await c.list_prompts()).prompts]
                assert {"simple-prompt", "test_simple_prompt"} <= set(prompts)
                got = await c.get_prompt("simple-prompt")
                assert got.messages and got.messages[0].role == "user"
                r = await c.call_tool(
                    *call("trigger-long-running-operation", {"duration": 0.3, "steps": 3}),
                    progress_callback=on_progress,
                )
                assert "Long running operation completed" in _text(r)
                assert progress == [1, 2, 3]
                r = await c.call_tool(*call("trigger-sampling-request", {"prompt": "hi"}))
                assert "sampled through toolroute" in _text(r)
                r = await c.call_tool(*call("trigger-elicitation-request", {}))
                assert "Name: Ada Lovelace" in _text(r)

    anyio.run(main)


def test_allow_lists_hold_for_pass_through_tools_resources_and_prompts(
    tmp_path: Path, onnx: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client allowed only the time server sees and reaches nothing of the other server."""
    from tests.conftest import TIME_MAIN
    from tests.helpers.gateways import client_as, http_gateway

    tokens = {c: secrets.token_urlsafe(24) for c in ("alice", "carol")}
    for c, t in tokens.items():
        monkeypatch.setenv(f"TR_RELAY_{c.upper()}", t)
    servers = {"time": {"command": sys.executable, "args": ["-c", TIME_MAIN, "r"]}}
    path = _config(tmp_path, {**servers, **_conformance()}, "all")
    with (tmp_path / "toolroute.toml").open("a") as f:
        f.write(
            '[auth.clients.alice]\ntoken_env = "TR_RELAY_ALICE"\nservers = ["time"]\n'
            '[auth.clients.carol]\ntoken_env = "TR_RELAY_CAROL"\n'
        )
    cfg = load_config(path)

    async def main() -> None:
        async with http_gateway(cfg, onnx) as (url, _):
            with anyio.fail_after(60):
                carol = client_as(url, {"Authorization": f"Bearer {tokens['carol']}"})
                alice = client_as(url, {"Authorization": f"Bearer {tokens['alice']}"})
                async with carol as c, alice as a:
                    assert "test_simple_text" in {t.name for t in (await c.list_tools()).tools}
                    names = {t.name for t in (await a.list_tools()).tools}
                    assert "get_current_time" in names and "test_simple_text" not in names
                    r = await a.call_tool("test_simple_text", {})
                    assert r.is_error and fixture.SIMPLE_TEXT not in _text(r)
                    assert (await c.list_resources()).resources
                    only = [r.uri for r in (await a.list_resources()).resources]
                    assert only == [STATUS_URI]  # the gateway's own, cut to alice's servers
                    seen = json.loads((await a.read_resource(STATUS_URI)).contents[0].text)  # type: ignore[union-attr]
                    assert list(seen["servers"]) == ["time"]
                    assert not (await a.list_prompts()).prompts
                    with pytest.raises(MCPError, match="Resource not found: test://static-text"):
                        await a.read_resource("test://static-text")
                    with pytest.raises(MCPError, match="Unknown prompt: test_simple_prompt"):
                        await a.get_prompt("test_simple_prompt")
                    r2 = await c.read_resource("test://static-text")
                    assert r2.contents[0].text == fixture.STATIC_TEXT  # type: ignore[union-attr]

    anyio.run(main)
