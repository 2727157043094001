"""Bind mode (ScaleMCP's dynamic binding): the tools ``find_tools`` returns to a client join that
client's own ``tools/list`` under their namespaced name, each as its server defines it, and
every connection of the client's call gate scope hears that its list grew — a handshake-era
session by ``notifications/tools/list_changed``, a 2026-07-28 client on its
``subscriptions/listen`` stream, which also carries the gateway's own events.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import mcp.types as types
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    ServerEvent,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError

from toolroute.catalog.models import Tool
from toolroute.gateway.calls.access import Request, SessionStates
from toolroute.route.preconditions import SessionState
from toolroute.sdk import connection_of

__all__ = ["MAX_LISTENERS", "Binding"]

MAX_LISTENERS = 1024
"""``subscriptions/listen`` streams open at once (2026-07-28 clients); more are refused."""

Allowed = Callable[[str], bool] | None


class _Buses:
    """The events a listen stream receives: the gateway's own (resources, prompts, every
    client's tool list) and its client's (the tools bound for that client alone)."""

    def __init__(self, *buses: InMemorySubscriptionBus) -> None:
        self.buses = buses

    async def publish(self, event: ServerEvent) -> None:
        for bus in self.buses:
            await bus.publish(event)

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        undo = [bus.subscribe(listener) for bus in self.buses]

        def unsubscribe() -> None:
            for u in undo:
                u()

        return unsubscribe


class Binding:
    """The tools bound for each call gate scope, and who hears when they change. ``tools``:
    the routable tools by gateway name now (a resync swaps them); ``original``: a tool as its
    server lists it (None while the server is down); ``bus``: the gateway's own events."""

    def __init__(
        self,
        sessions: SessionStates,
        bus: InMemorySubscriptionBus,
        tools: Callable[[], Mapping[str, Tool]],
        original: Callable[[str], Awaitable[types.Tool | None]],
    ) -> None:
        self.sessions = sessions
        self.bus = bus
        self.tools = tools
        self.original = original
        self.bound: dict[str, types.Tool] = {}
        """The definitions of tools bound so far, by gateway name. Which of them a connection
        lists is its scope's promotions (:meth:`bound_for`)."""
        self._scope_buses: weakref.WeakKeyDictionary[SessionState, InMemorySubscriptionBus] = (
            weakref.WeakKeyDictionary()
        )
        self._scope_of: weakref.WeakKeyDictionary[Any, SessionState] = weakref.WeakKeyDictionary()
        """Handshake-era connections by the call gate scope they belong to (each connection
        of a scope hears when its tools change)."""
        self._listeners = 0

    async def bind(
        self, ctx: Request, state: SessionState, candidates: list[dict[str, Any]], before: set[str]
    ) -> None:
        """Tell every connection of ``state``'s scope that its tools/list grew (both protocol
        eras); nobody else's list changes."""
        self.joined(ctx, state)
        if all(c["name"] in before for c in candidates):
            return
        bus = self._scope_buses.get(state)
        if bus is not None:  # its 2026-07-28 listen streams
            await bus.publish(ToolsListChanged())
        for connection, scope in list(self._scope_of.items()):  # its handshake-era sessions
            if scope is state:
                await connection.notify("notifications/tools/list_changed", None)

    def joined(self, ctx: Request, state: SessionState) -> None:
        """Remember that ``ctx``'s connection (a handshake-era session) belongs to ``state``'s
        scope, for as long as the connection lives."""
        if str(getattr(ctx, "protocol_version", "")).startswith("2026"):
            return  # no connection: its listen stream is subscribed to the scope instead
        connection = connection_of(getattr(ctx, "session", None))
        if connection is None or not hasattr(connection, "notify"):
            return
        with contextlib.suppress(TypeError):  # not weakly referable: not told, it re-lists
            self._scope_of[connection] = state

    async def bound_for(self, state: SessionState, allowed: Allowed) -> list[types.Tool]:
        """The tools bound for ``state``'s scope: what find_tools returned to it (in this
        process or, for a client, in any process on the store), inside its allow-list."""
        tools = []
        for name in self.sessions.promotions(state):
            if allowed is not None and not allowed(name):
                continue
            tool = await self.definition(name)
            if tool is not None:
                tools.append(tool)
        return tools

    async def definition(self, name: str) -> types.Tool | None:
        """A bound tool as its server defines it (title, annotations, output schema, icons,
        ``_meta``: every field), under its gateway name; None when it is not routable (gone,
        hidden or quarantined)."""
        routable = self.tools()
        if name not in routable:
            return None
        tool = self.bound.get(name)
        if tool is None:
            original = await self.original(name)
            if original is None:  # the server is down: what the catalog knows
                t = routable[name]
                original = types.Tool(
                    name=name, description=t.description, input_schema=t.input_schema
                )
            tool = self.bound[name] = original.model_copy(update={"name": name})
        return tool

    async def listen(self, ctx: Request, params: types.SubscriptionsListenRequestParams) -> Any:
        """``subscriptions/listen`` (2026-07-28): the gateway's events and those of the
        client's own scope (its bound tools)."""
        if self._listeners >= MAX_LISTENERS:
            raise MCPError(code=types.INTERNAL_ERROR, message="Subscription limit reached")
        state = self.sessions.for_request(ctx)
        bus = self._scope_buses.get(state)
        if bus is None:
            bus = self._scope_buses[state] = InMemorySubscriptionBus()
        self._listeners += 1
        try:
            return await ListenHandler(_Buses(self.bus, bus))(ctx, params)
        finally:
            self._listeners -= 1
