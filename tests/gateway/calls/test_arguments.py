"""A tool call's arguments as models write them, bounded in depth and size; the schema check's
deadline counts the check's own CPU work, not the machine's load."""

from __future__ import annotations

import time
from typing import Any

import pytest

from toolroute.gateway.calls import arguments as validate
from toolroute.gateway.calls.arguments import check_arguments, coerce_arguments


def _keyword_that_waits(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
    time.sleep(0.3)  # the thread descheduled, as on a loaded machine: no CPU used
    return iter(())


def _keyword_that_computes(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
    end = time.thread_time() + 0.3
    while time.thread_time() < end:  # the schema's own work
        pass
    return iter(())


def _run(keyword: Any, deadline_s: float) -> None:
    check = validate._timed(keyword)
    validate._clock.deadline = time.thread_time() + deadline_s
    try:
        for _ in range(3):
            check(None, None, None, None)
    finally:
        validate._clock.deadline = float("inf")


def test_a_check_that_only_waits_is_not_overtime() -> None:
    _run(_keyword_that_waits, 0.2)  # 0.9 s of wall time, almost no CPU


def test_a_check_that_computes_past_its_deadline_is_stopped() -> None:
    with pytest.raises(validate._Overtime):
        _run(_keyword_that_computes, 0.2)


@pytest.mark.parametrize(
    ("arguments", "read"),
    [({"a": 1}, {"a": 1}), ('{"a": 1}', {"a": 1}), ("", {}), (" {} ", {})],
)
def test_arguments_are_an_object_or_that_object_as_json_text(
    arguments: object, read: dict[str, object]
) -> None:
    assert coerce_arguments(arguments) == (read, None)


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (None, "`arguments` is null"),
        ("[1, 2]", "must be an object"),
        ("{not json", "not a JSON object"),
        ("[" * 100_000, "not a JSON object"),
        (3, "must be an object"),
    ],
)
def test_arguments_of_another_kind_are_refused_with_what_to_send(
    arguments: object, says: str
) -> None:
    read, problem = coerce_arguments(arguments)
    assert problem is not None and says in problem and "{}" in problem


def test_arguments_deeper_than_32_or_over_a_megabyte_are_refused() -> None:
    nested: object = "end"
    for _ in range(32):
        nested = [nested]
    assert check_arguments({"a": nested}) is not None
    assert check_arguments({"a": [[["ok"]]]}) is None
    assert check_arguments({"a": "x" * 1_000_001}) is not None
