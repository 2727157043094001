"""The gateway's loop (route → gate → present → refuse unpromoted calls, execution, recording):
what finds tools (gateway/find.py), what calls them and the data they share, driven through
in-memory downstreams: real SDK servers in this process (the reference time server, PyPI
mcp-server-time, and a small notes server), reached through the same downstreams and SDK client as a
stdio or HTTP server, with no process. Routing uses a deterministic embedder.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client
from mcp.server import NotificationOptions, Server
from mcp.server.mcpserver import MCPServer
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp_server_time.server import create_server

from tests.conftest import HashingEmbedder
from toolroute.catalog.name import SEPARATOR, qualified_name, split_name
from toolroute.config import GatewayConfig
from toolroute.downstream.inprocess import MemorySpec, memory_specs
from toolroute.errors import ErrorCode, error_payload
from toolroute.gateway.calls._limits import Limits
from toolroute.gateway.calls.path import CallPath
from toolroute.gateway.calls.pipeline import Call
from toolroute.gateway.find import MAX_CAPABILITY_REQUESTS, Finder, route_depth
from toolroute.gateway.ops._metrics import GatewayMetrics
from toolroute.gateway.ops.app import make_gateway, running_downstreams
from toolroute.gateway.ops.syncing import sync_router
from toolroute.gateway.shared import Shared
from toolroute.gateway.shell.server import Gateway
from toolroute.learn.estimate import PRIOR_SUCCESS
from toolroute.papers.tool_attention.agent_loop import ToolAttention
from toolroute.present.presenter import PresentConfig
from toolroute.route.preconditions import Preconditions, SessionState
from toolroute.router import Router
from toolroute.settings import LimitsTable, MetricsTable, ToolrouteSettings

TOKYO = {"name": "time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}


def _notes_server() -> MCPServer:
    """A knowledge-graph-like server whose tools do real work on an in-memory dict."""
    server = MCPServer("notes")
    facts: dict[str, list[str]] = {}
    hang = anyio.Event()

    @server.tool(description="Remember a fact about a person in the knowledge graph")
    def remember_fact(person: str, fact: str) -> str:
        facts.setdefault(person, []).append(fact)
        return f"{person}: {len(facts[person])} facts"

    @server.tool(
        title="Recall facts",
        description="Recall every fact remembered about a person",
        annotations=types.ToolAnnotations(read_only_hint=True),
        meta={"example.org/team": "notes"},
    )
    def recall_facts(person: str) -> str:
        return "; ".join(facts.get(person, [])) or "nothing"

    @server.tool(description="Wait for an event that never comes")
    async def wait_forever() -> str:
        await hang.wait()
        return "never"

    return server


def _changing_server() -> Server[Any]:
    """A server whose ``add_tool`` adds ``fresh_tool`` and says so in either era: a
    notifications/tools/list_changed to a 2025 session, a listen event at 2026-07-28."""
    bus = InMemorySubscriptionBus()
    tools = {
        "add_tool": types.Tool(
            name="add_tool", description="Add a new tool.", input_schema={"type": "object"}
        )
    }

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(tools.values()))

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name == "add_tool":
            tools["fresh_tool"] = types.Tool(
                name="fresh_tool",
                description="Translate Klingon poetry into haiku.",
                input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
            )
            await bus.publish(ToolsListChanged())
            if not str(ctx.protocol_version).startswith("2026"):
                await ctx.session.send_tool_list_changed()
            return types.CallToolResult(content=[types.TextContent(type="text", text="added")])
        text = (params.arguments or {}).get("text", "")
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"haiku: {text}")])

    class _Changing(Server[Any]):
        def create_initialization_options(self, options: Any = None, *a: Any, **k: Any) -> Any:
            options = options or NotificationOptions(tools_changed=True)
            return super().create_initialization_options(options, *a, **k)

    return _Changing(
        "changing",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_subscriptions_listen=ListenHandler(bus),
    )


def _config(
    tmp_path: Path, era: Any = "2026-07-28", fields: dict[str, Any] | None = None, **settings: Any
) -> GatewayConfig:
    """The two servers' config: ``settings`` are ``[toolroute]`` ones, ``fields`` the config's
    other tables."""
    servers = {"time": create_server("UTC"), "notes": _notes_server()}
    toolroute = ToolrouteSettings(store=str(tmp_path / "store"), **settings)
    return GatewayConfig(servers=memory_specs(servers, era), settings=toolroute, **(fields or {}))


@asynccontextmanager
async def _gateway(cfg: GatewayConfig) -> AsyncIterator[Gateway]:
    async with running_downstreams(cfg) as downstreams:
        router, _ = await sync_router(cfg, downstreams, embedder=HashingEmbedder())
        try:
            yield make_gateway(cfg, router, downstreams)
        finally:
            router.close()


def _text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def _names(result: Any) -> list[str]:
    return [c["name"] for c in result.structured_content["candidates"]]


def test_names_are_built_and_split_at_the_first_separator() -> None:
    assert qualified_name("time", "get__current") == f"time{SEPARATOR}get__current"
    assert split_name("time__get__current") == ("time", "get__current")
    assert split_name("time") == ("time", "")


def test_route_depth_leaves_room_for_the_gates() -> None:
    assert route_depth(1) == 20 and route_depth(10) == 40


def test_error_payloads_name_the_code_first_and_the_tool_before_the_message() -> None:
    payload = error_payload(ErrorCode.PRECONDITION_FAILED, "why", tool="a__b", hint="h")
    assert list(payload) == ["error", "tool", "message", "hint"]
    assert json.dumps(payload).startswith('{"error": "precondition_failed"')


@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
def test_find_then_call_runs_an_in_memory_server_and_records_the_outcome(
    tmp_path: Path, era: str
) -> None:
    cfg = _config(tmp_path, era, call_gate="off")

    async def main() -> None:
        async with _gateway(cfg) as gw, Client(gw.server, raise_exceptions=True) as c:
            assert gw.shared.downstreams["time"].stateless is (era == "2026-07-28")
            tools = [t.name for t in (await c.list_tools()).tools]
            assert tools == ["find_tools", "call_tool", "request_capability"]
            r = await c.call_tool("find_tools", {"query": "current time in Tokyo", "k": 3})
            assert "time__get_current_time" in _names(r)
            assert json.loads(_text(r)) == r.structured_content
            with anyio.fail_after(5):
                r = await c.call_tool("call_tool", TOKYO)
            assert not r.is_error and "Asia/Tokyo" in _text(r)
            r = await c.call_tool("call_tool", {"name": "time__get_curent_time", "arguments": {}})
            assert r.structured_content["error"] == "unknown_tool"
            assert "time__get_current_time" in r.structured_content["closest"]
            r = await c.call_tool(
                "call_tool", {"name": "time__get_current_time", "arguments": {"tz": 1}}
            )
            assert r.structured_content["error"] == "invalid_arguments"
            assert gw.shared.router.store.outcome_count() == 1  # executed calls, not refused ones
            assert gw.shared.router.stats.tool(("time", "get_current_time")).calls == 1

    anyio.run(main)


def test_a_gateway_holds_calls_to_its_limits_and_counts_them_from_construction(
    tmp_path: Path,
) -> None:
    limits = LimitsTable(calls_per_minute=1, burst=1)
    cfg = _config(tmp_path, fields={"limits": limits, "metrics": MetricsTable()}, call_gate="off")

    async def main() -> None:
        async with _gateway(cfg) as gw, Client(gw.server, raise_exceptions=True) as c:
            assert isinstance(gw.calls.limits, Limits) and isinstance(
                gw.shared.metrics, GatewayMetrics
            )
            with anyio.fail_after(5):
                assert not (await c.call_tool("call_tool", TOKYO)).is_error
                r = await c.call_tool("call_tool", TOKYO)
            assert r.structured_content["error"] == "limit_exceeded"
            assert (
                b'toolroute_limit_refusals_total{limit="rate"} 1.0'
                in gw.shared.metrics.exposition()
            )

    anyio.run(main)


def test_call_gate_refuses_a_tool_until_find_tools_promotes_it(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    cfg = _config(tmp_path, events_log=str(events), call_gate="connection")

    async def main() -> None:
        async with (
            _gateway(cfg) as gw,
            Client(gw.server, mode="legacy", raise_exceptions=True) as c,
        ):
            r = await c.call_tool("call_tool", TOKYO)
            assert r.is_error and r.structured_content["error"] == "tool_not_available"
            assert r.structured_content["available"] == []
            await c.call_tool("find_tools", {"query": "current time in Tokyo", "k": 1})
            r = await c.call_tool("call_tool", TOKYO)
            assert not r.is_error and "Asia/Tokyo" in _text(r)
            # the strict scope: another connection has nothing promoted yet
            async with Client(gw.server, mode="legacy", raise_exceptions=True) as other:
                r = await other.call_tool("call_tool", TOKYO)
                assert r.structured_content["error"] == "tool_not_available"
            stored = [json.loads(e) for e in gw.shared.router.store.events()]
        logged = [json.loads(line) for line in events.read_text().splitlines()]
        assert stored == logged and len(stored) == 1
        ev = stored[0]
        assert ev["active"] == ["time__get_current_time"]
        assert ev["phase1_tokens"] > 0 and ev["phase2_tokens"] > 0
        assert {"turn_id", "query_hash", "candidates", "gated_out", "latency_ms"} <= set(ev)

    anyio.run(main)


def test_a_milestone_precondition_hides_a_tool_until_it_is_set(tmp_path: Path) -> None:
    gate = {"time__convert_time": Preconditions(milestone="plan_confirmed")}
    cfg = _config(tmp_path, fields={"tool_preconditions": gate})
    find = {"query": "convert 9:00 from Tokyo time to Paris time", "k": 2}
    convert = {
        "name": "time__convert_time",
        "arguments": {
            "source_timezone": "Asia/Tokyo",
            "time": "09:00",
            "target_timezone": "Europe/Paris",
        },
    }

    async def main() -> None:
        async with _gateway(cfg) as gw, Client(gw.server, raise_exceptions=True) as c:
            assert "set_milestone" in [t.name for t in (await c.list_tools()).tools]
            r = await c.call_tool("find_tools", find)
            assert "time__convert_time" not in _names(r)
            gated = {g["name"]: g["reason"] for g in r.structured_content["gated_out"]}
            assert "plan_confirmed" in gated["time__convert_time"]
            r = await c.call_tool("call_tool", convert)
            assert r.structured_content["error"] == "tool_not_available"
            await c.call_tool("set_milestone", {"name": "plan_confirmed"})
            r = await c.call_tool("find_tools", find)
            assert "time__convert_time" in _names(r)
            r = await c.call_tool("call_tool", convert)
            assert not r.is_error and "Europe/Paris" in _text(r)

    anyio.run(main)


def test_bind_mode_adds_found_tools_to_tools_list(tmp_path: Path) -> None:
    cfg = _config(tmp_path, expose="bind")
    changed = anyio.Event()

    async def on_message(msg: Any) -> None:
        if isinstance(msg, types.ToolListChangedNotification):
            changed.set()

    async def main() -> None:
        async with (
            _gateway(cfg) as gw,
            Client(gw.server, mode="legacy", message_handler=on_message) as c,
        ):
            await c.call_tool("find_tools", {"query": "current time in a timezone", "k": 2})
            with anyio.fail_after(5):
                await changed.wait()
            names = {t.name for t in (await c.list_tools()).tools}
            assert {"find_tools", "call_tool", "time__get_current_time"} <= names
            r = await c.call_tool("time__get_current_time", {"timezone": "Asia/Tokyo"})
            assert not r.is_error and "Asia/Tokyo" in _text(r)

    anyio.run(main)


def test_bind_mode_lists_to_each_client_only_what_was_found_for_it(tmp_path: Path) -> None:
    """Bound tools are scoped like the call gate: every connection of the client that
    searched is told and lists them; a connection of another client lists none of them and
    is refused when it calls one."""
    cfg = _config(tmp_path, expose="bind")
    told = {"a2": anyio.Event(), "b": anyio.Event()}

    def named(gw: Gateway, name: str, key: str | None = None) -> Client:
        async def on_message(msg: Any) -> None:
            if key and isinstance(msg, types.ToolListChangedNotification):
                told[key].set()

        info = types.Implementation(name=name, version="1")
        return Client(gw.server, mode="legacy", client_info=info, message_handler=on_message)

    async def main() -> None:
        async with (
            _gateway(cfg) as gw,
            named(gw, "agent-a") as a,
            named(gw, "agent-a", "a2") as a2,
            named(gw, "agent-b", "b") as b,
        ):
            for c in (a2, b):  # both connections have listed once: the gateway knows them
                assert len((await c.list_tools()).tools) == 3
            await a.call_tool("find_tools", {"query": "recall the facts about a person"})
            with anyio.fail_after(5):
                await told["a2"].wait()
            listed = {t.name: t for t in (await a2.list_tools()).tools}
            recall = listed["notes__recall_facts"]
            assert recall.title == "Recall facts" and recall.annotations is not None
            assert recall.annotations.read_only_hint is True
            assert recall.output_schema is not None and recall.meta == {"example.org/team": "notes"}
            assert not told["b"].is_set()
            assert [t.name for t in (await b.list_tools()).tools] == [
                "find_tools",
                "call_tool",
                "request_capability",
            ]
            r = await b.call_tool("notes__recall_facts", {"person": "Ada"})
            assert r.is_error and r.structured_content["error"] == "tool_not_available"
            r = await a2.call_tool("notes__recall_facts", {"person": "Ada"})
            assert not r.is_error and "nothing" in _text(r)

    anyio.run(main)


def test_bind_mode_tells_a_2026_client_s_listen_stream_only_of_its_own_tools(
    tmp_path: Path,
) -> None:
    cfg = _config(tmp_path, expose="bind")

    def named(gw: Gateway, name: str) -> Client:
        info = types.Implementation(name=name, version="1")
        return Client(gw.server, client_info=info)

    async def main() -> None:
        async with _gateway(cfg) as gw, named(gw, "agent-a") as a, named(gw, "agent-b") as b:
            events: dict[str, int] = {"a": 0, "b": 0}

            async def watch(c: Client, key: str, ready: anyio.Event) -> None:
                async with c.listen(tools_list_changed=True) as sub:
                    ready.set()
                    async for _ in sub:
                        events[key] += 1

            async with anyio.create_task_group() as tg:
                ready_a, ready_b = anyio.Event(), anyio.Event()
                tg.start_soon(watch, a, "a", ready_a)
                tg.start_soon(watch, b, "b", ready_b)
                with anyio.fail_after(5):
                    await ready_a.wait()
                    await ready_b.wait()
                await a.call_tool("find_tools", {"query": "recall the facts about a person"})
                with anyio.fail_after(5):
                    while events["a"] == 0:
                        await anyio.sleep(0.01)
                # b's stream had the same time to receive an event; a's tool list only changed
                await b.call_tool("find_tools", {"query": "what time is it in Tokyo", "k": 1})
                with anyio.fail_after(5):
                    while events["b"] == 0:
                        await anyio.sleep(0.01)
                assert events["a"] == 1
                tg.cancel_scope.cancel()
            names_b = {t.name for t in (await b.list_tools()).tools}
            assert any(n.startswith("time__") for n in names_b)
            assert "notes__recall_facts" not in names_b

    anyio.run(main)


def test_find_tools_is_read_only_and_its_answer_matches_its_output_schema(
    tmp_path: Path,
) -> None:
    cfg = _config(tmp_path)

    async def main() -> None:
        async with _gateway(cfg) as gw, Client(gw.server, raise_exceptions=True) as c:
            find = next(t for t in (await c.list_tools()).tools if t.name == "find_tools")
            assert find.annotations is not None and find.annotations.read_only_hint is True
            assert find.input_schema["required"] == ["query"]
            assert find.output_schema is not None
            # the client validates structured content against the output schema it listed
            for k in (None, "2", 2.0, 80):
                r = await c.call_tool("find_tools", {"query": "time in Tokyo", "k": k})
                assert not r.is_error, r
            assert len(_names(r)) <= 50
            r = await c.call_tool("find_tools", {"query": "time in Tokyo", "k": None})
            await c.call_tool("find_tools", {"query": "current time in Tokyo", "k": 1})
            by_text = {"name": "time__get_current_time", "arguments": '{"timezone": "UTC"}'}
            r = await c.call_tool("call_tool", by_text)
            assert not r.is_error and "UTC" in _text(r)
            r = await c.call_tool("call_tool", {**by_text, "arguments": None})
            assert r.structured_content["error"] == "invalid_arguments"
            assert "null" in r.structured_content["message"]

    anyio.run(main)


def test_request_capability_reroutes_to_new_tools_and_stops_loops(tmp_path: Path) -> None:
    cfg = _config(tmp_path)  # call gate on: new tools must become callable

    async def main() -> None:
        async with _gateway(cfg) as gw, Client(gw.server, raise_exceptions=True) as c:
            r = await c.call_tool("find_tools", {"query": "what time is it in Tokyo", "k": 2})
            first = set(_names(r))
            r = await c.call_tool(
                "request_capability",
                {"need": "remember a fact about a person in the knowledge graph", "k": 1},
            )
            fresh = _names(r)
            assert fresh == ["notes__remember_fact"] and not set(fresh) & first
            assert r.structured_content["attempts_left"] == MAX_CAPABILITY_REQUESTS - 1
            arguments = {"person": "Ada", "fact": "wrote code"}
            r = await c.call_tool("call_tool", {"name": fresh[0], "arguments": arguments})
            assert not r.is_error and "Ada: 1 facts" in _text(r)
            for _ in range(MAX_CAPABILITY_REQUESTS - 1):
                await c.call_tool("request_capability", {"need": "something else"})
            r = await c.call_tool("request_capability", {"need": "yet another thing"})
            assert r.is_error and r.structured_content["error"] == "capability_limit"

    anyio.run(main)


def test_a_meta_tool_name_the_gateway_does_not_have_is_refused(tmp_path: Path) -> None:
    cfg = _config(tmp_path)

    async def main() -> None:
        async with _gateway(cfg) as gw, Client(gw.server, raise_exceptions=True) as c:
            r = await c.call_tool("time__get_current_time", {"timezone": "UTC"})
            assert r.is_error and r.structured_content["error"] == "unknown_tool"
            r = await c.call_tool("find_tools", {"k": 2})
            assert r.structured_content["error"] == "invalid_arguments"
            r = await c.call_tool("set_milestone", {})
            assert r.structured_content["error"] == "invalid_arguments"

    anyio.run(main)


def test_a_call_past_its_deadline_is_a_recorded_timeout_with_a_hint(tmp_path: Path) -> None:
    cfg = _config(tmp_path, call_gate="off", call_timeout_s=0.5)

    async def main() -> None:
        async with _gateway(cfg) as gw:
            with anyio.fail_after(10):
                r = await gw.calls.checked("notes__wait_forever", {})
            assert isinstance(r, types.CallToolResult) and r.structured_content is not None
            assert r.structured_content["error"] == "timeout"
            assert "try again" in r.structured_content["hint"]
            stats = gw.shared.router.stats.tool(("notes", "wait_forever"))
            assert stats.calls == 1 and stats.success < PRIOR_SUCCESS  # a failure

    anyio.run(main)


def test_quarantined_tools_are_refused_before_any_call(tmp_path: Path) -> None:
    from toolroute.gateway.calls.quarantine import Held

    cfg = _config(tmp_path, call_gate="off")

    async def main() -> None:
        async with _gateway(cfg) as gw:
            held = Held("time__get_current_time", "changed", "v2", "hash", ("input_schema",))
            gw.shared.quarantined = {held.name: held}
            r = await gw.calls.checked("time__get_current_time", {"timezone": "UTC"})
            assert isinstance(r, types.CallToolResult) and r.structured_content is not None
            assert r.structured_content["error"] == "quarantined"
            assert gw.shared.router.store.outcome_count() == 0

    anyio.run(main)


@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
def test_list_changed_from_a_server_resyncs_its_tools(tmp_path: Path, era: str) -> None:
    from toolroute.gateway.ops.reload import Live
    from toolroute.gateway.ops.syncing import watch_changes

    servers = {"changing": _changing_server(), "time": create_server("UTC")}
    settings = ToolrouteSettings(store=str(tmp_path / "store"))
    cfg = GatewayConfig(servers=memory_specs(servers, era), settings=settings)
    query = "turn klingon poems into haiku"

    async def main() -> None:
        async with _gateway(cfg) as gw, anyio.create_task_group() as tg:
            assert "changing__fresh_tool" not in _names_of(gw.finder.find(query, 3))
            tg.start_soon(watch_changes, Live(cfg), gw.shared.downstreams, gw)
            assert not (await gw.calls.checked("changing__add_tool", {})).is_error
            with anyio.fail_after(10):
                while "changing__fresh_tool" not in _names_of(gw.finder.find(query, 3)):
                    await anyio.sleep(0.05)
            r = await gw.calls.checked("changing__fresh_tool", {"text": "nuqneH"})
            assert "haiku: nuqneH" in _text(r)
            tg.cancel_scope.cancel()

    anyio.run(main)


def _names_of(found: dict[str, Any]) -> list[str]:
    return [c["name"] for c in found["candidates"]]


def test_tool_attention_and_the_gateway_promote_the_same_tools(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    query = "current time in Tokyo"

    async def main() -> None:
        async with _gateway(cfg) as gw:
            found = await gw.finder.find_async(query, 2)
            ta = ToolAttention(gw.shared.router, PresentConfig(top_k=2))
            turn = ta.turn(query)
            assert list(turn.names) == [c["name"] for c in found["candidates"]]
            bound = turn.to_anthropic()[0]["name"]
            assert ta.check_call(bound) is None
            assert "tool_not_available" in (ta.check_call("notes__recall_facts") or "")
            ta.turn("remember a fact about a person")  # a promotion lasts one turn
            assert ta.check_call(bound) is not None

    anyio.run(main)


def test_what_finds_and_what_calls_route_and_gate_without_a_transport(tmp_path: Path) -> None:
    from tests.conftest import SMALL_CATALOG
    from toolroute.catalog import catalog_from_dict

    with Router(
        catalog_from_dict(SMALL_CATALOG), store=tmp_path, embedder=HashingEmbedder()
    ) as router:
        router.index()
        shared = Shared(router, settings=ToolrouteSettings(k=1))
        finder, calls = Finder(shared), CallPath(shared)
        state = shared.sessions.for_connection(None)
        found = finder.find("what time is it", 1, state)
        name = found["candidates"][0]["name"]
        assert shared.admits(state, name)
        other = SessionState()  # another connection's
        assert not shared.admits(other, name)
        result = anyio.run(calls.call, Call(name, {}, other))
        assert isinstance(result, types.CallToolResult) and result.structured_content is not None
        assert result.structured_content["error"] == "tool_not_available"


def test_memory_specs_keep_one_era_for_every_server() -> None:
    specs = memory_specs({"a": MCPServer("a"), "b": MCPServer("b")}, "2025-11-25")
    assert {s.era for s in specs.values()} == {"2025-11-25"}
    assert isinstance(specs["a"], MemorySpec)


def test_find_tools_with_a_server_and_no_query_lists_that_servers_tools(tmp_path: Path) -> None:
    cfg = _config(tmp_path)

    async def main() -> None:
        async with _gateway(cfg) as gw, Client(gw.server, raise_exceptions=True) as c:
            r = await c.call_tool("find_tools", {"query": "", "server": "notes", "k": 2})
            assert not r.is_error, r
            first = _names(r)
            assert len(first) == 2 and all(n.startswith("notes__") for n in first)
            cursor = r.structured_content["next_cursor"]
            r = await c.call_tool("find_tools", {"query": "", "server": "notes", "cursor": cursor})
            assert not set(_names(r)) & set(first)
            r = await c.call_tool("call_tool", {"name": first[0], "arguments": {"person": "Ada"}})
            assert r.structured_content is None or r.structured_content.get("error") != (
                "tool_not_available"
            )

    anyio.run(main)


def test_calls_to_a_server_that_announces_no_change_note_one_relist_until_it_is_taken(
    tmp_path: Path,
) -> None:
    """The time server promises no tools/list_changed, so the gateway re-lists it after its
    calls: the first call notes it, the next ones find it pending (no wake-up per call), and
    once the watcher took it a call notes the next one."""
    cfg = _config(tmp_path, "2025-11-25", call_gate="off")

    async def main() -> None:
        async with _gateway(cfg) as gw:
            time_server = gw.shared.downstreams["time"]
            notes: list[bool] = []
            time_server.on_change = lambda: notes.append(time_server.tools_changed.is_set())
            for taken in range(2):
                time_server.tools_changed = anyio.Event()  # what the watcher does as it re-lists
                for _ in range(3):
                    r = await gw.calls.checked("time__get_current_time", {"timezone": "Asia/Tokyo"})
                    assert not r.is_error
                assert notes == [True] * (taken + 1)

    anyio.run(main)


def test_a_calls_possible_silent_change_is_told_to_the_pool_once_its_answer_is_out(
    tmp_path: Path,
) -> None:
    """The re-list a call of a server that announces no changes needs wakes the change watcher
    only once the gateway has answered the call (``answered``), not on the call's way back."""
    cfg = _config(tmp_path, "2025-11-25", call_gate="off")

    async def main() -> None:
        async with _gateway(cfg) as gw:
            time_server = gw.shared.downstreams["time"]
            notes: list[bool] = []
            time_server.on_change = lambda: notes.append(time_server.tools_changed.is_set())
            time_server.tools_changed = anyio.Event()
            with anyio.fail_after(10):
                await time_server.call_tool("get_current_time", {"timezone": "UTC"})
            assert time_server.tools_changed.is_set() and notes == []  # pending, told nobody
            time_server.answered()
            time_server.answered()
            assert notes == [True]  # once

    anyio.run(main)


def _quiet_server() -> Server[Any]:
    """A server that never announces a change of its tools: ``add_tool`` adds one silently."""
    tools = {
        "add_tool": types.Tool(
            name="add_tool", description="Add a new tool.", input_schema={"type": "object"}
        )
    }

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(tools.values()))

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if (params.arguments or {}).get("add"):
            tools["fresh_tool"] = types.Tool(
                name="fresh_tool",
                description="Translate Klingon poetry into haiku.",
                input_schema={"type": "object"},
            )
        return types.CallToolResult(content=[types.TextContent(type="text", text="done")])

    return Server("quiet", on_list_tools=list_tools, on_call_tool=call_tool)


def test_a_server_relisted_after_its_calls_is_reviewed_again_only_when_its_listing_changed(
    tmp_path: Path,
) -> None:
    """A server that promised no tools/list_changed is re-listed after its calls; a listing
    the same as the last one is not reviewed again (no store write), a changed one is, and the
    new tool becomes routable."""
    from toolroute.gateway.ops.reload import Live
    from toolroute.gateway.ops.syncing import watch_changes
    from toolroute.store.base import meta_writes

    cfg = GatewayConfig(
        settings=ToolrouteSettings(store=str(tmp_path / "store"), call_gate="off"),
        servers=memory_specs({"quiet": _quiet_server()}, "2025-11-25"),
    )
    live = Live(cfg)

    async def relisted(gw: Gateway, arguments: dict[str, Any]) -> None:
        last = live.listings.last.get("quiet") if live.listings is not None else None
        r = await gw.calls.checked("quiet__add_tool", arguments)
        assert not r.is_error
        with anyio.fail_after(20):  # the re-list runs at most once a second
            while live.listings is None or live.listings.last.get("quiet") is last:
                await anyio.sleep(0.05)
            async with live.lock:  # the review (if any) after the listing has ended
                pass

    async def main() -> None:
        async with _gateway(cfg) as gw, anyio.create_task_group() as tg:
            store_dir = gw.shared.router.store.directory
            tg.start_soon(watch_changes, live, gw.shared.downstreams, gw)
            await relisted(gw, {})  # the watcher's first re-list: reviewed
            writes = meta_writes(store_dir)
            await relisted(gw, {})  # listed as before: not reviewed
            assert meta_writes(store_dir) == writes
            assert "quiet__fresh_tool" not in gw.shared.presenter.tools_by_name
            await relisted(gw, {"add": True})  # a silent change: reviewed, indexed
            assert meta_writes(store_dir) > writes
            assert "quiet__fresh_tool" in gw.shared.presenter.tools_by_name
            tg.cancel_scope.cancel()

    anyio.run(main)
