"""The MCP shell (gateway/shell/server.py): what a request's calls leave behind is recorded
once its reply is out; the hooks given when it is made (code mode) change what it lists and
answers."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import anyio
import mcp.types as types
from mcp import Client

from tests.conftest import SMALL_CATALOG, HashingEmbedder
from toolroute.catalog import catalog_from_dict
from toolroute.codemode.execute import code_mode
from toolroute.codemode.limits import CodeModeLimits
from toolroute.downstream.servers import Downstreams
from toolroute.gateway.calls.record import Recorder
from toolroute.gateway.shell.server import Gateway, _Request, recorded_after_reply
from toolroute.route.preconditions import SessionState
from toolroute.router import Router
from toolroute.settings import ToolrouteSettings
from toolroute.stats import Outcome


class _Shell:
    """The part of :class:`Gateway` the step reads (what is answering, its recorder)."""

    answered = Gateway.answered
    record_answering = Gateway.record_answering

    def __init__(self, recorder: Recorder) -> None:
        self.calls = SimpleNamespace(recorder=recorder)
        self.answering: dict[int, list[Any]] = {}


def _shell() -> tuple[Any, list[str]]:
    """A gateway as the step reads it, and what its recorder wrote."""
    written: list[str] = []
    gateway = SimpleNamespace(
        router=SimpleNamespace(record=lambda outcome: written.append(outcome.tool)),
        downstreams=SimpleNamespace(servers={}),
        faults=SimpleNamespace(audit=lambda part: nullcontext()),
        metrics=SimpleNamespace(store=lambda operation: nullcontext()),
    )
    return _Shell(Recorder(cast(Any, gateway))), written


def _request(transport: str) -> _Request:
    outbound = SimpleNamespace(transport=SimpleNamespace(kind=transport))
    ctx = SimpleNamespace(session=SimpleNamespace(_request_outbound=outbound))
    params = types.CallToolRequestParams(name="call_tool", arguments={})
    return _Request(cast(Any, ctx), params, {}, SessionState(), None, "", cast(Any, None), "")


async def _handler(r: _Request) -> types.CallToolResult:
    r.records.append(Outcome("time", "now", True, 0.1))
    return types.CallToolResult(content=[])


def test_a_requests_records_wait_until_its_task_has_written_the_reply() -> None:
    shell, written = _shell()
    seen: dict[str, list[str]] = {}

    async def request() -> None:  # the request's own task, as the SDK's dispatcher runs it
        await recorded_after_reply(shell, _request("stdio"), _handler)
        seen["as the handler returns"] = list(written)  # the SDK writes the reply next

    async def main() -> None:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(request)

    anyio.run(main)
    assert seen["as the handler returns"] == []
    assert written == ["now"]  # once the task that answered has ended
    assert shell.answering == {}


def test_an_in_process_clients_records_land_as_its_handler_returns() -> None:
    shell, written = _shell()

    async def main() -> None:
        await recorded_after_reply(shell, _request("direct"), _handler)
        assert written == ["now"]  # the caller has the answer now: nothing to wait for

    anyio.run(main)


def test_a_stopping_gateway_records_what_requests_still_answering_left_behind() -> None:
    shell, written = _shell()

    async def main() -> None:
        await recorded_after_reply(shell, _request("stdio"), _handler)
        assert written == []  # this task (the request's) has not ended
        shell.record_answering()  # what `toolroute serve` does as it stops
        assert written == ["now"] and shell.answering == {}

    anyio.run(main)
    assert written == ["now"]  # the task's end records nothing twice


def test_code_mode_given_when_the_gateway_is_made_lists_execute_and_answers_with_signatures(
    tmp_path: Path,
) -> None:
    with Router(
        catalog_from_dict(SMALL_CATALOG), store=tmp_path, embedder=HashingEmbedder()
    ) as router:
        router.index()
        settings = ToolrouteSettings(call_gate="off")
        plain = Gateway(router, Downstreams({}), settings)
        coded = Gateway(
            router, Downstreams({}), settings, code_mode_for=code_mode(CodeModeLimits())
        )

        async def main() -> None:
            async with (
                Client(plain.server, mode="legacy", raise_exceptions=True) as p,
                Client(coded.server, mode="legacy", raise_exceptions=True) as c,
            ):
                assert "execute" not in [t.name for t in (await p.list_tools()).tools]
                assert "execute" in [t.name for t in (await c.list_tools()).tools]
                off = await p.call_tool("execute", {"code": "1"})
                assert off.is_error and "code_mode = true" in str(off.structured_content)
                ran = await c.call_tool("execute", {"code": "1 + 1"})
                assert not ran.is_error and (ran.structured_content or {})["result"] == 2
                query = {"query": "what time is it", "k": 1}
                found = (await c.call_tool("find_tools", query)).structured_content or {}
                assert "signature" in found["candidates"][0]  # code mode's find_tools
                found = (await p.call_tool("find_tools", query)).structured_content or {}
                assert "input_schema" in found["candidates"][0]

        anyio.run(main)
