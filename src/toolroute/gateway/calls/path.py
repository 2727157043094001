"""One gateway's call path, made once: the steps of :mod:`toolroute.gateway.calls.pipeline`
bound to the data they read, its ``[limits]`` among them when it has any, and the recorder of
what its calls leave behind (:mod:`toolroute.gateway.calls.record`).

What calls tools: the MCP shell (:class:`toolroute.gateway.shell.server.Gateway`) holds one
beside what finds them (:class:`toolroute.gateway.find.Finder`), both over the data its parts
share (:class:`toolroute.gateway.shared.Shared`, the steps' :class:`Host`). The shell runs
:attr:`CallPath.run` and records after its reply; a caller with no reply to send first (code
mode's scripts, the Python API) runs :meth:`CallPath.call`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from toolroute.gateway.calls import pipeline
from toolroute.gateway.calls._limits import Gateway as LimitsGateway
from toolroute.gateway.calls._limits import Limits
from toolroute.gateway.calls.pipeline import Call, CallResult, Host, Next, Step
from toolroute.gateway.calls.record import Gateway as RecorderGateway
from toolroute.gateway.calls.record import Recorder
from toolroute.policy import LimitSettings
from toolroute.route.preconditions import SessionState
from toolroute.stats import Outcome

__all__ = ["CallPath"]


class Gateway(Host, LimitsGateway, RecorderGateway, Protocol):
    """What the call path reads from its gateway: the steps' data, and what the limits and
    the recorder read."""


class CallPath:
    """The call path of ``gateway``: ``limits`` are its ``[limits]`` (None or empty: none, and
    no ``limits`` step); ``on_outcome`` sees each outcome recorded."""

    def __init__(
        self,
        gateway: Gateway,
        limits: LimitSettings | None = None,
        on_outcome: Callable[[Outcome], None] | None = None,
    ) -> None:
        self.limits = Limits(limits, gateway) if limits is not None and not limits.empty else None
        self.steps: tuple[Step, ...] = pipeline.steps(
            self.limits.step if self.limits is not None else None
        )
        """Every step, in order."""
        self.run: Next = pipeline.bind(gateway, self.steps)
        """A client's call through every step (bound once: a call allocates nothing per
        step); what it leaves behind is in ``call.records``, for the runner to record."""
        self.execute: Next = pipeline.bind(gateway, pipeline.EXECUTE)
        """A call through its own steps only (quarantine, known tool, schema, forward), for a
        caller already checked."""
        self.recorder = Recorder(gateway, on_outcome)

    async def call(self, call: Call) -> CallResult:
        """Run ``call`` through every step and record what it leaves behind as it returns: a
        caller with no reply to send first (a code mode script's call, the Python API)."""
        try:
            return await self.run(call)
        finally:
            self.recorder.record(call.records)

    async def checked(self, name: str, arguments: dict[str, Any]) -> CallResult:
        """Run one call of ``name`` through the call's own steps (quarantine, known tool,
        schema, forward) and record it as it returns: for a caller already checked, e.g. a
        test or the Python API (no caller's state: those steps read none)."""
        call = Call(name, arguments, SessionState())
        try:
            return await self.execute(call)
        finally:
            self.recorder.record(call.records)
