"""The order in which the simulated agent meets its tasks (toolroute bench simulate): one pass,
or a seeded workload in which the same jobs recur."""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np

from toolroute.errors import ConfigError

__all__ = ["STREAMS", "Stream", "task_stream"]

Stream = Literal["once", "zipf", "sessions"]
STREAMS: tuple[Stream, ...] = get_args(Stream)


def task_stream(count: int, stream: Stream, seed: int, tasks: int | None = None) -> list[int]:
    """The order in which the agent meets the ``count`` tasks, drawn from ``seed`` alone:

    once       each task once, in file order (``tasks`` may cut it)
    zipf       ``tasks`` draws with P(rank k) ∝ 1/k over a seeded ranking of the tasks:
               the same jobs recur, a few very often (real agents' workloads)
    sessions   sessions of Geometric(1/5) tasks, each session drawing from 3 tasks
               picked by the Zipf law: bursts of related, repeated work
    """
    if count < 1:
        raise ConfigError("a stream needs at least one task")
    if stream not in STREAMS:
        raise ConfigError(f"unknown stream {stream!r}; choose from: {', '.join(STREAMS)}")
    if stream == "once":
        return list(range(count if tasks is None else min(tasks, count)))
    n = tasks if tasks is not None else 2000
    if n < 1:
        raise ConfigError(f"tasks must be at least 1, got {n}")
    rng = np.random.default_rng([seed, 7_919])  # its own stream: the world's draws never move
    ranking = rng.permutation(count)
    weights = 1.0 / np.arange(1, count + 1)
    weights /= weights.sum()
    if stream == "zipf":
        return [int(ranking[k]) for k in rng.choice(count, size=n, p=weights)]
    out: list[int] = []
    while len(out) < n:
        pool = ranking[rng.choice(count, size=min(3, count), replace=False, p=weights)]
        length = int(rng.geometric(0.2))
        out.extend(int(pool[i]) for i in rng.integers(len(pool), size=length))
    return out[:n]
