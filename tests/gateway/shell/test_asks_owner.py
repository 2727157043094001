"""A server's request during a call goes to the client whose call it is, or to no one.

An in-process server's request is handled in the task of the call that caused it, so it goes
to that call's client even with another client's call in flight. Over stdio a request names
no call: there, with calls of two clients in flight, it is refused rather than let one client
answer (and see) what another client's call asks (test_asks_owner_processes.py).
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp.types as types
from mcp import Client
from mcp.server import Server

from tests.conftest import HashingEmbedder
from toolroute.config import GatewayConfig
from toolroute.downstream.inprocess import memory_specs
from toolroute.gateway.ops.app import make_gateway, running_downstreams
from toolroute.gateway.ops.syncing import sync_router
from toolroute.settings import ToolrouteSettings

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"name": {"type": "string"}}}


def _server(go: anyio.Event, holding: anyio.Event) -> Server[Any]:
    """``ask_name`` waits for ``go``, then asks the client its name (the 2025 way);
    ``hold`` stays in flight until ``go``."""
    empty: dict[str, Any] = {"type": "object", "properties": {}}
    tools = [
        types.Tool(name="ask_name", description="Greet the user by name.", input_schema=empty),
        types.Tool(name="hold", description="Wait a moment.", input_schema=empty),
    ]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name == "hold":
            holding.set()
            await go.wait()
            return types.CallToolResult(content=[types.TextContent(type="text", text="held")])
        await go.wait()
        try:
            answer = await ctx.session.elicit_form(
                "What is your name?", SCHEMA, related_request_id=ctx.request_id
            )
            text = f"Hello, {(answer.content or {}).get('name', '?')}"
        except Exception as e:  # the gateway's refusal, as the server sees it
            text = f"refused: {e}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server("asker", on_list_tools=list_tools, on_call_tool=call_tool)


def _client(gw: Any, name: str) -> Client:
    async def elicitation(ctx: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"name": name})

    info = types.Implementation(name=name, version="1")
    return Client(gw.server, mode="legacy", client_info=info, elicitation_callback=elicitation)


def _text(result: types.CallToolResult) -> str:
    return result.content[0].text  # type: ignore[union-attr]


def test_a_request_during_calls_of_two_clients_reaches_the_client_whose_call_asked(
    tmp_path: Any,
) -> None:
    go, holding = anyio.Event(), anyio.Event()
    specs = memory_specs({"s": _server(go, holding)}, "2025-11-25")
    settings = ToolrouteSettings(store=str(tmp_path / "store"), expose="all")
    cfg = GatewayConfig(servers=specs, settings=settings)  # type: ignore[arg-type]
    answers: dict[str, str] = {}

    async def main() -> None:
        async with running_downstreams(cfg) as downstreams:
            router, _ = await sync_router(cfg, downstreams, embedder=HashingEmbedder())
            gw = make_gateway(cfg, router, downstreams)
            try:
                with anyio.fail_after(30):
                    async with _client(gw, "bob") as bob, _client(gw, "alice") as alice:

                        async def ask() -> None:
                            answers["bob"] = _text(await bob.call_tool("s__ask_name", {}))

                        async def hold() -> None:
                            answers["alice"] = _text(await alice.call_tool("s__hold", {}))

                        async with anyio.create_task_group() as tg:
                            tg.start_soon(ask)
                            await anyio.sleep(0.2)  # bob's call is in flight first
                            tg.start_soon(hold)
                            await holding.wait()  # alice's call is the latest in flight
                            go.set()
                        # one client alone: its own call's question reaches it
                        answers["bob alone"] = _text(await bob.call_tool("s__ask_name", {}))
            finally:
                router.close()

    anyio.run(main)
    assert answers["bob"] == "Hello, bob", answers  # never alice, who has a call in flight
    assert answers["alice"] == "held"
    assert answers["bob alone"] == "Hello, bob"
