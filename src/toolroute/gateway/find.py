"""What finds tools, free of any transport: route → gate → present → promote, following the
gate of *Tool Attention*, over the data the gateway's parts share
(:class:`toolroute.gateway.shared.Shared`).

- :meth:`Finder.find` ranks ``route_depth(k)`` candidates (in a worker thread with
  :meth:`~Finder.find_async`), drops those outside the client's allow-list and those whose
  preconditions fail, presents the top-k at or above θ (pinned first) and promotes them for the
  caller (:class:`toolroute.gateway.calls.access.SessionStates`), so that the call gate
  admits them; the routing is audited as a :class:`~toolroute.present.events.RoutingEvent`.
- :meth:`Finder.inventory` lists one server's tools a page at a time, and
  :meth:`Finder.request_capability` re-routes on a missing capability.
- Every refusal is an ``isError`` result whose JSON names one
  :class:`~toolroute.errors.ErrorCode` and says what to do next.

The MCP shell (:class:`toolroute.gateway.shell.server.Gateway`) and the Python
:class:`toolroute.papers.tool_attention.agent_loop.ToolAttention` hold one each.
"""

from __future__ import annotations

import difflib
import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import mcp.types as types

from toolroute.catalog.candidate import Candidate
from toolroute.catalog.name import SEPARATOR, qualified_name
from toolroute.errors import ErrorCode
from toolroute.gateway.calls.arguments import MAX_NAME_CHARS
from toolroute.gateway.calls.pipeline import json_result, refusal
from toolroute.gateway.cursor import page_cursor, read_cursor
from toolroute.gateway.shared import Shared
from toolroute.learn.memory import shown_keys
from toolroute.present.events import EventSink, RoutingEvent, query_hash
from toolroute.present.presenter import Presentation
from toolroute.route.preconditions import SessionState
from toolroute.router import Router, find_server

__all__ = [
    "MAX_CAPABILITY_REQUESTS",
    "ROUTE_THREADS",
    "Allowed",
    "Finder",
    "Shortlist",
    "error_result",
    "route_depth",
]

ROUTE_THREADS = 2
"""find_tools routings running at once in worker threads (more wait for a free one)."""
MAX_CAPABILITY_REQUESTS = 3
"""request_capability calls per session before it answers with a stop (Adaptive Tool
Routing's loop guard)."""

Allowed = Callable[[str], bool] | None
"""A client's allow-list over ``server__tool`` names (None: every tool)."""


def route_depth(k: int) -> int:
    """How many candidates to rank for a shortlist of ``k``: enough that preconditions, allow-lists
    and θ still leave k to present."""
    return max(4 * k, 20)


def error_result(
    code: ErrorCode, message: str, *, tool: str | None = None, **extra: Any
) -> types.CallToolResult:
    """An ``isError`` result naming ``code`` (:func:`toolroute.errors.error_payload`)."""
    return refusal(code, message, tool=tool, **extra)


@dataclass(frozen=True, slots=True)
class Shortlist:
    """One routing after preconditions, θ and top-k: what was presented and what the
    preconditions held back."""

    presentation: Presentation
    promoted: tuple[Candidate, ...]
    """Presented and inside the client's allow-list (pinned tools first)."""
    blocked: tuple[tuple[str, str], ...]
    """(``server__tool``, reason) of the candidates whose preconditions failed."""

    def found(self, k: int) -> dict[str, Any]:
        """find_tools' answer: ``{"candidates": [...], "gated_out": [...]}``."""
        return {
            "candidates": [
                {
                    "name": qualified_name(c.server, c.tool),
                    "server": c.server,
                    "tool": c.tool,
                    "description": c.description,
                    "input_schema": c.input_schema,
                    "score": round(c.score, 4),
                }
                for c in self.promoted
            ],
            "gated_out": [{"name": n, "reason": r} for n, r in self.blocked[:k]],
        }


class Finder:
    """Finds tools for a caller over ``shared``: ranks, filters, presents, promotes, and audits
    each routing to the store and ``events`` (``audit``: whether it does)."""

    def __init__(
        self, shared: Shared, *, events: Sequence[EventSink] = (), audit: bool = True
    ) -> None:
        self.shared = shared
        self.events = tuple(events)
        self.audit = audit
        """Whether each routing is written to the store and the event sinks."""
        self._route_limiter = anyio.CapacityLimiter(ROUTE_THREADS)

    def find(
        self,
        query: str,
        k: int,
        state: SessionState | None = None,
        remember: bool = True,
        may_use: Allowed = None,
    ) -> dict[str, Any]:
        """Route, drop tools outside the client's allow-list and tools whose preconditions
        fail, promote the top-k at or above θ (pinned first)."""
        start = time.perf_counter()
        listed = self._named_inventory(query, k, state, may_use)
        if listed is not None:
            return listed
        notes: dict[str, Any] = {}
        ranked = self.rank(self.shared.router, query, k, notes=notes)
        found = self.shortlist(query, k, state, ranked, start, remember, may_use).found(k)
        return _with_verdict(found, notes)

    async def find_async(
        self,
        query: str,
        k: int,
        state: SessionState | None = None,
        remember: bool = True,
        may_use: Allowed = None,
        client: str = "",
    ) -> dict[str, Any]:
        """:meth:`find` with the routing in a worker thread (the event loop stays free);
        ``client``: whose usage memory counts (the token's client id; "" without tokens)."""
        start = time.perf_counter()
        listed = self._named_inventory(query, k, state, may_use)
        if listed is not None:
            return listed
        router = self.shared.router
        if router.catalog.tool_count:
            router.stats  # noqa: B018 -- loaded here: the store stays on the event loop's thread
        notes: dict[str, Any] = {}
        ranked = await anyio.to_thread.run_sync(
            functools.partial(self.rank, router, query, k, client, notes),
            limiter=self._route_limiter,
        )
        found = self.shortlist(query, k, state, ranked, start, remember, may_use).found(k)
        return _with_verdict(found, notes)

    def rank(
        self,
        router: Router,
        query: str,
        k: int,
        client: str = "",
        notes: dict[str, Any] | None = None,
    ) -> list[Candidate]:
        """``route_depth(k)`` candidates for ``query``, best first (none before any server
        has answered; none when the strategy says no tool fits, its verdict in ``notes``)."""
        if not router.catalog.tool_count:  # no server has answered yet
            return []
        return router.route(
            query,
            k=route_depth(k),
            strategy=self.shared.settings.strategy,
            client=client,
            notes=notes,
        )

    def shortlist(
        self,
        query: str,
        k: int,
        state: SessionState | None,
        ranked: list[Candidate],
        start: float,
        remember: bool = True,
        may_use: Allowed = None,
    ) -> Shortlist:
        """Filter the ranked candidates (preconditions, θ, top-k), present the top ``k`` and
        (``remember``) promote them."""
        state = state if state is not None else self.shared.sessions.for_connection(None)
        if remember:
            state.last_query = query
        if may_use is not None:  # another client's tools: not even named as held back
            ranked = [c for c in ranked if may_use(qualified_name(c.server, c.tool))]
        allowed, blocked = [], []
        for c in ranked:
            name = qualified_name(c.server, c.tool)
            reason = self.shared.blocked(name, c.server, state)
            if reason:
                blocked.append((name, reason))
            else:
                allowed.append(c)
        shown = self.shared.presenter.present(allowed, top_k=k)
        # pinned tools outside the client's allow-list too
        promoted = tuple(
            c
            for c in shown.promoted
            if may_use is None or may_use(qualified_name(c.server, c.tool))
        )
        names = [qualified_name(c.server, c.tool) for c in promoted]
        if remember:
            self.shared.sessions.promote(state, names)
            state.last_shown = shown_keys(promoted, self.shared.presenter.config.pinned, SEPARATOR)
        if self.audit:
            self._audit(query, ranked, [*blocked, *shown.gated_out], names, shown, start)
        return Shortlist(shown, promoted, tuple(blocked))

    def _audit(
        self,
        query: str,
        ranked: list[Candidate],
        held: list[tuple[str, str]],
        active: list[str],
        shown: Presentation,
        start: float,
    ) -> None:
        event = RoutingEvent(
            query_hash=query_hash(query),
            strategy=self.shared.settings.strategy,
            candidates=[
                {"name": qualified_name(c.server, c.tool), "score": round(c.score, 4)}
                for c in ranked
            ],
            gated_out=[{"name": n, "reason": r} for n, r in held],
            active=active,
            phase1_tokens=shown.phase1_tokens,
            phase2_tokens=shown.phase2_tokens,
            latency_ms=round((time.perf_counter() - start) * 1000, 3),
        )
        with (
            self.shared.faults.audit("store"),
            self.shared.metrics.store("record_event"),
        ):  # never fails
            self.shared.router.store.record_event(event.to_json())
        for sink in self.events:
            with self.shared.faults.audit(getattr(sink, "part", "events")):
                sink.emit(event)

    def _named_inventory(
        self, query: str, k: int, state: SessionState | None, may_use: Allowed
    ) -> dict[str, Any] | None:
        """A query that is a server's name and nothing else ("git", "git tools", "the git
        server") asks what that server can do: its inventory's first page, else None."""
        words = query.strip().strip("?.!").lower().split()
        if words[:1] == ["the"]:
            words = words[1:]
        if len(words) > 1 and words[-1] in ("server", "tools"):
            words = words[:-1]
        name = " ".join(words)
        if not name or len(name) > MAX_NAME_CHARS:
            return None
        if find_server(self.shared.router.catalog, name) is None:
            return None
        result = self.inventory(name, k, state, may_use)
        if result.is_error:  # not a server this client may use: route the words instead
            return None
        listed: dict[str, Any] | None = result.structured_content
        return listed

    def inventory(
        self,
        server: object,
        k: object = None,
        state: SessionState | None = None,
        may_use: Allowed = None,
        cursor: object = None,
    ) -> types.CallToolResult:
        """find_tools with a ``server`` and no query: that server's tools in catalog order,
        ``k`` per page from ``cursor``, only those in the client's allow-list; a server with
        none of them is unknown to the client. A cursor names the last tool its page
        returned, so a tool the server adds or drops meanwhile never repeats or skips one of
        the others. The page's tools are promoted like a find's (preconditions still hold
        them back, listed under ``gated_out``)."""
        if not isinstance(server, str) or not server.strip() or len(server) > MAX_NAME_CHARS:
            return error_result(
                ErrorCode.INVALID_ARGUMENTS,
                f"`server` must be a server name of 1 to {MAX_NAME_CHARS} characters",
            )
        size = self.shared.settings.k if k is None else k
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= 50:
            return error_result(ErrorCode.INVALID_ARGUMENTS, "`k` must be an integer in 1..50")
        state = state if state is not None else self.shared.sessions.for_connection(None)
        visible = [
            s
            for s in self.shared.router.catalog.servers
            if may_use is None or any(may_use(qualified_name(s.id, t.name)) for t in s.tools)
        ]
        # looked up among every server, so a name never reaches past an id or key the client
        # may not use to another server's
        found = find_server(self.shared.router.catalog, server)
        if found is not None and all(s is not found for s in visible):
            found = None
        if found is None:
            ids = [s.id for s in visible]
            return error_result(
                ErrorCode.UNKNOWN_SERVER,
                f"no server named {server[:200]!r} is available to this client",
                closest=difflib.get_close_matches(server, ids, n=5, cutoff=0.4),
                hint="call find_tools with `query` to search every server's tools",
            )
        tools = [
            t for t in found.tools if may_use is None or may_use(qualified_name(found.id, t.name))
        ]
        start = read_cursor(cursor, found.id, [t.name for t in tools])
        if start is None:
            return error_result(
                ErrorCode.INVALID_ARGUMENTS,
                "`cursor` must be a `next_cursor` an inventory of this server returned",
            )
        page = tools[start : start + size]
        shown, blocked = [], []
        for t in page:
            name = qualified_name(found.id, t.name)
            reason = self.shared.blocked(name, found.id, state)
            if reason:
                blocked.append({"name": name, "reason": reason})
            else:
                shown.append(t)
        self.shared.sessions.promote(state, [qualified_name(found.id, t.name) for t in shown])
        end = start + len(page)
        return json_result(
            {
                "server": found.id,
                "candidates": [
                    {
                        "name": qualified_name(t.server, t.name),
                        "server": t.server,
                        "tool": t.name,
                        "description": t.description,
                        "input_schema": t.input_schema,
                    }
                    for t in shown
                ],
                "gated_out": blocked,
                "total": len(tools),
                "next_cursor": page_cursor(found.id, page[-1].name, end)
                if end < len(tools)
                else None,
            }
        )

    async def request_capability(
        self, state: SessionState, need: str, k: int, allowed: Allowed = None
    ) -> types.CallToolResult:
        """Re-route on a missing capability (Adaptive Tool Routing): the stated need plus the
        original request, tools already shown excluded; bounded per session to stop loops."""
        state.capability_requests += 1
        if state.capability_requests > MAX_CAPABILITY_REQUESTS:
            return error_result(
                ErrorCode.CAPABILITY_LIMIT,
                f"already re-routed {MAX_CAPABILITY_REQUESTS} times in this "
                "session; answer with what you have or ask the user",
            )
        query = f"{need}. {state.last_query}" if state.last_query else need
        shown_before = set(state.promoted)
        found = await self.find_async(
            query, k + len(shown_before), state, remember=False, may_use=allowed
        )
        fresh = [c for c in found["candidates"] if c["name"] not in shown_before][:k]
        self.shared.sessions.promote(state, [c["name"] for c in fresh])
        return json_result(
            {
                "candidates": fresh,
                "attempt": state.capability_requests,
                "attempts_left": MAX_CAPABILITY_REQUESTS - state.capability_requests,
            }
        )


def _with_verdict(found: dict[str, Any], notes: dict[str, Any]) -> dict[str, Any]:
    """find_tools' answer, with the "no tool fits" verdict when the router gave one, or the
    caution of a doubtful fit beside its candidates."""
    verdict = notes.get("abstain")
    if verdict is not None and not verdict.fits and not found["candidates"]:
        found.update(verdict.to_dict())
    elif verdict is not None and verdict.doubtful and found["candidates"]:
        found.update(verdict.caution())
    return found
