"""The call path's runner (gateway/calls/pipeline.py): the steps in their documented order, each
bound once, run down and back in that order; a check's refusal ends the path there."""

from __future__ import annotations

from collections.abc import Awaitable
from types import SimpleNamespace
from typing import Any, cast

import anyio
import mcp.types as types
import pytest

from toolroute.gateway.calls import pipeline
from toolroute.gateway.calls.pipeline import Answer, Call, CallResult, Host, Next, bind, run
from toolroute.route.preconditions import SessionState


def _result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def _text(result: CallResult) -> str:
    assert isinstance(result, types.CallToolResult)
    return cast(types.TextContent, result.content[0]).text


def _recording(seen: list[str]) -> tuple[Any, Any, Any]:
    """A check (plain function), a step around the rest (async) and a last step that answers,
    each noting what it saw."""

    def check(host: Host, call: Call, next: Next) -> Awaitable[CallResult]:
        seen.append(f"check {call.tool}")
        if call.tool == "refused":
            return Answer(_result("refused by check"))
        return next(call)

    async def around(host: Host, call: Call, next: Next) -> CallResult:
        seen.append("around down")
        result = await next(call)
        seen.append(f"around up: {_text(result)}")
        return result

    async def last(host: Host, call: Call, next: Next) -> CallResult:
        seen.append(f"last {call.server}")
        await anyio.sleep(0)  # a real suspension, as a downstream call has
        return _result(f"answer of {call.name}")

    return check, around, last


def _call(name: str) -> Call:
    return Call(name, {}, SessionState())


def test_the_call_path_lists_its_steps_in_the_documented_order() -> None:
    assert [s.__name__ for s in pipeline.STEPS] == [
        "allow_list",
        "arguments",
        "call_gate",
        "preconditions",
        "limits",
        "learn",
        "quarantine",
        "known_tool",
        "schema",
        "forward",
    ]
    assert pipeline.STEPS[-len(pipeline.EXECUTE) :] == pipeline.EXECUTE


def test_a_call_knows_its_server_and_tool() -> None:
    call = _call("time__get_current_time")
    assert (call.server, call.tool) == ("time", "get_current_time")
    assert _call("no_separator").tool == ""


def test_a_bound_path_runs_each_step_in_order_down_and_back() -> None:
    seen: list[str] = []
    check, around, last = _recording(seen)
    path = bind(cast(Host, None), (check, around, check, last))

    async def main() -> None:
        for _ in range(2):  # bound once, run as often as calls come
            assert _text(await path(_call("time__now"))) == "answer of time__now"

    anyio.run(main)
    assert seen == 2 * [
        "check now",
        "around down",
        "check now",
        "last time",
        "around up: answer of time__now",
    ]


def test_a_refusing_check_ends_the_path_and_the_steps_around_it_see_the_refusal() -> None:
    seen: list[str] = []
    check, around, last = _recording(seen)
    result = anyio.run(run, cast(Host, None), _call("time__refused"), (around, check, last))
    assert _text(result) == "refused by check"
    assert seen == ["around down", "check refused", "around up: refused by check"]


def test_a_path_whose_last_step_hands_the_call_on_fails_loudly() -> None:
    check, _, _ = _recording([])
    with pytest.raises(RuntimeError, match="no step answered"):
        anyio.run(run, cast(Host, None), _call("time__now"), (check,))


def test_a_calls_caller_and_identity_reach_the_limits_and_the_server_as_data() -> None:
    seen: dict[str, Any] = {}
    caller = SimpleNamespace(stateless=False)

    class Limits:
        async def call(self, run: Any, name: str, arguments: dict[str, Any], client: str) -> Any:
            seen["limited as"] = client
            return await run(name, arguments)

    async def call_tool(tool: str, arguments: Any, timeout: float, caller: Any) -> Any:
        seen["caller"] = caller
        return _result("done"), 0.1

    host = SimpleNamespace(
        limits=Limits(),
        pool={"time": SimpleNamespace(call_tool=call_tool)},
        bridge=None,
        call_timeout_s=5.0,
        record=lambda outcome: seen.setdefault("recorded", outcome),
    )
    call = Call("time__now", {}, SessionState(), caller=caller, identity="token:ci")
    result = anyio.run(run, cast(Host, host), call, (pipeline.limits, pipeline.forward))
    assert _text(result) == "done"
    assert seen["limited as"] == "token:ci" and seen["caller"] is caller
    assert seen["recorded"].success


def test_forward_takes_the_bridge_when_it_answers_and_records_only_a_result() -> None:
    recorded: list[Any] = []
    asked = types.InputRequiredResult(input_requests={}, request_state="s")

    class Bridge:
        async def call(self, server: str, tool: str, *rest: Any) -> Any:
            if tool == "direct":
                return None  # not a call it takes: the pool's
            return (asked, 0.0) if tool == "asks" else (_result("bridged"), 0.2)

    async def call_tool(tool: str, *rest: Any, caller: Any) -> Any:
        return _result("pool"), 0.1

    host = SimpleNamespace(
        pool={"s": SimpleNamespace(call_tool=call_tool)},
        bridge=Bridge(),
        call_timeout_s=5.0,
        record=recorded.append,
    )

    async def main() -> list[Any]:
        path = bind(cast(Host, host), (pipeline.forward,))
        return [await path(_call(f"s__{tool}")) for tool in ("bridged", "direct", "asks")]

    bridged, direct, asks = anyio.run(main)
    assert (_text(bridged), _text(direct), asks) == ("bridged", "pool", asked)
    assert [(o.tool, o.latency_s) for o in recorded] == [("bridged", 0.2), ("direct", 0.1)]


def test_a_call_the_limits_refuse_never_reaches_the_usage_memory() -> None:
    refusal = types.CallToolResult(content=[], is_error=True)

    class Limits:
        async def call(self, run: Any, name: str, arguments: Any, client: str) -> Any:
            return refusal if name == "s__refused" else await run(name, arguments)

    remembered: list[str] = []
    host = SimpleNamespace(
        limits=Limits(),
        presenter=SimpleNamespace(tools_by_name={"s__refused": None, "s__ok": None}),
        router=SimpleNamespace(
            remember_use=lambda q, server, tool, ok, **k: remembered.append(tool)
        ),
    )

    async def answer(host: Host, call: Call, next: Next) -> CallResult:
        return _result("done")

    steps = [s for s in pipeline.STEPS if s in (pipeline.limits, pipeline.learn)]
    path = bind(cast(Host, host), (*steps, answer))
    state = SessionState(last_query="what time is it")

    async def main() -> None:
        assert await path(Call("s__refused", {}, state)) is refusal
        assert _text(await path(Call("s__ok", {}, state))) == "done"

    anyio.run(main)
    assert remembered == ["ok"]  # a refusal of the client's limit says nothing about the tool
