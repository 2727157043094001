"""Online statistics of servers and tools (EHRR eq. 8), fed by executed calls.

A :class:`StatsBook` holds, for every server, r, σ², p_fail, L_call and L_conn, and for every
tool, r and l, as arrays aligned with a :class:`toolroute.index.ToolIndex` so routing reads
them without a loop. Each :class:`Outcome` is folded in by the pure updates of
:mod:`toolroute.learn.estimate` (``ServerStats.update`` / ``ToolStats.update``). With a store, every
outcome and the new statistics are written in one transaction, so nothing is lost on a crash.

Priors for an unseen server or tool are the documented ``PRIOR_*`` of
:mod:`toolroute.learn.estimate`, replaced by catalog hints where given (tool ``success_rate`` /
``latency_s``, server ``failure_rate`` / ``connect_latency_s``). Unknown connect latency
defaults to ``DEFAULT_CONNECT_S``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from toolroute.catalog.models import Catalog, ToolKey
from toolroute.learn.estimate import DEFAULT_SMOOTHING, ServerStats, Smoothing, ToolStats
from toolroute.learn.memory import UsageMemory

__all__ = [
    "DEFAULT_CONNECT_S",
    "PRIOR_SUCCESS_MEAN",
    "PSEUDO_CALLS",
    "ClosableSink",
    "Outcome",
    "StatsBook",
    "StatsSink",
]

PSEUDO_CALLS = 2.0
"""Weight, in observed calls, of the prior in the Beta posteriors (ehrr-ts)."""
PRIOR_SUCCESS_MEAN = 0.9
"""Prior mean success of an unseen tool or server in the Beta posteriors: "tools mostly work",
optimistic like the EMA prior (1.0) but a proper distribution, worth PSEUDO_CALLS calls."""

DEFAULT_CONNECT_S = 0.1
"""L_conn (s) of a server whose catalog entry gives none: a warm local session."""

Floats = npt.NDArray[np.float64]
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Outcome:
    """One executed call: did it give a usable result, how long it took, and whether the server
    failed after accepting it (crash, timeout, protocol error — EHRR's fail_i)."""

    server: str
    tool: str
    success: bool
    latency_s: float
    server_failed: bool = False

    @property
    def key(self) -> ToolKey:
        return (self.server, self.tool)


class StatsSink(Protocol):
    """Where outcomes and updated statistics are persisted (the store). It may return the
    states it stored (a shared store folds in other replicas' calls): the book adopts them."""

    def record_outcome(
        self,
        outcome: Outcome,
        server: ServerStats,
        tool: ToolStats,
        smoothing: Smoothing | None = None,
    ) -> tuple[ServerStats, ToolStats] | None: ...


class ClosableSink(StatsSink, Protocol):
    """A sink that holds a resource to release (a store is one)."""

    def close(self) -> None: ...


_Item = tuple[Outcome, ServerStats, ToolStats, Smoothing | None] | None


class StatsBook:
    """EHRR router statistics, as index-aligned arrays plus the eq. 8 update."""

    def __init__(
        self,
        catalog: Catalog,
        *,
        smoothing: Smoothing = DEFAULT_SMOOTHING,
        sink: StatsSink | None = None,
        seed: int = 0,
    ) -> None:
        self.smoothing = smoothing
        self._sink = sink
        self._seed = seed
        self._rng: np.random.Generator | None = None
        self.server_ids = tuple(s.id for s in catalog.servers)
        self._server_pos = {sid: i for i, sid in enumerate(self.server_ids)}
        tools = list(catalog.tools())
        self._tool_pos: dict[ToolKey, int] = {t.key: i for i, t in enumerate(tools)}
        self._servers = [ServerStats.from_prior(fail_prob=s.failure_rate) for s in catalog.servers]
        # one prior object per distinct catalog hint (they are immutable): a 100k-tool book is
        # made on a fresh gateway's first find_tools (benchmarks/scale.py)
        priors: dict[tuple[float | None, float | None], ToolStats] = {}
        self._tools = [
            priors.get(h) or priors.setdefault(h, ToolStats.from_prior(*h))
            for h in [(t.success_rate, t.latency_s) for t in tools]
        ]
        self.connect_s: Floats = np.array(
            [
                DEFAULT_CONNECT_S if s.connect_latency_s is None else s.connect_latency_s
                for s in catalog.servers
            ],
            dtype=np.float64,
        )
        n_s, n_t = len(self._servers), len(self._tools)
        self.server_success: Floats = np.empty(n_s)
        self.server_variance: Floats = np.empty(n_s)
        self.server_fail: Floats = np.empty(n_s)
        self.server_latency: Floats = np.empty(n_s)
        self.tool_success: Floats = np.empty(n_t)
        self.tool_latency: Floats = np.empty(n_t)
        # Beta posteriors beside the EMAs (the estimator of ehrr-ts): successes and failures of
        # each tool and of the calls through each server, and post-accept failures of each
        # server; prior mean PRIOR_SUCCESS_MEAN (or the catalog's hint), worth PSEUDO_CALLS calls.
        ok = PSEUDO_CALLS * np.array([PRIOR_SUCCESS_MEAN, 1.0 - PRIOR_SUCCESS_MEAN])
        self.tool_beta: Floats = np.tile(ok, (n_t, 1))
        self.server_beta: Floats = np.tile(ok, (n_s, 1))
        self.server_fail_beta: Floats = np.tile(ok[::-1], (n_s, 1))
        for j, t in enumerate(tools):
            if t.success_rate is not None:
                self.tool_beta[j] = PSEUDO_CALLS * np.array([t.success_rate, 1 - t.success_rate])
        for i, srv in enumerate(catalog.servers):
            if srv.failure_rate is not None:
                self.server_fail_beta[i] = PSEUDO_CALLS * np.array(
                    [srv.failure_rate, 1 - srv.failure_rate]
                )
        # Raw counts of observed calls, (successes, failures), without any prior: what the
        # adaptive strategy pools tool → server → global (route/adaptive.py).
        self.tool_counts: Floats = np.zeros((n_t, 2))
        self.server_counts: Floats = np.zeros((n_s, 2))
        self.memory = UsageMemory()
        """Which tool the agent called after which query (toolroute/learn/memory.py), per client."""
        for i in range(n_s):
            self._sync_server(i)
        self.tool_success[:] = [t.success for t in self._tools]
        self.tool_latency[:] = [t.latency_s for t in self._tools]

    @property
    def rng(self) -> np.random.Generator:
        """Random stream of posterior sampling (ehrr-ts), seeded for reproducible runs; made
        when first drawn from (numpy.random is a sizeable import no other strategy needs)."""
        if self._rng is None:
            self._rng = np.random.default_rng(self._seed)
        return self._rng

    def tool_row(self, key: ToolKey) -> int | None:
        """Index-aligned row of a tool, None for a tool this book does not know."""
        return self._tool_pos.get(key)

    def server(self, server_id: str) -> ServerStats:
        return self._servers[self._server_pos[server_id]]

    def tool(self, key: ToolKey) -> ToolStats:
        return self._tools[self._tool_pos[key]]

    def load(self, servers: dict[str, ServerStats], tools: dict[ToolKey, ToolStats]) -> None:
        """Replace priors with persisted statistics (entries for unknown ids are ignored)."""
        for sid, st in servers.items():
            if sid in self._server_pos:
                self._servers[self._server_pos[sid]] = st
                self._sync_server(self._server_pos[sid])
        for key, tt in tools.items():
            if key in self._tool_pos:
                self._tools[self._tool_pos[key]] = tt
                self._sync_tool(self._tool_pos[key])

    def load_counts(self, rows: list[tuple[str, str, int, int, int]]) -> None:
        """Rebuild the Beta posteriors from persisted outcome counts (server, tool, successes,
        failures, server failures); rows of unknown tools are ignored."""
        for server, tool, ok, bad, crashed in rows:
            j = self._tool_pos.get((server, tool))
            i = self._server_pos.get(server)
            if j is None or i is None:
                continue
            self.tool_beta[j] += (ok, bad)
            self.server_beta[i] += (ok, bad)
            self.tool_counts[j] += (ok, bad)
            self.server_counts[i] += (ok, bad)
            self.server_fail_beta[i] += (crashed, ok + bad - crashed)

    def record(self, outcome: Outcome, sink: StatsSink | None = None) -> None:
        """Fold one executed call into the server's and the tool's statistics (EHRR eq. 8);
        ``sink`` overrides where it is persisted."""
        i = self._server_pos[outcome.server]
        j = self._tool_pos[(outcome.server, outcome.tool)]
        server = self._servers[i].update(
            outcome.success, outcome.latency_s, outcome.server_failed, self.smoothing
        )
        tool = self._tools[j].update(outcome.success, outcome.latency_s, self.smoothing)
        sink = sink if sink is not None else self._sink
        if sink is not None:  # persisted (or queued) before it is used
            stored = sink.record_outcome(outcome, server, tool, self.smoothing)
            if stored is not None:  # a shared store folded in other replicas' calls
                server, tool = stored
        self._servers[i], self._tools[j] = server, tool
        self.tool_beta[j, 0 if outcome.success else 1] += 1.0
        self.server_beta[i, 0 if outcome.success else 1] += 1.0
        self.tool_counts[j, 0 if outcome.success else 1] += 1.0
        self.server_counts[i, 0 if outcome.success else 1] += 1.0
        self.server_fail_beta[i, 0 if outcome.server_failed else 1] += 1.0
        self._sync_server(i)
        self._sync_tool(j)

    def _sync_server(self, i: int) -> None:
        s = self._servers[i]
        self.server_success[i] = s.success
        self.server_variance[i] = s.variance
        self.server_fail[i] = s.fail_prob
        self.server_latency[i] = s.latency_s

    def _sync_tool(self, j: int) -> None:
        t = self._tools[j]
        self.tool_success[j] = t.success
        self.tool_latency[j] = t.latency_s
