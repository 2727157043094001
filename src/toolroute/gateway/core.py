"""The gateway's core, free of any transport: route → gate → present → refuse unpromoted calls.

One copy of seed 002 Alg. 1 for every shell over it — the MCP server
(:class:`toolroute.gateway.server.Gateway`, both protocol eras, stdio and HTTP) and the Python
:class:`toolroute.gateway.attention.ToolAttention`:

- :meth:`GatewayCore.find` ranks ``route_depth(k)`` candidates (in a worker thread with
  :meth:`~GatewayCore.find_async`), drops those outside the client's allow-list and those whose
  preconditions fail (seed 002 eq. 6), presents the gated top-k (θ, pinned first) and promotes
  them in the session (:class:`toolroute.gateway.access.SessionStates`); the routing is audited
  as a :class:`~toolroute.present.events.RoutingEvent`.
- :meth:`GatewayCore.gated_call` refuses a tool outside the allow-list, a call whose arguments
  are malformed, a tool the session was never shown (the call gate, Alg. 1 line 8) or whose
  preconditions fail; :meth:`GatewayCore.call` refuses quarantined and unknown tools and
  arguments that break the schema, then runs the call downstream and records its outcome
  (EHRR eq. 8) before the answer goes out.
- Every refusal is an ``isError`` result whose JSON names one
  :class:`~toolroute.errors.ErrorCode` and says what to do next.

A shell supplies the transport's part through two hooks: :meth:`GatewayCore.caller` (where a
server's progress, logs and requests during the call go) and :meth:`GatewayCore.bridged` (a
call that must run through another path, e.g. a 2026-07-28 client calling a 2025 server).
"""

from __future__ import annotations

import base64
import difflib
import functools
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import mcp.types as types
from mcp.shared.exceptions import MCPError

from toolroute.catalog.candidate import Candidate
from toolroute.catalog.models import Catalog
from toolroute.catalog.name import SEPARATOR, qualified_name, split_name
from toolroute.errors import ErrorCode, error_payload
from toolroute.gateway.access import CallGateScope, SessionStates, gate_scope
from toolroute.gateway.checks import MAX_NAME_CHARS, check_arguments
from toolroute.gateway.limit import NoLimits
from toolroute.gateway.metrics import NoMetrics
from toolroute.gateway.quarantine import Held
from toolroute.gateway.status import Faults
from toolroute.gateway.validate import check_call
from toolroute.memory import learn_from_call, shown_keys
from toolroute.present.events import EventSink, RoutingEvent, query_hash
from toolroute.present.presenter import Presentation, PresentConfig, Presenter
from toolroute.route.gate import Preconditions, SessionState, blocked_by, preconditions_for
from toolroute.router import Router, find_server
from toolroute.sources.pool import CallContext, DownstreamError, DownstreamPool
from toolroute.stats import Outcome

__all__ = [
    "MAX_CAPABILITY_REQUESTS",
    "ROUTE_THREADS",
    "Allowed",
    "CallResult",
    "GatewayCore",
    "Shortlist",
    "error_result",
    "json_result",
    "route_depth",
]

log = logging.getLogger(__name__)

ROUTE_THREADS = 2
"""find_tools routings running at once in worker threads (more wait for a free one)."""
MAX_CAPABILITY_REQUESTS = 3
"""request_capability calls per session before it answers with a stop (seed 004 §V loop guard)."""

Allowed = Callable[[str], bool] | None
"""A client's allow-list over ``server__tool`` names (None: every tool)."""
CallResult = types.CallToolResult | types.InputRequiredResult


def route_depth(k: int) -> int:
    """How many candidates to rank for a shortlist of ``k``: enough that gates, allow-lists
    and θ still leave k to present."""
    return max(4 * k, 20)


def json_result(payload: dict[str, Any], *, error: bool = False) -> types.CallToolResult:
    """``payload`` as structured content and as the same JSON in text."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(payload, ensure_ascii=False))],
        structured_content=payload,
        is_error=error,
    )


def error_result(
    code: ErrorCode, message: str, *, tool: str | None = None, **extra: Any
) -> types.CallToolResult:
    """An ``isError`` result naming ``code`` (:func:`toolroute.errors.error_payload`)."""
    return json_result(error_payload(code, message, tool=tool, **extra), error=True)


_HINTS = {
    "timeout": "the server did not answer in time; try again or pick another tool",
    "crashed": "the server crashed and is being restarted; try again shortly",
    "unavailable": "the server is not connected; try another tool from find_tools",
    "protocol": "the server returned an invalid response",
    "too_large": "ask for less (a narrower query, a page, a smaller range)",
    "auth_required": "the server needs the operator to sign in again (the message "
    "says how); tell the user, or try another tool from find_tools",
}
"""What to do next after a downstream failure, by :attr:`DownstreamError.code`."""


@dataclass(frozen=True, slots=True)
class Shortlist:
    """One routing after the gates: what was presented and what the preconditions held back."""

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


class GatewayCore:
    """Sessions and promotion, the call gate, execution and recording over a :class:`Router`
    and (for calls) a :class:`DownstreamPool`."""

    def __init__(
        self,
        router: Router,
        pool: DownstreamPool | None = None,
        *,
        k: int = 5,
        strategy: str = "default",
        call_timeout_s: float = 30.0,
        expose: Literal["meta", "bind", "all"] = "meta",
        call_gate: bool | CallGateScope = True,
        presenter: Presenter | None = None,
        tool_gates: Mapping[str, Preconditions] | None = None,
        server_gates: Mapping[str, Preconditions] | None = None,
        scopes: Sequence[str] = (),
        milestones: Sequence[str] = (),
        events: Sequence[EventSink] = (),
        on_outcome: Callable[[Outcome], None] | None = None,
        audit: bool = True,
    ) -> None:
        self.router = router
        self.pool = pool if pool is not None else DownstreamPool({})
        self.k = k
        self.strategy = strategy
        self.call_timeout_s = call_timeout_s
        self.expose = expose
        self.gate_scope = gate_scope(call_gate)
        self.call_gate = self.gate_scope != "off"
        self.presenter = presenter or Presenter(router.catalog, PresentConfig(top_k=k))
        self.tool_gates = dict(tool_gates or {})
        self.server_gates = dict(server_gates or {})
        self.scopes = set(scopes)
        self.milestones = set(milestones)
        self.events = tuple(events)
        self.audit = audit
        """Whether each routing is written to the store and the event sinks."""
        self.quarantined: dict[str, Held] = {}
        """Held tools by name (:class:`toolroute.gateway.quarantine.Held`), set by each sync."""
        self.faults = Faults()
        """What the gateway cannot write now (store, events log, status file): in status()."""
        self._on_outcome = on_outcome
        self._route_limiter = anyio.CapacityLimiter(ROUTE_THREADS)
        self.metrics = NoMetrics()  # /metrics and [limits]: make_gateway sets them (app.py)
        self.limits = NoLimits()
        self.sessions = SessionStates(
            self.gate_scope,
            lambda: SessionState(scopes=set(self.scopes), milestones=set(self.milestones)),
            store=lambda: self.router.store,
        )

    def replace_router(self, router: Router) -> Router:
        """Swap in a router over a resynced catalog; returns the old one (to close)."""
        old, self.router = self.router, router
        self.presenter = Presenter(router.catalog, self.presenter.config, self.presenter.tokens)
        return old

    def state(self, session: object = None) -> SessionState:
        """The state of one client connection (scopes, successful calls, milestones, promoted)."""
        return self.sessions.for_connection(session)

    def blocked(self, name: str, server: str, state: SessionState) -> str | None:
        """Why the preconditions hold ``name`` back in ``state`` (None: they pass)."""
        return blocked_by(
            preconditions_for(name, server, self.tool_gates, self.server_gates), state
        )

    # -- route → gate → present → promote --------------------------------------------------

    def find(
        self,
        query: str,
        k: int,
        state: SessionState | None = None,
        remember: bool = True,
        may_use: Allowed = None,
    ) -> dict[str, Any]:
        """Route, drop tools outside the client's allow-list and tools whose preconditions
        fail, promote the gated top-k (θ, pinned)."""
        start = time.perf_counter()
        listed = self._named_inventory(query, k, state, may_use)
        if listed is not None:
            return listed
        notes: dict[str, Any] = {}
        ranked = self.rank(self.router, query, k, notes=notes)
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
        router = self.router
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
            query, k=route_depth(k), strategy=self.strategy, client=client, notes=notes
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
        """Gate the ranked candidates, present the top ``k`` and (``remember``) promote them."""
        state = state if state is not None else self.state()
        if remember:
            state.last_query = query
        if may_use is not None:  # another client's tools: not even named as gated out
            ranked = [c for c in ranked if may_use(qualified_name(c.server, c.tool))]
        allowed, blocked = [], []
        for c in ranked:
            name = qualified_name(c.server, c.tool)
            reason = self.blocked(name, c.server, state)
            if reason:
                blocked.append((name, reason))
            else:
                allowed.append(c)
        shown = self.presenter.present(allowed, top_k=k)
        # pinned tools outside the client's allow-list too
        promoted = tuple(
            c
            for c in shown.promoted
            if may_use is None or may_use(qualified_name(c.server, c.tool))
        )
        names = [qualified_name(c.server, c.tool) for c in promoted]
        if remember:
            self.sessions.promote(state, names)
            state.last_shown = shown_keys(promoted, self.presenter.config.pinned, SEPARATOR)
        if self.audit:
            self._audit(query, ranked, [*blocked, *shown.gated_out], names, shown, start)
        return Shortlist(shown, promoted, tuple(blocked))

    def _audit(
        self,
        query: str,
        ranked: list[Candidate],
        gated: list[tuple[str, str]],
        active: list[str],
        shown: Presentation,
        start: float,
    ) -> None:
        event = RoutingEvent(
            query_hash=query_hash(query),
            strategy=self.strategy,
            candidates=[
                {"name": qualified_name(c.server, c.tool), "score": round(c.score, 4)}
                for c in ranked
            ],
            gated_out=[{"name": n, "reason": r} for n, r in gated],
            active=active,
            phase1_tokens=shown.phase1_tokens,
            phase2_tokens=shown.phase2_tokens,
            latency_ms=round((time.perf_counter() - start) * 1000, 3),
        )
        with self.faults.audit("store"), self.metrics.store("record_event"):  # never fails
            self.router.store.record_event(event.to_json())
        for sink in self.events:
            with self.faults.audit(getattr(sink, "part", "events")):
                sink.emit(event)

    def admits(self, state: SessionState, name: str) -> bool:
        """The call gate (seed 002 Alg. 1 line 8): ``name`` is pinned or was promoted to
        this session (or the gate is off)."""
        gated = self.call_gate and self.expose != "all"  # pass-through lists every tool
        pinned = name in self.presenter.config.pinned
        return not gated or pinned or self.sessions.is_promoted(state, name)

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
        if find_server(self.router.catalog, name) is None:
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
        """find_tools with a ``server`` and no query: that server's tools in catalog order
        (stable), ``k`` per page from ``cursor``, only those in the client's allow-list; a
        server with none of them is unknown to the client. The page's tools are promoted like
        a find's (preconditions still hold them back, listed under ``gated_out``)."""
        if not isinstance(server, str) or not server.strip() or len(server) > MAX_NAME_CHARS:
            return error_result(
                ErrorCode.INVALID_ARGUMENTS,
                f"`server` must be a server name of 1 to {MAX_NAME_CHARS} characters",
            )
        size = self.k if k is None else k
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= 50:
            return error_result(ErrorCode.INVALID_ARGUMENTS, "`k` must be an integer in 1..50")
        state = state if state is not None else self.state()
        visible = [
            s
            for s in self.router.catalog.servers
            if may_use is None or any(may_use(qualified_name(s.id, t.name)) for t in s.tools)
        ]
        found = find_server(Catalog(tuple(visible)), server)
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
        start = _read_cursor(cursor, found.id)
        if start is None or start > len(tools):
            return error_result(
                ErrorCode.INVALID_ARGUMENTS,
                "`cursor` must be a `next_cursor` an inventory of this server returned",
            )
        page = tools[start : start + size]
        shown, blocked = [], []
        for t in page:
            name = qualified_name(found.id, t.name)
            reason = self.blocked(name, found.id, state)
            if reason:
                blocked.append({"name": name, "reason": reason})
            else:
                shown.append(t)
        self.sessions.promote(state, [qualified_name(found.id, t.name) for t in shown])
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
                "next_cursor": _cursor(found.id, end) if end < len(tools) else None,
            }
        )

    async def request_capability(
        self, state: SessionState, need: str, k: int, allowed: Allowed = None
    ) -> types.CallToolResult:
        """Re-route on a missing capability (seed 004 §V): the stated need plus the original
        request, tools already shown excluded; bounded per session to stop loops."""
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
        self.sessions.promote(state, [c["name"] for c in fresh])
        return json_result(
            {
                "candidates": fresh,
                "attempt": state.capability_requests,
                "attempts_left": MAX_CAPABILITY_REQUESTS - state.capability_requests,
            }
        )

    # -- the call path ---------------------------------------------------------------------

    async def gated_call(
        self,
        name: str,
        arguments: dict[str, Any],
        state: SessionState,
        allowed: Allowed = None,
        client: str = "",
    ) -> CallResult:
        """call_tool behind the client's allow-list, the call gate (seed 002 Alg. 1 line 8)
        and the preconditions; a completed call of a found tool feeds ``client``'s usage
        memory (what it called after which find_tools query, and whether it worked)."""
        server, tool = split_name(name)
        known = name in self.presenter.tools_by_name
        if allowed is not None and not (known and allowed(name)):
            return error_result(
                ErrorCode.UNKNOWN_TOOL,
                f"no tool named {name[:200]!r} is available to this client; "
                "names come from find_tools",
                closest=_closest(name, [n for n in self._names() if allowed(n)]),
            )
        problem = check_arguments(arguments)
        if problem:
            return error_result(ErrorCode.INVALID_ARGUMENTS, problem, tool=name[:200])
        if known:
            if not self.admits(state, name):
                return self._not_promoted(name, state, allowed)
            reason = self.blocked(name, server, state)
            if reason:
                return error_result(ErrorCode.PRECONDITION_FAILED, reason, tool=name)
        result = await self.limits.call(self.call, name, arguments)  # [limits]
        if self.limits.refused(result):  # the client's limit, not the tool's failure
            return result
        if known and isinstance(result, types.CallToolResult):
            if not result.is_error:
                state.succeeded.append(name)
            if state.last_query:
                self._remember(state.last_query, server, tool, not result.is_error, client)
            # usage memory: what this call passed over in the latest answer (memory.py)
            learn_from_call(self.router, state, (server, tool), name in state.promoted, client)
        return result

    def _remember(self, query: str, server: str, tool: str, ok: bool, client: str) -> None:
        try:  # the usage memory must never break a call
            self.router.remember_use(query, server, tool, ok, client=client)
        except Exception:
            log.exception("cannot remember the use of %s/%s", server, tool)

    def _not_promoted(
        self, name: str, state: SessionState, allowed: Allowed
    ) -> types.CallToolResult:
        """The call gate's refusal: what the client did, what to do next, and the setting."""
        where = self.sessions.describe(state)
        if state.last_query or state.promoted:
            told = (
                f"{name!r} is not among the tools find_tools returned to {where}: call "
                "find_tools with a need this tool serves, or call one of `available`"
            )
        else:
            told = (
                f"find_tools has not returned {name!r} to {where} yet: call find_tools with "
                "what you need, then call_tool with a name it returns"
            )
        pinned = set(self.presenter.config.pinned)
        return error_result(
            ErrorCode.TOOL_NOT_AVAILABLE,
            told,
            available=sorted(n for n in state.promoted | pinned if allowed is None or allowed(n)),
            call_gate=self.gate_scope,
            hint="the call gate admits only tools find_tools returned. A client that "
            "opens a new connection (or starts a new gateway) per call needs "
            'call_gate = "client" in toolroute.toml; call_gate = "off" turns the gate off',
        )

    def _names(self) -> list[str]:
        return list(self.presenter.tools_by_name)

    async def call(self, name: str, arguments: dict[str, Any]) -> CallResult:
        """Validate and forward one call; an input-required result (the server needs the
        caller's answers first) goes back as it is and is not an outcome yet."""
        server, tool = split_name(name)
        if name in self.quarantined:
            held = self.quarantined[name]
            return error_result(ErrorCode.QUARANTINED, held.message, tool=name)
        definition = self.presenter.tools_by_name.get(name)  # one lookup, not a catalog scan
        if definition is None or server not in self.pool.servers:
            return error_result(
                ErrorCode.UNKNOWN_TOOL,
                f"no tool named {name[:200]!r}; names come from find_tools",
                closest=_closest(name, self._names()),
            )
        schema = dict(definition.input_schema)
        problem = await check_call(name, schema, arguments)  # off the loop, nothing fetched
        if problem:
            return json_result(problem, error=True)
        caller = self.caller()
        bridged = await self.bridged(server, tool, arguments, caller)
        if bridged is not None:
            return bridged
        try:
            result, latency = await self.pool[server].call_tool(
                tool, arguments, self.call_timeout_s, caller=caller
            )
        except DownstreamError as e:
            return self.failed(e, name, caller is not None and caller.stateless)
        if isinstance(result, types.InputRequiredResult):
            return result
        self.record(Outcome(server, tool, success=not result.is_error, latency_s=latency))
        return result

    def caller(self) -> CallContext | None:
        """Where the downstream server's messages about the current call go (the shell's
        client connection); the core alone has none."""
        return None

    async def bridged(
        self, server: str, tool: str, arguments: dict[str, Any], caller: CallContext | None
    ) -> CallResult | None:
        """The result of a call the shell runs through another path (None: a direct call)."""
        return None

    def failed(self, e: DownstreamError, name: str, stateless: bool) -> types.CallToolResult:
        """A failed downstream call: recorded, and answered with what to do next."""
        server, tool = e.server, e.tool or split_name(name)[1]
        if e.error is not None and stateless:
            # a 2026-07-28 client reads the server's own error (a missing capability, a
            # tampered requestState) as the server sent it
            self.record(Outcome(server, tool, success=False, latency_s=0.0))
            raise MCPError.from_error_data(e.error) from None
        self.record(
            Outcome(
                server,
                tool,
                success=False,
                latency_s=self.call_timeout_s if e.code == "timeout" else 0.0,
                server_failed=e.code in ("crashed", "timeout", "unavailable"),
            )
        )
        return error_result(ErrorCode(e.code), e.detail, tool=name, hint=_HINTS[e.code])

    def record(self, outcome: Outcome) -> None:
        """One executed call into the statistics (EHRR eq. 8)."""
        # written synchronously, before the answer goes out: a kill -9 loses only calls in
        # flight (a background writer saved 0.05 ms of a ~2 ms call in
        # benchmarks/results/gateway_latency_loaded.md: not worth an acked-but-lost outcome)
        with self.faults.audit("store"), self.metrics.store("record_outcome"):  # logged once
            self.router.record(outcome)
        if self._on_outcome is not None:
            self._on_outcome(outcome)


def _with_verdict(found: dict[str, Any], notes: dict[str, Any]) -> dict[str, Any]:
    """find_tools' answer, with the "no tool fits" verdict when the router gave one."""
    verdict = notes.get("abstain")
    if verdict is not None and not verdict.fits and not found["candidates"]:
        found.update(verdict.to_dict())
    return found


def _cursor(server: str, offset: int) -> str:
    """An inventory page's opaque cursor: the server and the offset of the next page."""
    raw = json.dumps([server, offset]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _read_cursor(cursor: object, server: str) -> int | None:
    """The offset a cursor of ``server``'s inventory holds (0 without one; None: not one)."""
    if cursor is None:
        return 0
    if not isinstance(cursor, str) or len(cursor) > 400:
        return None
    try:
        raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except ValueError:
        return None
    ok = isinstance(raw, list) and len(raw) == 2 and raw[0] == server
    if ok and isinstance(raw[1], int) and not isinstance(raw[1], bool) and raw[1] >= 0:
        return int(raw[1])
    return None


def _closest(name: str, names: list[str]) -> list[str]:
    """Known names close to a mistyped one (none for a name no tool could have)."""
    if len(name) > MAX_NAME_CHARS:
        return []
    return difflib.get_close_matches(name, names, n=5, cutoff=0.4)
