"""What a gateway's parts share, free of any transport: the data that what finds tools
(:class:`toolroute.gateway.find.Finder`) and what calls them
(:class:`toolroute.gateway.calls.path.CallPath`) both read at each request.

:class:`Shared` holds the router (catalog, index, store, statistics), how found tools are
shown (the presenter), the ``[toolroute]`` settings, the preconditions, the held tools, the
servers behind the gateway, each caller's session state and the call gate over it, what the
gateway fails to write, and what counts its calls. A reload or a resync swaps the router, the
presenter and the settings here, in one place, so both roles see the swap at their next
request. It is the call path's :class:`~toolroute.gateway.calls.pipeline.Host`: the steps read
it as data.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from typing import Protocol, TypeVar

import mcp.types as types

from toolroute.downstream.servers import Downstreams
from toolroute.gateway.calls import pipeline
from toolroute.gateway.calls.access import CallGate, SessionStates, gate_scope
from toolroute.gateway.calls.preconditions import blocked_by, preconditions_for
from toolroute.gateway.calls.quarantine import Held
from toolroute.gateway.health import Faults
from toolroute.present.presenter import PresentConfig, Presenter
from toolroute.route.preconditions import Preconditions, SessionState
from toolroute.router import Router
from toolroute.settings import DEFAULTS, ToolrouteSettings

__all__ = ["Metrics", "NoMetrics", "Shared"]

T = TypeVar("T")


class Metrics(Protocol):
    """What counts the gateway's calls and times its store
    (:class:`toolroute.gateway.ops._metrics.GatewayMetrics`)."""

    enabled: bool

    async def observed(self, params: types.CallToolRequestParams, call: Awaitable[T]) -> T: ...

    def store(self, operation: str) -> AbstractContextManager[None]: ...


class NoMetrics:
    """Metrics off (``[metrics] enabled = false``): the same calls, nothing counted."""

    enabled = False

    async def observed(self, params: types.CallToolRequestParams, call: Awaitable[T]) -> T:
        return await call

    def store(self, operation: str) -> AbstractContextManager[None]:
        return nullcontext()


def _present_config(
    settings: ToolrouteSettings, config: PresentConfig | None = None
) -> PresentConfig:
    """``config`` (default: the presenter's defaults) as the settings say: ``k`` tools shown,
    those under θ held back, the pinned first."""
    return replace(
        config or PresentConfig(),
        top_k=settings.k,
        threshold=settings.threshold,
        pinned=settings.pinned,
    )


class Shared:
    """The data a gateway's finding and calling read, over a :class:`Router` and (for calls)
    a :class:`Downstreams`."""

    def __init__(
        self,
        router: Router,
        downstreams: Downstreams | None = None,
        settings: ToolrouteSettings = DEFAULTS,
        *,
        presenter: Presenter | None = None,
        tool_preconditions: Mapping[str, Preconditions] | None = None,
        server_preconditions: Mapping[str, Preconditions] | None = None,
        bridge: pipeline.Bridge | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        """``settings``: the ``[toolroute]`` settings it runs with (:meth:`apply` takes new
        ones); ``presenter``: how found tools are shown (default: the settings' ``k``,
        ``threshold`` and ``pinned``); ``bridge``: another way downstream for some calls (the
        shell's, between protocol eras); ``metrics``: what counts calls and times the store
        (None: nothing counted)."""
        self.router = router
        self.downstreams = downstreams if downstreams is not None else Downstreams({})
        self.settings = settings
        """The settings in effect (:meth:`apply` swaps them)."""
        self.presenter = presenter or Presenter(router.catalog, _present_config(settings))
        self.tool_preconditions: Mapping[str, Preconditions] = dict(tool_preconditions or {})
        self.server_preconditions: Mapping[str, Preconditions] = dict(server_preconditions or {})
        self.quarantined: Mapping[str, Held] = {}
        """Held tools by name (:class:`~toolroute.gateway.calls.quarantine.Held`), set by sync."""
        self.faults = Faults()
        """What the gateway cannot write now (store, events log, status file): in status()."""
        self.metrics: Metrics = metrics if metrics is not None else NoMetrics()
        self.bridge = bridge
        """Another way downstream for some calls (the shell's, between protocol eras)."""
        scope = gate_scope(settings.call_gate)
        self.sessions = SessionStates(
            scope,
            lambda: SessionState(
                scopes=set(self.settings.scopes), milestones=set(self.settings.milestones)
            ),
            store=lambda: self.router.store,
        )
        # pass-through lists every tool, so its calls are not gated
        gated = scope != "off" and settings.expose != "all"
        self.gate = CallGate(scope, gated, self.sessions)
        """The call gate: what find_tools promoted to a caller, it may call."""

    def apply(self, settings: ToolrouteSettings) -> None:
        """Run with ``settings`` from the next request on, in one step: ``k``, the call
        timeout, θ, the pins and "no tool fits" take effect at once. What the gateway was
        built with (``expose``, ``call_gate``, ``strategy``, scopes and milestones, the store)
        stays as it started: a reload passes those as running
        (:func:`toolroute.gateway.ops.reload.applied`)."""
        p = self.presenter
        self.settings = settings
        self.presenter = Presenter(p.catalog, _present_config(settings, p.config), p.tokens)
        self.router.params = replace(self.router.params, abstain=settings.abstain)

    def replace_router(self, router: Router) -> Router:
        """Swap in a router over a resynced catalog; returns the old one (to close). The MCP
        shell's :meth:`~toolroute.gateway.shell.server.Gateway.replace_router` also drops what
        it made of the old catalog."""
        old, self.router = self.router, router
        self.presenter = Presenter(router.catalog, self.presenter.config, self.presenter.tokens)
        return old

    def blocked(self, name: str, server: str, state: SessionState) -> str | None:
        """Why the preconditions hold ``name`` back in ``state`` (None: they pass)."""
        return blocked_by(
            preconditions_for(name, server, self.tool_preconditions, self.server_preconditions),
            state,
        )

    def admits(self, state: SessionState, name: str) -> bool:
        """Whether the call gate lets ``state``'s caller call ``name`` now
        (:meth:`~toolroute.gateway.calls.access.CallGate.admits`)."""
        return self.gate.admits(state, name, self.presenter.config.pinned)
