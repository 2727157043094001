"""What a tool call leaves behind, recorded once its answer has gone out: its outcome into the
statistics and the store (EHRR eq. 8), what it teaches the usage memory (what was called after
which ``find_tools`` answer, whether it worked, what it passed over), and the re-list of a
server whose tools the call may have changed unannounced
(:meth:`~toolroute.downstream.session.Downstream.answered`).

The call path's steps only note these as data, in the order they happen
(:attr:`~toolroute.gateway.calls.pipeline.Call.records`); whoever runs the call hands them to
the gateway's :class:`Recorder`: the MCP shell once the request has answered (its task has
handed the reply to the transport), the Python API as the call returns. So a client never
waits for the store, the statistics or the usage memory, and each call's records land in
order, synchronously: nothing queues beyond the requests still answering, which a gateway that
stops records first. (The price: a process killed in the instant between a reply and its
task's end loses that call's records, where it used to lose only calls in flight.)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from toolroute.catalog.models import ToolKey
from toolroute.downstream.servers import Downstreams
from toolroute.errors import log_failure
from toolroute.learn.memory import learn_from_call
from toolroute.route.preconditions import SessionState
from toolroute.stats import Outcome

if TYPE_CHECKING:
    from toolroute.router import Router

__all__ = ["Learnt", "Record", "Recorder"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Learnt:
    """What a completed call of a known tool teaches the usage memory, as its caller's state
    stood when the call completed."""

    state: SessionState
    server: str
    tool: str
    ok: bool
    """Whether the call worked (no ``isError`` answer)."""
    query: str
    """The find_tools request the call followed ("" when none)."""
    shown: list[ToolKey]
    """That request's answer, in rank order (the state's ``last_shown`` then)."""
    shown_earlier: bool
    """Whether an answer before it showed the tool (it was promoted)."""
    client: str
    """Whose usage memory it feeds (the token's client id; "" without tokens)."""


Record = Outcome | Learnt
"""One thing a call leaves behind."""


class _Audit(Protocol):
    def audit(self, part: str) -> AbstractContextManager[None]: ...


class _StoreTimer(Protocol):
    def store(self, operation: str) -> AbstractContextManager[None]: ...


class Gateway(Protocol):
    """What the recorder reads from the gateway when it records (a resync swaps the router)."""

    @property
    def router(self) -> Router: ...
    @property
    def downstreams(self) -> Downstreams: ...
    @property
    def faults(self) -> _Audit: ...
    @property
    def metrics(self) -> _StoreTimer: ...


class Recorder:
    """Records what the calls of ``gateway`` leave behind; ``on_outcome`` sees each outcome
    recorded."""

    def __init__(
        self, gateway: Gateway, on_outcome: Callable[[Outcome], None] | None = None
    ) -> None:
        self.gateway = gateway
        self.on_outcome = on_outcome

    def record(self, records: Iterable[Record]) -> None:
        """Record ``records`` now, in order. A failed store write is noted in the gateway's
        faults (shown in the status) and the usage memory's is logged: never raised."""
        for r in records:
            if isinstance(r, Outcome):
                self._outcome(r)
            else:
                self._learnt(r)

    def _outcome(self, outcome: Outcome) -> None:
        g = self.gateway
        with g.faults.audit("store"), g.metrics.store("record_outcome"):  # logged once
            g.router.record(outcome)
        if self.on_outcome is not None:
            self.on_outcome(outcome)
        server = g.downstreams.servers.get(outcome.server)
        if server is not None:
            server.answered()

    def _learnt(self, r: Learnt) -> None:
        router = self.gateway.router
        if r.query:
            try:  # the usage memory must never fail the gateway
                router.remember_use(r.query, r.server, r.tool, r.ok, client=r.client)
            except Exception:
                log_failure(log, "cannot remember the use of %s/%s", r.server, r.tool)
        # the first call after an answer spends it (learn_from_call); an answer spent by an
        # earlier call's record, or replaced by a newer find_tools, teaches this one nothing
        if r.state.last_shown is r.shown:
            learn_from_call(router, r.state, (r.server, r.tool), r.shown_earlier, r.client)
