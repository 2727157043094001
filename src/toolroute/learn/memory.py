"""Usage memory: which tool an agent called after which ``find_tools`` query, and whether the
call worked. The ``adaptive`` strategy (route/adaptive.py) lifts a capability the agent keeps
using for a need, also for a paraphrase of it (queries match by embedding cosine):

    kernel     k(s) = max(0, (s − τ) / (1 − τ))                 s: cosine of the two queries
    decay      d(a) = 2^(−a / h)                                a: age of the last use, h: half-life
    evidence   e_t  = Σ_r k(s_r) d(a_r) (n⁺_r − ρ n⁻_r − σ n°_r)  over the client's rows r of tool t
    boost      b_t  = β e_t / (1 + |e_t|)                       ∈ (−β, β), saturating

n⁺ and n⁻ count the calls of the tool after the query that worked and failed; n° counts the
times it was shown for the query and the agent called none of what was shown (it abandoned
that answer: the wrong capability), so a recurring need whose right tool sits just below the
shown ones surfaces it after a miss or two.

The gateway feeds it two ways: each call made after a ``find_tools`` answer (n⁺ / n⁻), and
what the *first* call after an answer passed over (:func:`learn_from_call`): the tools ranked
above the one called, or the whole answer when the agent called a tool outside it; those count
as abandoned (n°) for that query, as in the simulated agent (bench/agent.py).

Rows are keyed by (client, query hash, server, tool): a client's uses never lift a tool in
another client's results (each allow-list keeps its own memory). The memory is bounded
(``capacity`` rows; the least recently used go first), decays, and can be cleared. Query texts
are not kept, only their hash and vector (as routing events keep only the hash).
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from toolroute.catalog.models import ToolKey
from toolroute.errors import ConfigError, log_failure

__all__ = [
    "MemoryParams",
    "MemoryRow",
    "UsageMemory",
    "decay",
    "evidence",
    "learn_from_call",
    "match_kernel",
    "memory_boost",
    "passed_over",
    "query_key",
    "shown_keys",
]

log = logging.getLogger(__name__)

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class MemoryParams:
    """Knobs of the usage memory (module docstring)."""

    match: float = 0.75
    """τ: queries less similar than this (cosine) share nothing."""
    half_life: float = 30 * 86400.0
    """h: age (in the clock's unit, seconds by default) at which a use counts half."""
    failure_weight: float = 0.0
    """ρ: a failed call after the query counts against the tool this much. 0 by default: a
    failure mostly says the vendor failed, not that the capability was the wrong one (the
    vendor posterior already counts it); counted against, it pushed the right capability
    down in the simulation's recurring (Zipf) stream."""
    skip_weight: float = 1.0
    """σ: a shown-and-abandoned answer counts against each tool in it this much."""
    boost: float = 0.3
    """β: the largest lift (or drop) of a capability's relevance."""
    capacity: int = 20_000
    """Rows kept; beyond it, the least recently used are dropped."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.match < 1.0:
            raise ConfigError(f"memory match must be in [0, 1), got {self.match}")
        if self.half_life <= 0 or self.boost < 0 or self.failure_weight < 0:
            raise ConfigError("memory half-life must be > 0, boost and failure weight >= 0")
        if self.capacity < 1:
            raise ConfigError(f"memory capacity must be >= 1, got {self.capacity}")


@dataclass(frozen=True, slots=True)
class MemoryRow:
    """One (client, query, tool): the calls made after that query, and when last."""

    client: str
    query: str
    """Hash of the query text (:func:`query_key`)."""
    server: str
    tool: str
    vector: Floats
    successes: float
    failures: float
    at: float
    skips: float = 0.0
    """Times shown for the query in an answer the agent abandoned (called none of it)."""


def query_key(text: str) -> str:
    """Hash of a query (whitespace and case folded): the memory never keeps the text."""
    norm = " ".join(text.lower().split())
    return hashlib.sha256(norm.encode("utf-8")).hexdigest()[:32]


def match_kernel(cosine: Floats, tau: float) -> Floats:
    """k(s) = max(0, (s − τ) / (1 − τ)): 1 for the same query, 0 below τ."""
    out: Floats = np.clip((cosine - tau) / (1.0 - tau), 0.0, None)
    return out


def decay(age: Floats, half_life: float) -> Floats:
    """d(a) = 2^(−a / h) (a negative age, from a clock skewed between replicas, counts 1)."""
    out: Floats = np.exp2(-np.clip(age, 0.0, None) / half_life)
    return out


def evidence(
    kernel: Floats,
    weight: Floats,
    successes: Floats,
    failures: Floats,
    rho: float,
    skips: Floats | None = None,
    sigma: float = 0.0,
) -> Floats:
    """Per row, k · d · (n⁺ − ρ n⁻ − σ n°); a tool's evidence e_t is the sum over its rows."""
    net = successes - rho * failures
    if skips is not None:
        net = net - sigma * skips
    out: Floats = kernel * weight * net
    return out


def memory_boost(e: float, beta: float) -> float:
    """b = β e / (1 + |e|): one success after the same query lifts by β/2, many by up to β."""
    return beta * e / (1.0 + abs(e))


class UsageMemory:
    """The rows of one store (or one simulated run), with per-client lookup by query vector."""

    def __init__(
        self, params: MemoryParams | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.params = params or MemoryParams()
        self.clock = clock
        self._rows: dict[tuple[str, str, str, str], MemoryRow] = {}
        self._by_client: dict[str, tuple[list[MemoryRow], Floats]] | None = None

    def __len__(self) -> int:
        return len(self._rows)

    def rows(self) -> list[MemoryRow]:
        return list(self._rows.values())

    def add(
        self,
        client: str,
        query: str,
        vector: npt.ArrayLike,
        key: ToolKey,
        success: bool,
        at: float | None = None,
        *,
        skipped: bool = False,
    ) -> MemoryRow:
        """Fold one call made after ``query`` (its hash) into the memory, or with ``skipped``
        one showing of the tool in an answer the agent abandoned; returns the row."""
        now = self.clock() if at is None else at
        k = (client, query, key[0], key[1])
        old = self._rows.pop(k, None)  # re-inserted last: dict order is recency order
        row = MemoryRow(
            client,
            query,
            key[0],
            key[1],
            np.asarray(vector, dtype=np.float64),
            (old.successes if old else 0.0) + (1.0 if success and not skipped else 0.0),
            (old.failures if old else 0.0) + (0.0 if success or skipped else 1.0),
            now if old is None else max(now, old.at),
            (old.skips if old else 0.0) + (1.0 if skipped else 0.0),
        )
        self._rows[k] = row
        while len(self._rows) > self.params.capacity:
            del self._rows[next(iter(self._rows))]
        self._by_client = None
        return row

    def load(self, rows: Iterable[MemoryRow]) -> None:
        """Replace the memory by ``rows`` (a store's), oldest first, the newest kept."""
        self._rows.clear()
        for r in sorted(rows, key=lambda r: r.at):
            self._rows[(r.client, r.query, r.server, r.tool)] = r
        while len(self._rows) > self.params.capacity:
            del self._rows[next(iter(self._rows))]
        self._by_client = None

    def clear(self, client: str | None = None) -> int:
        """Forget every row (or one client's); returns how many were dropped."""
        drop = [k for k in self._rows if client is None or k[0] == client]
        for k in drop:
            del self._rows[k]
        self._by_client = None
        return len(drop)

    def evidence(self, client: str, vector: npt.ArrayLike) -> Mapping[ToolKey, float]:
        """e_t of every tool ``client`` used after a query close to ``vector`` (module
        docstring; :func:`memory_boost` turns it into a lift); tools without any are absent."""
        if self._by_client is None:
            groups: dict[str, list[MemoryRow]] = {}
            for r in self._rows.values():
                groups.setdefault(r.client, []).append(r)
            self._by_client = {
                c: (rs, np.stack([r.vector for r in rs])) for c, rs in groups.items()
            }
        hit = self._by_client.get(client)
        q = np.asarray(vector, dtype=np.float64)
        if hit is None or q.size == 0 or hit[1].shape[1] != q.size:
            return {}
        rows, vectors = hit
        p = self.params
        kernel = match_kernel(vectors @ q, p.match)
        near = np.flatnonzero(kernel > 0)
        if near.size == 0:
            return {}
        now = self.clock()
        chosen = [rows[i] for i in near]
        weight = decay(np.array([now - r.at for r in chosen]), p.half_life)
        ev = evidence(
            kernel[near],
            weight,
            np.array([r.successes for r in chosen]),
            np.array([r.failures for r in chosen]),
            p.failure_weight,
            np.array([r.skips for r in chosen]),
            p.skip_weight,
        )
        total: dict[ToolKey, float] = {}
        for r, e in zip(chosen, ev.tolist(), strict=True):
            total[(r.server, r.tool)] = total.get((r.server, r.tool), 0.0) + e
        return {k: e for k, e in total.items() if math.isfinite(e) and e != 0}


# -- what the agent passed over (the gateway's side) ---------------------------------------------


class _Answered(Protocol):
    """A session's latest find_tools answer (``SessionState``)."""

    last_query: str
    last_shown: list[ToolKey]


class _SkipMemory(Protocol):
    def remember_skip(
        self, query: str, shown: Sequence[ToolKey], client: str = ""
    ) -> None: ...  # Router.remember_skip


def shown_keys(candidates: Iterable[Any], pinned: Iterable[str], separator: str) -> list[ToolKey]:
    """(server, tool) of an answer's candidates in rank order, pinned tools left out: they are
    shown for every query, so calling past them says nothing about this one."""
    skip = set(pinned)
    return [(c.server, c.tool) for c in candidates if f"{c.server}{separator}{c.tool}" not in skip]


def passed_over(
    shown: Sequence[ToolKey], called: ToolKey, shown_earlier: bool
) -> list[ToolKey] | None:
    """What a first call after an answer ``shown`` passed over: the tools ranked above
    ``called`` (none when it is the top one); the whole answer when ``called`` is outside it
    and no earlier answer showed it either (a pinned tool, or the call gate off); None when an
    earlier answer showed it: that call serves an earlier need, the latest answer still waits."""
    if called in shown:
        return list(shown[: list(shown).index(called)])
    return None if shown_earlier else list(shown)


def learn_from_call(
    memory: _SkipMemory, state: _Answered, called: ToolKey, shown_earlier: bool, client: str
) -> None:
    """The gateway's hook: the first call after ``state``'s latest find_tools answer teaches
    the usage memory what it passed over (``memory.remember_skip``, for ``client``); the answer
    is then spent, so later calls of a multi-step plan teach nothing wrong."""
    if not state.last_shown or not state.last_query.strip():
        return
    skipped = passed_over(state.last_shown, called, shown_earlier)
    if skipped is None:
        return
    state.last_shown = []
    if not skipped:
        return
    try:  # the usage memory must never break a call
        memory.remember_skip(state.last_query, skipped, client=client)
    except Exception:
        log_failure(log, "cannot remember what the call of %s/%s passed over", *called)
