"""The order in which the simulated agent meets its tasks (bench/task_stream.py)."""

from __future__ import annotations

from collections import Counter

import pytest

from toolroute.bench.task_stream import task_stream
from toolroute.errors import ConfigError


def test_a_zipf_stream_repeats_the_top_ranked_tasks_and_is_fixed_by_the_seed() -> None:
    a = task_stream(95, "zipf", 3, 2000)
    assert a == task_stream(95, "zipf", 3, 2000)
    assert a != task_stream(95, "zipf", 4, 2000)
    counts = Counter(a).most_common()
    assert len(a) == 2000 and counts[0][1] > 5 * counts[20][1]  # P(rank k) ∝ 1/k
    assert task_stream(95, "once", 0) == list(range(95))


def test_sessions_are_bursts_over_a_few_tasks() -> None:
    s = task_stream(95, "sessions", 1, 500)
    assert len(s) == 500
    repeats = sum(x == y for x, y in zip(s, s[1:], strict=False))
    assert repeats > 100  # consecutive tasks often repeat within a session


def test_a_bad_stream_setting_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        task_stream(10, "daily", 0)  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        task_stream(0, "zipf", 0)
