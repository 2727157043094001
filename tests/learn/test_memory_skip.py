"""What a first call after a find_tools answer passed over (memory.passed_over,
memory.learn_from_call): the gateway's side of the usage memory's abandoned answers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from toolroute.learn.memory import learn_from_call, passed_over

A, B, C, X = ("s", "a"), ("s", "b"), ("t", "c"), ("u", "x")


def test_the_tools_ranked_above_the_called_one_are_passed_over() -> None:
    assert passed_over([A, B, C], A, shown_earlier=False) == []
    assert passed_over([A, B, C], C, shown_earlier=False) == [A, B]


def test_a_call_outside_the_answer_passes_over_all_of_it_unless_an_earlier_answer_showed_it() -> (
    None
):
    assert passed_over([A, B], X, shown_earlier=False) == [A, B]
    assert passed_over([A, B], X, shown_earlier=True) is None


@dataclass
class _State:
    last_query: str = "convert a time"
    last_shown: list[tuple[str, str]] = field(default_factory=lambda: [A, B, C])


class _Memory:
    def __init__(self) -> None:
        self.skips: list[tuple[str, list[tuple[str, str]], str]] = []

    def remember_skip(self, query: str, shown: Sequence[tuple[str, str]], client: str = "") -> None:
        self.skips.append((query, list(shown), client))


def test_only_the_first_call_after_an_answer_teaches_and_a_call_for_an_earlier_need_waits() -> None:
    memory, state = _Memory(), _State()
    learn_from_call(memory, state, X, True, "alice")  # an earlier answer's tool: still pending
    assert memory.skips == [] and state.last_shown == [A, B, C]
    learn_from_call(memory, state, B, False, "alice")
    learn_from_call(memory, state, C, False, "alice")  # the answer is spent
    assert memory.skips == [("convert a time", [A], "alice")] and state.last_shown == []
