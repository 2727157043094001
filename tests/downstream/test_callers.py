"""Whose a downstream call is (downstream/callers.py): which caller a server's message during
calls goes to, and the bound on its requests waiting for an answer."""

from __future__ import annotations

from typing import Any

import anyio
import mcp.types as types

from toolroute.downstream.callers import MAX_ASKS, Asks, CallContext, caller_of


class _Caller:
    """A caller that only has an owner (what caller_of reads)."""

    def __init__(self, owner: object) -> None:
        self.owner = owner


def _calls(*owners: object) -> list[CallContext]:
    out: list[Any] = [_Caller(o) for o in owners]
    return out


def test_a_message_goes_to_the_call_it_is_tied_to_else_the_latest_of_one_owner() -> None:
    a, b = object(), object()
    one = _calls(a, a)
    assert caller_of(one, None) is one[-1]  # the latest of the one owner
    assert caller_of(one, one[0]) is one[0]  # tied to its own call
    two = _calls(a, b)
    assert caller_of(two, None) is None  # could be either's: nobody's
    assert caller_of(two, two[1]) is two[1]
    assert caller_of(two, _calls(a)[0]) is None  # tied to a call no longer in flight
    assert caller_of([], None) is None


def test_asks_beyond_the_bound_are_refused_at_once_and_none_without_a_call() -> None:
    asks = Asks("s")
    calls = _calls(object())
    answered: list[object] = []

    async def main() -> None:
        release = anyio.Event()

        async def wait(caller: CallContext) -> str:
            await release.wait()
            return "answer"

        async def one() -> None:
            answered.append(await asks.ask("sampling", wait, calls, None))

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                for _ in range(MAX_ASKS):
                    tg.start_soon(one)
                await anyio.wait_all_tasks_blocked()
                refused = await asks.ask("roots", wait, calls, None)
                assert isinstance(refused, types.ErrorData) and "too many" in refused.message
                release.set()
            assert answered == ["answer"] * MAX_ASKS
            nobody = await asks.ask("roots", wait, [], None)
            assert isinstance(nobody, types.ErrorData) and "only relayed" in nobody.message

    anyio.run(main)
