"""The order servers are indexed in at start (gateway/ops/startup.py), and the caps on requests
waiting for a client session's answers (gateway/shell/_relay.py)."""

from __future__ import annotations

import anyio
import mcp.types as types

from toolroute.downstream.servers import Downstreams, ListedServer
from toolroute.downstream.sync import Listings
from toolroute.gateway.ops.startup import STEP_TOOLS, Warmup, next_step
from toolroute.gateway.shell._relay import MAX_ASKS_PER_SESSION, Relay


def _listings(counts: dict[str, int]) -> Listings:
    listings = Listings()
    for name, n in counts.items():
        tools = tuple(types.Tool(name=f"t{i}", input_schema={"type": "object"}) for i in range(n))
        listings.last[name] = ListedServer(name, name, "", tools)
    return listings


def test_small_servers_are_indexed_together_and_smallest_first() -> None:
    listings = _listings({"big": STEP_TOOLS + 1, "a": 10, "b": 1500, "c": 600})
    assert next_step(["big", "a", "b", "c"], listings) == ["a", "c"]  # b would pass the step


def test_a_server_bigger_than_a_step_is_indexed_alone() -> None:
    listings = _listings({"big": STEP_TOOLS + 1, "bigger": STEP_TOOLS + 5})
    assert next_step(["bigger", "big"], listings) == ["big"]


def test_a_warmup_ends_when_it_settles_or_at_its_deadline() -> None:
    async def main() -> None:
        with anyio.fail_after(10):
            await Warmup(0.0, ["a"]).wait()  # nothing settled it: its deadline is now
            warmup = Warmup(3600, ["a", "b"])
            warmup.settle()
            await warmup.wait()

    anyio.run(main)


def test_a_call_at_start_waits_for_its_own_server_only() -> None:
    async def main() -> None:
        with anyio.fail_after(10):
            warmup = Warmup(3600, ["quick", "big"])
            warmup.settle("quick")
            await warmup.wait("quick")  # the big one is not ready: no matter
            await warmup.wait("added-since")  # a server the start did not know
            assert not warmup.settled.is_set() and not warmup.ready("big")
            warmup.settle("big")
            await warmup.wait()

    anyio.run(main)


def test_a_session_holds_a_bounded_number_of_waiting_requests() -> None:
    relay = Relay(Downstreams({}), bus=None)  # type: ignore[arg-type]
    slots = [relay.ask_slot(1, "sampling/createMessage") for _ in range(MAX_ASKS_PER_SESSION)]
    assert all(slot.__enter__() for slot in slots)
    with relay.ask_slot(1, "sampling/createMessage") as admitted:
        assert not admitted  # one more for this session: refused
    with relay.ask_slot(2, "sampling/createMessage") as admitted:
        assert admitted  # another session has its own
    slots[0].__exit__(None, None, None)
    with relay.ask_slot(1, "sampling/createMessage") as admitted:
        assert admitted  # one was answered: room again
    for slot in slots[1:]:
        slot.__exit__(None, None, None)
    assert relay.asking == {}
