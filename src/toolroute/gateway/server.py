"""toolroute's own MCP server: two meta-tools in front of every downstream server.

- ``find_tools(query, k?)`` → ranked candidates (seed 000 ROUTE), as structured content and as
  the same JSON in text: ``{"candidates": [{"name", "server", "tool", "description",
  "input_schema", "score"}]}``. ``name`` is ``<server>__<tool>`` (server names may not contain
  ``__``, so it always splits at the first ``__``).
- In ``bind`` exposure mode (seed 001 §3.3), tools that find_tools returns are also bound: added
  to the gateway's own ``tools/list`` under their namespaced name, with a
  ``notifications/tools/list_changed``, so a client can call them directly.
- ``call_tool(name, arguments)`` → validates the arguments against the tool's input schema,
  forwards the call with a deadline and returns the downstream result unchanged (seed 000
  EXECUTE-TOOL). Unknown tool, invalid arguments, timeout and crash come back as ``isError``
  results whose JSON says what to do next; every executed call is recorded (EHRR eq. 8).
- Routing runs in a worker thread (at most ``ROUTE_THREADS`` at once), so a slow strategy (an
  LLM stage, a big index) never holds up another client's ``call_tool`` on the event loop.
- A tool in quarantine (:mod:`toolroute.gateway.quarantine`) is not indexed, so find_tools
  never returns it, and ``call_tool`` refuses it with ``error: quarantined``.
"""

from __future__ import annotations

import difflib
import functools
import json
import logging
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import anyio
import mcp.types as types
from mcp.server import NotificationOptions, Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError

from toolroute.config import SEPARATOR
from toolroute.errors import StoreError
from toolroute.gateway.access import (
    CallGateScope,
    ClientAccess,
    SessionStates,
    authenticated_client,
    client_identity,
    gate_scope,
)
from toolroute.gateway.checks import MAX_NAME_CHARS, check_arguments, check_find_args, check_k
from toolroute.gateway.continuation import STATE_PREFIX, Continuations, InvalidState
from toolroute.gateway.passthrough import PassThrough
from toolroute.gateway.relay import Caller, Relay, current_caller
from toolroute.gateway.status import Faults, snapshot, store_failed
from toolroute.gateway.validate import check_call
from toolroute.memory import learn_from_call, shown_keys
from toolroute.present.events import EventSink, RoutingEvent, query_hash
from toolroute.present.presenter import PresentConfig, Presenter
from toolroute.route.gate import Preconditions, SessionState, blocked_by, preconditions_for
from toolroute.route.llm_stages import subtask_text
from toolroute.router import Router
from toolroute.sdk import OpenTelemetryMiddleware
from toolroute.sources.pool import DownstreamError, DownstreamPool
from toolroute.stats import Outcome

__all__ = [
    "CALL_TOOL",
    "FIND_TOOLS",
    "REQUEST_CAPABILITY",
    "SET_MILESTONE",
    "Gateway",
]

log = logging.getLogger(__name__)

FIND_TOOLS = types.Tool(
    name="find_tools",
    description=(
        "Find the tools that can do what you need, among every connected MCP server. Describe "
        "the need in plain words; you get the best few tools with their input schemas. Then "
        "run one with call_tool."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What you need to get done."},
            "subtask": {
                "type": "object",
                "description": "Or the need as a functional subtask (EHRR): "
                "{domain, operation, target}.",
                "properties": {
                    "domain": {"type": "string"},
                    "operation": {"type": "string"},
                    "target": {"type": "string"},
                },
                "required": ["operation"],
            },
            "k": {
                "type": "integer",
                "minimum": 1,
                "maximum": 50,
                "description": "How many tools to return (default 5).",
            },
        },
    },
)
CALL_TOOL = types.Tool(
    name="call_tool",
    description=(
        "Run a tool returned by find_tools: pass its `name` exactly and `arguments` matching "
        "its input_schema."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The `name` field from find_tools."},
            "arguments": {"type": "object", "description": "Arguments for the tool."},
        },
        "required": ["name"],
    },
)


SET_MILESTONE = types.Tool(
    name="set_milestone",
    description=(
        "Record that the session reached a milestone (e.g. 'plan_confirmed'); tools gated on "
        "it become available to find_tools."
    ),
    input_schema={
        "type": "object",
        "properties": {"name": {"type": "string", "description": "The milestone reached."}},
        "required": ["name"],
    },
)


REQUEST_CAPABILITY = types.Tool(
    name="request_capability",
    description=(
        "Say what capability the tools you were given lack (e.g. 'convert the PDF to text'); "
        "toolroute re-routes with that need and your original request and returns new tools."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "need": {"type": "string", "description": "The missing capability."},
            "k": {"type": "integer", "minimum": 1, "maximum": 20},
        },
        "required": ["need"],
    },
)
ROUTE_THREADS = 2
"""find_tools routings running at once in worker threads (more wait for a free one)."""
MAX_CAPABILITY_REQUESTS = 3
"""request_capability calls per session before it answers with a stop (seed 004 §V loop guard)."""


class _GatewayServer(Server):
    def create_initialization_options(
        self, notification_options: Any = None, *a: Any, **k: Any
    ) -> Any:
        opts = notification_options or NotificationOptions(
            prompts_changed=True, resources_changed=True, tools_changed=True
        )
        return super().create_initialization_options(opts, *a, **k)


def _json_result(payload: dict[str, Any], *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(payload, ensure_ascii=False))],
        structured_content=payload,
        is_error=error,
    )


class Gateway:
    """The gateway's MCP server over a :class:`Router` and a :class:`DownstreamPool`."""

    def __init__(
        self,
        router: Router,
        pool: DownstreamPool,
        *,
        k: int = 5,
        strategy: str = "default",
        call_timeout_s: float = 30.0,
        expose: Literal["meta", "bind", "all"] = "meta",
        call_gate: bool | CallGateScope = True,
        clients: Mapping[str, ClientAccess] | None = None,
        presenter: Presenter | None = None,
        tool_gates: Mapping[str, Preconditions] | None = None,
        server_gates: Mapping[str, Preconditions] | None = None,
        scopes: Sequence[str] = (),
        milestones: Sequence[str] = (),
        events: Sequence[EventSink] = (),
        on_outcome: Callable[[Outcome], None] | None = None,
        request_spans: bool = True,
    ) -> None:
        self.router = router
        self.pool = pool
        self.k = k
        self.strategy = strategy
        self.call_timeout_s = call_timeout_s
        self._on_outcome = on_outcome
        self.expose = expose
        self.gate_scope = gate_scope(call_gate)
        self.call_gate = self.gate_scope != "off"
        self.clients = dict(clients or {})
        """Authenticated HTTP clients by id, with their allow-lists (:mod:`.access`)."""
        self.presenter = presenter or Presenter(router.catalog, PresentConfig(top_k=k))
        self.tool_gates = dict(tool_gates or {})
        self.server_gates = dict(server_gates or {})
        self.scopes = set(scopes)
        self.milestones = set(milestones)
        self.events = tuple(events)
        self.bound: dict[str, types.Tool] = {}
        self.quarantined: dict[str, Any] = {}
        self.faults = Faults()
        """What the gateway cannot write now (store, events log, status file): in status()."""
        """Held tools by name (:class:`toolroute.gateway.quarantine.Held`), set by each sync."""
        self._route_limiter = anyio.CapacityLimiter(ROUTE_THREADS)
        self.bus = InMemorySubscriptionBus()
        self.sessions = SessionStates(
            self.gate_scope,
            lambda: SessionState(scopes=set(self.scopes), milestones=set(self.milestones)),
            store=lambda: self.router.store,
        )
        self.server = _GatewayServer(
            "toolroute",
            version="0.1.0",
            instructions=(
                "Use find_tools to discover tools across all connected servers, then "
                "call_tool to run one."
            ),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_subscriptions_listen=ListenHandler(self.bus),
        )
        if not request_spans:  # the SDK's per-request OpenTelemetry span, off unless `otel`
            self.server.middleware = [
                m for m in self.server.middleware if not isinstance(m, OpenTelemetryMiddleware)
            ]
        self.continuations = Continuations(wait_s=call_timeout_s)
        """2025 servers' requests during a call, bridged to 2026-07-28 clients (runs while
        ``continuations.serving()`` is entered: ``toolroute serve`` enters it)."""
        self.passthrough = PassThrough(pool)
        relisted = self.passthrough.invalidate if expose == "all" else None
        self.relay = Relay(  # resources, prompts, ... and the toolroute://status resource
            pool, self.bus, relisted, self._may_use, status=self.status
        )
        self.relay.ask_timeout_s = call_timeout_s  # the call it belongs to ends by then too
        self.relay.install(self.server)

    def replace_router(self, router: Router) -> Router:
        """Swap in a router over a resynced catalog; returns the old one (to close)."""
        old, self.router = self.router, router
        self.passthrough.invalidate()
        self.relay.invalidate()
        self.presenter = Presenter(router.catalog, self.presenter.config, self.presenter.tokens)
        return old

    def status(self) -> dict[str, Any]:
        """What ``toolroute status`` prints: each server's state and the quarantined tools."""
        held = {n: h.to_dict() for n, h in self.quarantined.items()}
        return snapshot(self.pool, held, faults=self.faults)

    def state(self, session: object = None) -> SessionState:
        """The state of one client connection (scopes, successful calls, milestones, promoted)."""
        return self.sessions.for_connection(session)

    def allowed_for(self, ctx: Any) -> Callable[[str], bool] | None:
        """The allow-list of the authenticated client of this request (None: everything)."""
        client = self.clients.get(authenticated_client(ctx) or "")
        return client.allows if client is not None and client.restricted else None

    def _may_use(self, ctx: Any, server: str) -> bool:
        """Resources and prompts of ``server``: for a client allowed the whole server."""
        allowed = self.allowed_for(ctx)
        return allowed is None or allowed(f"{server}{SEPARATOR}*")

    def _gate(self, name: str, server: str, state: SessionState) -> str | None:
        return blocked_by(
            preconditions_for(name, server, self.tool_gates, self.server_gates), state
        )

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        self.relay.seen(ctx)
        meta = [FIND_TOOLS, CALL_TOOL, REQUEST_CAPABILITY]
        milestones = any(
            g.milestone for g in (*self.tool_gates.values(), *self.server_gates.values())
        )
        if milestones:
            meta.append(SET_MILESTONE)
        allowed = self.allowed_for(ctx)
        if self.expose == "all":  # every allowed tool; set_milestone where preconditions need it
            listed = await self.passthrough.listed()
            tools = [t for t, name in listed if allowed is None or allowed(name)]
            return types.ListToolsResult(tools=[*tools, *([SET_MILESTONE] if milestones else [])])
        bound = [t for t in self.bound.values() if allowed is None or allowed(t.name)]
        return types.ListToolsResult(tools=[*meta, *bound])

    async def _call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        # the call's progress, logs and sampling come back to this client; a 2026-07-28
        # retry's answers and requestState go down with it
        async with self.relay.serving(ctx, params):
            try:
                return await self._dispatch(ctx, params)
            except (sqlite3.Error, StoreError, OSError) as e:  # the gateway's own disk/store
                return _json_result(store_failed(self.faults, e), error=True)

    async def _dispatch(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        args = params.arguments or {}
        state = self.sessions.for_request(ctx)
        allowed = self.allowed_for(ctx)
        if self.expose == "all":
            name = await self.passthrough.resolve(params.name)
            if name is not None:
                return await self.gated_call(
                    name, args, state, allowed, client=authenticated_client(ctx) or ""
                )
        if params.name == FIND_TOOLS.name:
            problem = check_find_args(args)
            if problem:
                return _json_result({"error": "invalid_arguments", "message": problem}, error=True)
            query = args.get("query")
            subtask = args.get("subtask")
            if not query and isinstance(subtask, dict) and subtask.get("operation"):
                query = subtask_text(subtask)
            k = args.get("k", self.k)
            if not isinstance(query, str) or not query.strip():
                return _json_result(
                    {
                        "error": "invalid_arguments",
                        "message": "find_tools needs a `query` or a `subtask` with an operation",
                    },
                    error=True,
                )
            found = await self.find_async(
                query, k, state, may_use=allowed, client=authenticated_client(ctx) or ""
            )
            if self.expose == "bind":
                await self._bind(ctx, found["candidates"])
            return _json_result(found)
        if params.name == CALL_TOOL.name:
            name = args.get("name")
            arguments = args.get("arguments")
            arguments = {} if arguments is None else arguments
            if not isinstance(name, str) or not isinstance(arguments, dict):
                return _json_result(
                    {
                        "error": "invalid_arguments",
                        "message": "call_tool needs `name` (string) and `arguments` (object)",
                    },
                    error=True,
                )
            return await self.gated_call(
                name, arguments, state, allowed=allowed, client=authenticated_client(ctx) or ""
            )
        if params.name == REQUEST_CAPABILITY.name:
            need = args.get("need")
            if not isinstance(need, str) or not need.strip():
                return _json_result(
                    {"error": "invalid_arguments", "message": "request_capability needs `need`"},
                    error=True,
                )
            k = args.get("k", min(self.k, 20))
            problem = check_k(k, 20)
            if problem:
                return _json_result({"error": "invalid_arguments", "message": problem}, error=True)
            return await self._request_capability(ctx, state, need, k, allowed)
        if params.name == SET_MILESTONE.name:
            milestone = args.get("name")
            if not isinstance(milestone, str) or not milestone:
                return _json_result(
                    {"error": "invalid_arguments", "message": "set_milestone needs `name`"},
                    error=True,
                )
            state.milestones.add(milestone)
            return _json_result({"milestones": sorted(state.milestones)})
        if params.name in self.bound:
            return await self.gated_call(
                params.name, args, state, allowed=allowed, client=authenticated_client(ctx) or ""
            )
        return _json_result(
            {
                "error": "unknown_tool",
                "message": f"{params.name[:200]!r} is not a toolroute tool; use "
                "find_tools, then call_tool",
            },
            error=True,
        )

    async def gated_call(
        self,
        name: str,
        arguments: dict[str, Any],
        state: SessionState,
        allowed: Callable[[str], bool] | None = None,
        client: str = "",
    ) -> types.CallToolResult | types.InputRequiredResult:
        """call_tool behind the client's allow-list, the call gate (seed 002 Alg. 1 line 8)
        and the preconditions; a completed call of a found tool feeds ``client``'s usage
        memory (what it called after which find_tools query, and whether it worked)."""
        server, _, tool = name.partition(SEPARATOR)
        known = name in self.presenter.tools_by_name
        if allowed is not None and not (known and allowed(name)):
            return _json_result(
                {
                    "error": "unknown_tool",
                    "message": f"no tool named {name[:200]!r} is available to this client; "
                    "names come from find_tools",
                    "closest": _closest(name, [n for n in self._names() if allowed(n)]),
                },
                error=True,
            )
        problem = check_arguments(arguments)
        if problem:
            return _json_result(
                {"error": "invalid_arguments", "tool": name[:200], "message": problem},
                error=True,
            )
        if known:
            pinned = set(self.presenter.config.pinned)
            gated = self.call_gate and self.expose != "all"  # pass-through lists every tool
            if gated and name not in pinned and not self.sessions.is_promoted(state, name):
                return self._not_promoted(name, state, pinned, allowed)
            reason = self._gate(name, server, state)
            if reason:
                return _json_result(
                    {"error": "precondition_failed", "tool": name, "message": reason}, error=True
                )
        result = await self.call(name, arguments)
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
        self,
        name: str,
        state: SessionState,
        pinned: set[str],
        allowed: Callable[[str], bool] | None,
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
        return _json_result(
            {
                "error": "tool_not_available",
                "message": told,
                "available": sorted(
                    n for n in state.promoted | pinned if allowed is None or allowed(n)
                ),
                "call_gate": self.gate_scope,
                "hint": "the call gate admits only tools find_tools returned. A client that "
                "opens a new connection (or starts a new gateway) per call needs "
                'call_gate = "client" in toolroute.toml; call_gate = "off" turns the gate off',
            },
            error=True,
        )

    async def _request_capability(
        self,
        ctx: Any,
        state: SessionState,
        need: str,
        k: int,
        allowed: Callable[[str], bool] | None = None,
    ) -> types.CallToolResult:
        """Re-route on a missing capability (seed 004 §V): the stated need plus the original
        request, tools already shown excluded; bounded per session to stop loops."""
        state.capability_requests += 1
        if state.capability_requests > MAX_CAPABILITY_REQUESTS:
            return _json_result(
                {
                    "error": "capability_limit",
                    "message": f"already re-routed {MAX_CAPABILITY_REQUESTS} times in this "
                    "session; answer with what you have or ask the user",
                },
                error=True,
            )
        query = f"{need}. {state.last_query}" if state.last_query else need
        shown_before = set(state.promoted)
        found = await self.find_async(
            query, k + len(shown_before), state, remember=False, may_use=allowed
        )
        fresh = [c for c in found["candidates"] if c["name"] not in shown_before][:k]
        self.sessions.promote(state, [c["name"] for c in fresh])
        if self.expose == "bind":
            await self._bind(ctx, fresh)
        return _json_result(
            {
                "candidates": fresh,
                "attempt": state.capability_requests,
                "attempts_left": MAX_CAPABILITY_REQUESTS - state.capability_requests,
            }
        )

    async def _bind(self, ctx: Any, candidates: list[dict[str, Any]]) -> None:
        """Add found tools to tools/list and tell the client (both protocol eras)."""
        new = [c for c in candidates if c["name"] not in self.bound]
        if not new:
            return
        for c in new:
            self.bound[c["name"]] = types.Tool(
                name=c["name"], description=c["description"], input_schema=c["input_schema"]
            )
        await self.bus.publish(ToolsListChanged())  # 2026-07-28 clients listening
        if not str(getattr(ctx, "protocol_version", "")).startswith("2026"):
            await ctx.session.send_tool_list_changed()  # handshake-era clients

    def find(
        self,
        query: str,
        k: int,
        state: SessionState | None = None,
        remember: bool = True,
        may_use: Callable[[str], bool] | None = None,
    ) -> dict[str, Any]:
        """Route, drop tools outside the client's allow-list and tools whose preconditions
        fail, promote the gated top-k (θ, pinned)."""
        start = time.perf_counter()
        ranked = self._rank(self.router, query, k)
        return self._shortlist(query, k, state, remember, ranked, start, may_use)

    async def find_async(
        self,
        query: str,
        k: int,
        state: SessionState | None = None,
        remember: bool = True,
        may_use: Callable[[str], bool] | None = None,
        client: str = "",
    ) -> dict[str, Any]:
        """:meth:`find` with the routing in a worker thread (the event loop stays free);
        ``client``: whose usage memory counts (the token's client id; "" without tokens)."""
        start = time.perf_counter()
        router = self.router
        if router.catalog.tool_count:
            router.stats  # noqa: B018 -- loaded here: the store stays on the event loop's thread
        ranked = await anyio.to_thread.run_sync(
            functools.partial(self._rank, router, query, k, client), limiter=self._route_limiter
        )
        return self._shortlist(query, k, state, remember, ranked, start, may_use)

    def _rank(self, router: Router, query: str, k: int, client: str = "") -> list[Any]:
        if not router.catalog.tool_count:  # no server has answered yet
            return []
        return router.route(query, k=max(4 * k, 20), strategy=self.strategy, client=client)

    def _shortlist(
        self,
        query: str,
        k: int,
        state: SessionState | None,
        remember: bool,
        ranked: list[Any],
        start: float,
        may_use: Callable[[str], bool] | None = None,
    ) -> dict[str, Any]:
        state = state if state is not None else self.state()
        if remember:
            state.last_query = query
        if may_use is not None:  # another client's tools: not even named as gated out
            ranked = [c for c in ranked if may_use(f"{c.server}{SEPARATOR}{c.tool}")]
        allowed, blocked = [], []
        for c in ranked:
            name = f"{c.server}{SEPARATOR}{c.tool}"
            reason = self._gate(name, c.server, state)
            if reason:
                blocked.append((name, reason))
            else:
                allowed.append(c)
        shown = self.presenter.present(allowed, top_k=k)
        promoted = [
            c
            for c in shown.promoted
            if may_use is None or may_use(f"{c.server}{SEPARATOR}{c.tool}")
        ]  # pinned tools outside the client's allow-list too
        names = [f"{c.server}{SEPARATOR}{c.tool}" for c in promoted]
        if remember:
            self.sessions.promote(state, names)
            state.last_shown = shown_keys(promoted, self.presenter.config.pinned, SEPARATOR)
        gated = [*blocked, *shown.gated_out]
        event = RoutingEvent(
            query_hash=query_hash(query),
            strategy=self.strategy,
            candidates=[
                {"name": f"{c.server}{SEPARATOR}{c.tool}", "score": round(c.score, 4)}
                for c in ranked
            ],
            gated_out=[{"name": n, "reason": r} for n, r in gated],
            active=names,
            phase1_tokens=shown.phase1_tokens,
            phase2_tokens=shown.phase2_tokens,
            latency_ms=round((time.perf_counter() - start) * 1000, 3),
        )
        with self.faults.audit("store"):  # an audit write: skipped, never fails find_tools
            self.router.store.record_event(event.to_json())
        for sink in self.events:
            with self.faults.audit(getattr(sink, "part", "events")):
                sink.emit(event)
        return {
            "candidates": [
                {
                    "name": f"{c.server}{SEPARATOR}{c.tool}",
                    "server": c.server,
                    "tool": c.tool,
                    "description": c.description,
                    "input_schema": c.input_schema,
                    "score": round(c.score, 4),
                }
                for c in promoted
            ],
            "gated_out": [{"name": n, "reason": r} for n, r in blocked[:k]],
        }

    def _names(self) -> list[str]:
        return list(self.presenter.tools_by_name)

    async def call(
        self, name: str, arguments: dict[str, Any]
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Validate and forward one call; an input-required result (the server needs the
        caller's answers first) goes back as it is and is not an outcome yet."""
        server, _, tool = name.partition(SEPARATOR)
        if name in self.quarantined:
            held = self.quarantined[name]
            return _json_result(
                {"error": "quarantined", "tool": name, "message": held.message}, error=True
            )
        definition = self.presenter.tools_by_name.get(name)  # one lookup, not a catalog scan
        if definition is None or server not in self.pool.servers:
            return _json_result(
                {
                    "error": "unknown_tool",
                    "message": f"no tool named {name[:200]!r}; names come from find_tools",
                    "closest": _closest(name, self._names()),
                },
                error=True,
            )
        schema = dict(definition.input_schema)
        problem = await check_call(name, schema, arguments)  # off the loop, nothing fetched
        if problem:
            return _json_result(problem, error=True)
        caller = current_caller()
        resuming = caller is not None and (caller.request_state or "").startswith(STATE_PREFIX)
        if caller is not None and caller.stateless and (resuming or self._bridges(server)):
            return await self._bridged(server, tool, arguments, caller)
        try:
            result, latency = await self.pool[server].call_tool(
                tool, arguments, self.call_timeout_s, caller=caller
            )
        except DownstreamError as e:
            return self._failed(e, name, caller is not None and caller.stateless)
        if isinstance(result, types.InputRequiredResult):
            return result
        self._record(Outcome(server, tool, success=not result.is_error, latency_s=latency))
        return result

    def _bridges(self, server: str) -> bool:
        """Whether a 2026-07-28 caller's call to ``server`` runs bridged: the server speaks
        2025-11-25, so it asks for input by request, and the bridge can run."""
        return self.continuations.running and not self.pool[server].stateless

    async def _bridged(
        self, server: str, tool: str, arguments: dict[str, Any], caller: Caller
    ) -> types.CallToolResult | types.InputRequiredResult:
        """A 2026-07-28 client's call to a 2025 server (:mod:`.continuation`)."""
        client = client_identity(caller.ctx)
        try:
            if (caller.request_state or "").startswith(STATE_PREFIX):
                out = await self.continuations.resume(
                    client, caller.request_state or "", caller.input_responses
                )
            else:
                out = await self.continuations.start(
                    client,
                    caller.capabilities,
                    lambda bridge: self.pool[server].call_tool(
                        tool, arguments, self.call_timeout_s, caller=bridge
                    ),
                )
        except InvalidState as e:
            raise MCPError(code=types.INVALID_PARAMS, message=str(e)) from None
        if isinstance(out, types.InputRequiredResult):
            return out
        name = f"{server}{SEPARATOR}{tool}"
        if isinstance(out.error, DownstreamError):
            return self._failed(out.error, name, stateless=True)
        if out.error is not None:
            return self._failed(
                DownstreamError(server, tool, "timeout", str(out.error)), name, stateless=True
            )
        result, latency = out.result
        self._record(Outcome(server, tool, success=not result.is_error, latency_s=latency))
        return result  # type: ignore[no-any-return]

    def _failed(self, e: DownstreamError, name: str, stateless: bool) -> types.CallToolResult:
        """A failed downstream call: recorded, and answered with what to do next."""
        server, tool = e.server, e.tool or name.partition(SEPARATOR)[2]
        if e.error is not None and stateless:
            # a 2026-07-28 client reads the server's own error (a missing capability, a
            # tampered requestState) as the server sent it
            self._record(Outcome(server, tool, success=False, latency_s=0.0))
            raise MCPError.from_error_data(e.error) from None
        self._record(
            Outcome(
                server,
                tool,
                success=False,
                latency_s=self.call_timeout_s if e.code == "timeout" else 0.0,
                server_failed=e.code in ("crashed", "timeout", "unavailable"),
            )
        )
        hint = {
            "timeout": "the server did not answer in time; try again or pick another tool",
            "crashed": "the server crashed and is being restarted; try again shortly",
            "unavailable": "the server is not connected; try another tool from find_tools",
            "protocol": "the server returned an invalid response",
            "too_large": "ask for less (a narrower query, a page, a smaller range)",
        }[e.code]
        return _json_result(
            {"error": e.code, "tool": name, "message": e.detail, "hint": hint}, error=True
        )

    def _record(self, outcome: Outcome) -> None:
        # committed before the answer goes out: a kill -9 loses only calls in flight (the
        # background writer, router.record(wait=False), saved 0.05 ms of a ~2 ms call in
        # benchmarks/results/gateway_latency_loaded.md: not worth an acked-but-lost outcome)
        with self.faults.audit("store"):  # statistics must never break a call; logged once
            self.router.record(outcome)
        if self._on_outcome is not None:
            self._on_outcome(outcome)


def _closest(name: str, names: list[str]) -> list[str]:
    """Known names close to a mistyped one (none for a name no tool could have)."""
    if len(name) > MAX_NAME_CHARS:
        return []
    return difflib.get_close_matches(name, names, n=5, cutoff=0.4)
