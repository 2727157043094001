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
from toolroute.gateway.calls._limits import Limits
from toolroute.gateway.calls.pipeline import Answer, Call, CallResult, Host, Next, bind, run
from toolroute.gateway.calls.record import Learnt
from toolroute.policy import Limit, LimitSettings
from toolroute.route.preconditions import SessionState
from toolroute.stats import Outcome


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
    limits = Limits(LimitSettings(Limit(calls_per_minute=60)), cast(Any, None))
    assert [s.__name__ for s in pipeline.steps(limits.step)] == [
        "allow_list",
        "arguments",
        "call_gate",
        "preconditions",
        "step",  # the limits'
        "learn",
        "quarantine",
        "known_tool",
        "schema",
        "forward",
    ]
    assert pipeline.steps(limits.step)[4] == limits.step
    # a gateway without [limits] has no limits step at all
    assert tuple(s for s in pipeline.steps(limits.step) if s != limits.step) == pipeline.STEPS
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

    class Counted(Limits):
        async def call(self, run: Any, name: str, arguments: Any, client: str = "") -> Any:
            seen["limited as"] = client
            return await super().call(run, name, arguments, client)

    async def call_tool(tool: str, arguments: Any, timeout: float, caller: Any) -> Any:
        seen["caller"] = caller
        return _result("done"), 0.1

    gateway = SimpleNamespace(presenter=SimpleNamespace(tools_by_name={}))
    limits = Counted(LimitSettings(Limit(calls_per_minute=60)), cast(Any, gateway))
    host = SimpleNamespace(
        downstreams=SimpleNamespace(servers={"time": SimpleNamespace(call_tool=call_tool)}),
        bridge=None,
        settings=SimpleNamespace(call_timeout_s=5.0),
    )
    call = Call("time__now", {}, SessionState(), caller=caller, identity="token:ci")
    result = anyio.run(run, cast(Host, host), call, (limits.step, pipeline.forward))
    assert _text(result) == "done"
    assert seen["limited as"] == "token:ci" and seen["caller"] is caller
    # what the call left behind reached the call the limits made, as the one the client made
    assert call.records == [Outcome("time", "now", success=True, latency_s=0.1)]


def test_forward_takes_the_bridge_when_it_answers_and_notes_only_a_results_outcome() -> None:
    asked = types.InputRequiredResult(input_requests={}, request_state="s")

    class Bridge:
        async def call(self, server: str, tool: str, *rest: Any) -> Any:
            if tool == "direct":
                return None  # not a call it takes: the downstreams'
            return (asked, 0.0) if tool == "asks" else (_result("bridged"), 0.2)

    async def call_tool(tool: str, *rest: Any, caller: Any) -> Any:
        return _result("downstreams"), 0.1

    host = SimpleNamespace(
        downstreams=SimpleNamespace(servers={"s": SimpleNamespace(call_tool=call_tool)}),
        bridge=Bridge(),
        settings=SimpleNamespace(call_timeout_s=5.0),
    )
    calls = [_call(f"s__{tool}") for tool in ("bridged", "direct", "asks")]

    async def main() -> list[Any]:
        path = bind(cast(Host, host), (pipeline.forward,))
        return [await path(call) for call in calls]

    bridged, direct, asks = anyio.run(main)
    assert (_text(bridged), _text(direct), asks) == ("bridged", "downstreams", asked)
    noted = [[(o.tool, o.latency_s) for o in c.records if isinstance(o, Outcome)] for c in calls]
    assert noted == [[("bridged", 0.2)], [("direct", 0.1)], []]  # a round is no outcome yet


def test_a_call_the_limits_refuse_never_reaches_the_usage_memory() -> None:
    tools = {"s__refused": None, "s__ok": None}
    gateway = SimpleNamespace(presenter=SimpleNamespace(tools_by_name=tools))
    one_a_minute = LimitSettings(tools={"s__refused": Limit(calls_per_minute=1, burst=1)})
    limits = Limits(one_a_minute, cast(Any, gateway))
    host = SimpleNamespace(presenter=gateway.presenter)

    async def answer(host: Host, call: Call, next: Next) -> CallResult:
        return _result("done")

    steps = [s for s in pipeline.steps(limits.step) if s in (limits.step, pipeline.learn)]
    path = bind(cast(Host, host), (*steps, answer))
    state = SessionState(last_query="what time is it")
    calls = [Call(name, {}, state) for name in ("s__refused", "s__refused", "s__ok")]

    async def main() -> list[CallResult]:
        return [await path(call) for call in calls]

    answers = anyio.run(main)
    assert [_text(a) for a in answers[::2]] == ["done", "done"]
    assert cast(types.CallToolResult, answers[1]).structured_content["error"] == "limit_exceeded"
    # a refusal of the client's limit says nothing about the tool: it teaches nothing
    taught = [[(r.tool, r.query) for r in c.records if isinstance(r, Learnt)] for c in calls]
    assert taught == [[("refused", "what time is it")], [], [("ok", "what time is it")]]
