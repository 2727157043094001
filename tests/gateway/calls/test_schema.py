"""The argument check's deadline counts the check's own CPU work, not the machine's load."""

from __future__ import annotations

import time
from typing import Any

import pytest

from toolroute.gateway.calls import _schema as validate


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
