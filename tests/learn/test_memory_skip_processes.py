"""What the agent passes over teaches the usage memory (issue 24), through a real gateway over
two real time servers (``clock-a``, ``clock-b``): the first call after a find_tools answer
counts the tools ranked above the one called (or the whole answer, when the call goes
outside it) as abandoned for that query, for that client alone; the answer is then spent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.helpers.configs import TIME_SERVER, write_config
from toolroute.config import load_config
from toolroute.gateway.calls.pipeline import Call
from toolroute.gateway.ops.app import running_downstreams
from toolroute.gateway.ops.syncing import sync_router
from toolroute.gateway.shell.server import Gateway
from toolroute.settings import ToolrouteSettings

pytestmark = pytest.mark.integration

QUERY = "what is the current time in a given timezone"
CONVERT = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}


def _score(found: dict[str, Any], server: str, tool: str) -> float:
    return next(
        float(c["score"]) for c in found["candidates"] if (c["server"], c["tool"]) == (server, tool)
    )


def test_a_call_past_the_answer_lowers_what_it_passed_over_for_that_client_only(
    tmp_path: Path, onnx: Any
) -> None:
    clocks = {"clock-a": TIME_SERVER, "clock-b": TIME_SERVER}
    cfg = load_config(write_config(tmp_path, clocks, call_timeout_s=20))
    embedder = onnx  # the session's model: built once for the whole run

    async def main() -> None:
        with anyio.fail_after(120):
            await rounds()

    async def rounds() -> None:
        async with running_downstreams(cfg) as downstreams:
            router, _ = await sync_router(cfg, downstreams, embedder=embedder)
            gw = Gateway(router, downstreams, ToolrouteSettings(call_timeout_s=20, call_gate=False))
            state = gw.shared.sessions.for_client("token:alice")
            shown = (await gw.finder.find_async(QUERY, 1, state, client="alice"))["candidates"]
            top = (shown[0]["server"], shown[0]["tool"])
            assert top[1] == "get_current_time"
            # alice calls a tool outside the answer (the call gate is off), twice
            for _ in range(2):
                r = await gw.calls.call(
                    Call("clock-b__convert_time", CONVERT, state, client="alice")
                )
                assert not r.is_error  # type: ignore[union-attr]
            rows = {(r.client, r.server, r.tool): r for r in router.stats.memory.rows()}
            assert rows[("alice", *top)].skips == 1  # the second call: the answer was spent
            assert ("bob", *top) not in rows
            alice = _score(await gw.finder.find_async(QUERY, 4, client="alice"), *top)
            assert alice < _score(
                await gw.finder.find_async(QUERY, 4, client="bob"), *top
            )  # same stats
            # the agent calls the second-ranked tool: the first one is what it passed over
            found = (await gw.finder.find_async(QUERY, 4, state, client="alice"))["candidates"]
            first, second = ((c["server"], c["tool"]) for c in found[:2])
            r = await gw.calls.call(
                Call(f"{second[0]}__{second[1]}", _args(second[1]), state, client="alice")
            )
            assert not r.is_error  # type: ignore[union-attr]
            rows = {(r.client, r.server, r.tool): r for r in router.stats.memory.rows()}
            assert rows[("alice", *first)].skips >= 1
            assert rows[("alice", *second)].skips == 0 and rows[("alice", *second)].successes
            stored = {(r.client, r.server, r.tool, r.skips) for r in router.store.load_memory()}
            assert ("alice", *top, rows[("alice", *top)].skips) in stored  # kept for a restart
            router.close()

    anyio.run(main)


def _args(tool: str) -> dict[str, Any]:
    return {"timezone": "UTC"} if tool == "get_current_time" else CONVERT
