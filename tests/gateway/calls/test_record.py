"""What calls leave behind, recorded in order (gateway/calls/record.py): outcomes into the
statistics, a server's possible silent change, what a call teaches the usage memory."""

from __future__ import annotations

from contextlib import nullcontext
from types import SimpleNamespace
from typing import Any, cast

from toolroute.gateway.calls.record import Learnt, Recorder
from toolroute.route.preconditions import SessionState
from toolroute.stats import Outcome


class _Router:
    """What the recorder writes to, noted in order."""

    def __init__(self) -> None:
        self.done: list[tuple[Any, ...]] = []

    def record(self, outcome: Outcome) -> None:
        self.done.append(("outcome", outcome.tool, outcome.success))

    def remember_use(self, query: str, server: str, tool: str, ok: bool, client: str) -> None:
        self.done.append(("use", query, tool, ok))

    def remember_skip(self, query: str, shown: Any, client: str = "") -> None:
        self.done.append(("skip", query, list(shown)))


def _recorder() -> tuple[Recorder, _Router]:
    router = _Router()
    gateway = SimpleNamespace(
        router=router,
        downstreams=SimpleNamespace(
            servers={"s": SimpleNamespace(answered=lambda: router.done.append(("answered",)))}
        ),
        faults=SimpleNamespace(audit=lambda part: nullcontext()),
        metrics=SimpleNamespace(store=lambda operation: nullcontext()),
    )
    return Recorder(cast(Any, gateway)), router


def _learnt(state: SessionState, tool: str, shown_earlier: bool = False) -> Learnt:
    return Learnt(state, "s", tool, True, state.last_query, state.last_shown, shown_earlier, "ci")


def test_records_land_in_the_order_the_call_noted_them() -> None:
    recorder, router = _recorder()
    state = SessionState(last_query="what time is it")
    recorder.record([Outcome("s", "now", True, 0.1), _learnt(state, "now")])
    assert router.done == [
        ("outcome", "now", True),
        ("answered",),  # the server hears its call was answered: a silent change is noted
        ("use", "what time is it", "now", True),
    ]


def test_only_the_first_call_after_an_answer_teaches_what_it_passed_over() -> None:
    recorder, router = _recorder()
    state = SessionState(last_query="time", last_shown=[("s", "a"), ("s", "b"), ("s", "c")])
    # both calls completed after the same answer, before either was recorded
    first, second = _learnt(state, "c"), _learnt(state, "b")
    recorder.record([first])
    recorder.record([second])
    skips = [d for d in router.done if d[0] == "skip"]
    assert skips == [("skip", "time", [("s", "a"), ("s", "b")])]
    assert state.last_shown == []  # spent by the first


def test_an_answer_replaced_before_the_record_is_left_to_the_calls_after_it() -> None:
    recorder, router = _recorder()
    state = SessionState(last_query="time", last_shown=[("s", "a"), ("s", "b")])
    learnt = _learnt(state, "b")
    state.last_query, state.last_shown = "weather", [("w", "x")]  # a newer find_tools answer
    recorder.record([learnt])
    assert [d[0] for d in router.done] == ["use"]  # the use is the call's own; no skip
    assert state.last_shown == [("w", "x")]  # the newer answer waits for its own first call


def test_a_failing_store_is_noted_and_the_records_after_it_still_land() -> None:
    from toolroute.gateway.health import Faults

    router = _Router()

    def broken(outcome: Outcome) -> None:
        raise OSError("disk full")

    faults = Faults()
    gateway = SimpleNamespace(
        router=SimpleNamespace(
            record=broken, remember_use=router.remember_use, remember_skip=router.remember_skip
        ),
        downstreams=SimpleNamespace(servers={}),
        faults=faults,
        metrics=SimpleNamespace(store=lambda operation: nullcontext()),
    )
    state = SessionState(last_query="time")
    Recorder(cast(Any, gateway)).record([Outcome("s", "now", True, 0.1), _learnt(state, "now")])
    assert "store" in faults.now()
    assert router.done == [("use", "time", "now", True)]
