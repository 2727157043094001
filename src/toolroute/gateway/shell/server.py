"""toolroute's own MCP server: meta-tools in front of every downstream server.

:class:`Gateway` is the MCP shell. It holds the product's loop as two transport-free parts over
the data they share (:class:`toolroute.gateway.shared.Shared`): what finds tools
(:class:`toolroute.gateway.find.Finder`: route → gate → present → promote) and what calls them
(:class:`toolroute.gateway.calls.path.CallPath`: the call gate, execution, recording). This
module adds what is MCP: the meta-tools (a table of handlers, :attr:`Gateway.handlers`), bound
and passed-through tools, the relay of resources, prompts and notifications, and the bridge
between a 2026-07-28 client and a 2025-11-25 server. Its hooks (code mode, registry
suggestions, the warm-up at start, metrics) are given when it is made.

- ``find_tools(query, k?)`` → ranked candidates, as structured content and as
  the same JSON in text: ``{"candidates": [{"name", "server", "tool", "description",
  "input_schema", "score"}]}``. ``name`` is ``<server>__<tool>`` (server names may not contain
  ``__``, so it always splits at the first ``__``).
- In ``bind`` exposure mode (ScaleMCP's dynamic binding), tools that find_tools returns to a
  client are also bound for that client: added to its ``tools/list`` under their namespaced
  name, with a ``notifications/tools/list_changed`` to its connections (a listen event at
  2026-07-28), so it can call them directly.
- ``call_tool(name, arguments)`` → validates the arguments against the tool's input schema,
  forwards the call with a deadline and returns the downstream result unchanged (the call
  path, :mod:`toolroute.gateway.calls.pipeline`). Unknown tool, invalid arguments, timeout and
  crash come back as ``isError`` results whose JSON says what to do next; every executed call
  is recorded (EHRR eq. 8).
- Routing runs in a worker thread (at most ``find.ROUTE_THREADS`` at once), so a slow strategy (an
  LLM stage, a big index) never holds up another client's ``call_tool`` on the event loop.
- A tool in quarantine (:mod:`toolroute.gateway.calls.quarantine`) is not indexed, so find_tools
  never returns it, and ``call_tool`` refuses it with ``error: quarantined``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sqlite3
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Protocol

import anyio
import mcp.types as types
from mcp.server import NotificationOptions, Server
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
)

from toolroute.catalog.name import qualified_name, server_of
from toolroute.downstream.servers import CallContext, Downstreams
from toolroute.errors import ErrorCode, StoreError
from toolroute.gateway.calls.access import (
    ClientAccess,
    Request,
    authenticated_client,
    is_stateless,
)
from toolroute.gateway.calls.arguments import coerce_arguments
from toolroute.gateway.calls.path import CallPath
from toolroute.gateway.calls.pipeline import Call, CallResult, json_result
from toolroute.gateway.calls.record import Record
from toolroute.gateway.find import MAX_CAPABILITY_REQUESTS, Allowed, Finder, error_result
from toolroute.gateway.health import snapshot, store_failed
from toolroute.gateway.shared import Metrics, Shared
from toolroute.gateway.shell._binding import Binding
from toolroute.gateway.shell._continuation import Continuations, EraBridge
from toolroute.gateway.shell._passthrough import PassThrough
from toolroute.gateway.shell._relay import Caller, Relay
from toolroute.gateway.shell.meta_tools import (
    CALL_TOOL,
    FIND_TOOLS,
    REQUEST_CAPABILITY,
    SET_MILESTONE,
    check_find_args,
    coerce_k,
)
from toolroute.policy import LimitSettings
from toolroute.present.events import EventSink
from toolroute.present.presenter import Presenter
from toolroute.route.llm_stages import subtask_text
from toolroute.route.preconditions import Preconditions, SessionState
from toolroute.router import Router
from toolroute.sdk import OpenTelemetryMiddleware, connection_of, in_process
from toolroute.settings import DEFAULTS, ToolrouteSettings
from toolroute.stats import Outcome

__all__ = [
    "CALL_TOOL",
    "MAX_CAPABILITY_REQUESTS",
    "FIND_TOOLS",
    "REQUEST_CAPABILITY",
    "SET_MILESTONE",
    "CodeModeHook",
    "Gateway",
    "SuggestHook",
    "Warmup",
]

log = logging.getLogger(__name__)

try:
    VERSION = version("toolroute")
except PackageNotFoundError:  # run from a source tree that was never installed
    VERSION = "0+unknown"


@dataclass(frozen=True, slots=True)
class _Request:
    """One ``tools/call`` request (a meta-tool, a bound or a passed-through tool), with who
    made it."""

    ctx: Request
    params: types.CallToolRequestParams
    args: dict[str, Any]
    state: SessionState
    allowed: Allowed
    client: str
    """The token's client id ("" without tokens): whose usage memory its calls feed."""
    caller: Caller
    """Where the servers' messages during its calls go: back to this request's client."""
    identity: str
    """Whom ``[limits]`` count its calls against (:func:`client_identity`)."""
    records: list[Record] = field(default_factory=list)
    """What its calls leave behind, recorded once it has answered (:data:`REQUEST_STEPS`)."""


Handler = Callable[[_Request], Awaitable[CallResult]]


def _invalid(message: str) -> types.CallToolResult:
    return error_result(ErrorCode.INVALID_ARGUMENTS, message)


def _connection(ctx: Request) -> object | None:
    """The connection a request came on, to bind code mode's handles to; None for a
    2026-07-28 request, which stands alone."""
    if is_stateless(ctx):
        return None
    connection: object = connection_of(getattr(ctx, "session", None))
    return connection


class CodeModeHook(Protocol):
    """What the shell needs of code mode (:class:`toolroute.codemode.execute.CodeMode`): its
    ``execute`` tool, large results paged, and find_tools as code mode answers it."""

    tool: types.Tool

    async def execute(
        self,
        args: Mapping[str, Any],
        state: SessionState,
        allowed: Allowed,
        client: str,
        connection: object | None,
        identity: str,
        *,
        caller: CallContext | None,
    ) -> types.CallToolResult: ...

    def paged(
        self,
        result: types.CallToolResult,
        state: SessionState,
        client: str,
        connection: object | None,
    ) -> types.CallToolResult: ...

    def find_tools(self, handler: Handler) -> Handler:
        """find_tools as code mode answers it (``handler``: as the shell does)."""
        ...


class SuggestHook(Protocol):
    """What the shell needs of registry suggestions (:class:`toolroute.registry.Suggester`):
    the servers that would serve a need no connected tool serves (``[registry]``)."""

    async def answer(self, query: str) -> dict[str, Any]: ...


class Warmup(Protocol):
    """What a request waits for at start (:class:`toolroute.gateway.ops.startup.Warmup`):
    one server ready, or every server (None); ``settled`` once every server is."""

    @property
    def settled(self) -> anyio.Event: ...

    async def wait(self, server: str | None = None) -> None: ...


class _GatewayServer(Server):
    def create_initialization_options(
        self, notification_options: Any = None, *a: Any, **k: Any
    ) -> Any:
        opts = notification_options or NotificationOptions(
            prompts_changed=True, resources_changed=True, tools_changed=True
        )
        return super().create_initialization_options(opts, *a, **k)


# -- the request's steps around its handler ------------------------------------------------


async def recorded_after_reply(gateway: Gateway, r: _Request, next: Handler) -> CallResult:
    """What the request's tool calls leave behind (:mod:`toolroute.gateway.calls.record`) is
    recorded once its reply is out: over a transport, the SDK writes the reply from the
    request's own task, so when that task ends; held meanwhile
    (:attr:`Gateway.answering`), so a gateway that stops records it
    (:meth:`Gateway.record_answering`). An in-process client has the answer as the handler
    returns: recorded then."""
    try:
        return await next(r)
    finally:
        if r.records:
            if in_process(r.ctx):
                gateway.calls.recorder.record(r.records)
            else:
                gateway.answering[id(r.records)] = r.records
                _when_answered(functools.partial(gateway.answered, r.records))


def _when_answered(release: Callable[[], None]) -> None:
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no asyncio loop running: nothing later to wait for
        task = None
    if task is None:
        release()
        return

    def released(_: object) -> None:
        try:
            release()
        except Exception:  # a loop callback: nobody above it to report to
            log.exception("recording what a call left behind failed")

    task.add_done_callback(released)


async def warm_up(gateway: Gateway, r: _Request, next: Handler) -> CallResult:
    """At start, a call of an indexed server's tool goes on; one of a server still being
    indexed, and a meta-tool, wait for it (or every server), at most ``connect_timeout_s``
    after the start (:class:`toolroute.gateway.ops.startup.Warmup`). Once every server is
    ready, nothing waits."""
    warmup = gateway.warmup
    if warmup is not None and not warmup.settled.is_set():
        await warmup.wait(gateway._waits_for(r.params))
    return await next(r)


async def store_failure(gateway: Gateway, r: _Request, next: Handler) -> CallResult:
    """The gateway's own store or disk failing the request is an ``isError`` answer saying
    what to do next, not a JSON-RPC error."""
    try:
        return await next(r)
    except (sqlite3.Error, StoreError, OSError) as e:
        return json_result(store_failed(gateway.shared.faults, e), error=True)


async def metered(gateway: Gateway, r: _Request, next: Handler) -> CallResult:
    """The answer counted and timed (:attr:`Shared.metrics`, made with the gateway:
    ``/metrics``)."""
    return await gateway.shared.metrics.observed(r.params, next(r))


RequestStep = Callable[["Gateway", _Request, Handler], Awaitable[CallResult]]
REQUEST_STEPS: tuple[RequestStep, ...] = (recorded_after_reply, warm_up, store_failure, metered)
"""What every ``tools/call`` request goes through around its handler (a meta-tool, a bound or
a passed-through tool: :meth:`Gateway._dispatch`), outermost first."""


class _Around:
    """One request step bound to the gateway and to what it wraps (made once)."""

    __slots__ = ("gateway", "next", "step")

    def __init__(self, step: RequestStep, gateway: Gateway, next: Handler) -> None:
        self.step, self.gateway, self.next = step, gateway, next

    def __call__(self, r: _Request) -> Awaitable[CallResult]:
        return self.step(self.gateway, r, self.next)


def _bound(gateway: Gateway, steps: Sequence[RequestStep], handler: Handler) -> Handler:
    """``steps`` around ``handler``, bound to ``gateway`` once."""
    for step in reversed(steps):
        handler = _Around(step, gateway, handler)
    return handler


class Gateway:
    """The gateway's MCP server: holds what finds tools (:attr:`finder`) and what calls them
    (:attr:`calls`) over the data they share (:attr:`shared`), and adds the meta-tools, bound
    and passed-through tools, the relay of everything else, and 2025 ↔ 2026 bridging."""

    def __init__(
        self,
        router: Router,
        downstreams: Downstreams,
        settings: ToolrouteSettings = DEFAULTS,
        *,
        clients: Mapping[str, ClientAccess] | None = None,
        presenter: Presenter | None = None,
        tool_preconditions: Mapping[str, Preconditions] | None = None,
        server_preconditions: Mapping[str, Preconditions] | None = None,
        events: Sequence[EventSink] = (),
        on_outcome: Callable[[Outcome], None] | None = None,
        metrics: Callable[[Gateway], Metrics] | None = None,
        limits: LimitSettings | None = None,
        code_mode_for: Callable[[Gateway], CodeModeHook] | None = None,
        suggester: SuggestHook | None = None,
        warmup: Warmup | None = None,
    ) -> None:
        """``settings``: the ``[toolroute]`` settings (:class:`Shared`); ``metrics``: makes what
        counts this gateway's calls (it keeps the gateway, to read at scrape time; None:
        nothing counted); ``limits``: ``[limits]`` (None: none); ``code_mode_for``: makes
        code mode for this gateway (None: ``execute`` answers that it is off); ``suggester``: the
        registry's servers where no tool fits (None: no registry asked); ``warmup``: what a
        request at start waits for (None: nothing, every server indexed already)."""
        self.continuations = Continuations(wait_s=settings.call_timeout_s)
        self.shared = Shared(
            router,
            downstreams,
            settings,
            presenter=presenter,
            tool_preconditions=tool_preconditions,
            server_preconditions=server_preconditions,
            # 2025 servers' requests during a call, bridged to 2026-07-28 clients (runs while
            # ``continuations.serving()`` is entered: ``toolroute serve`` enters it)
            bridge=EraBridge(self.continuations, downstreams),
            metrics=metrics(self) if metrics is not None else None,
        )
        """What finding and calling share: router, presenter, settings, sessions, faults."""
        self.finder = Finder(self.shared, events=events)
        """What finds tools (find_tools, inventories, request_capability)."""
        self.calls = CallPath(self.shared, limits, on_outcome)
        """What calls them: the call path, bound once (its steps read :attr:`shared`)."""
        self.clients = dict(clients or {})
        """Authenticated HTTP clients by id, with their allow-lists (:mod:`.access`)."""
        self.suggester = suggester
        self.warmup = warmup
        """At start, what a call waits for: the quick servers indexed (gateway/ops/startup.py)."""
        self.find_tools_tool = FIND_TOOLS  # app.describe_find_tools names the servers in it
        self.bus = InMemorySubscriptionBus()
        self.passthrough = PassThrough(
            downstreams, lambda: self.shared.quarantined
        )  # held: unlisted
        self.binding = Binding(  # bind mode, and every 2026-07-28 client's listen stream
            self.shared.sessions,
            self.bus,
            lambda: self.shared.presenter.tools_by_name,
            self.passthrough.original,
        )
        self.code_mode = code_mode_for(self) if code_mode_for is not None else None
        find_tools: Handler = self._find_tools
        if self.code_mode is not None:
            find_tools = self.code_mode.find_tools(find_tools)
        self.handlers: dict[str, Handler] = {
            FIND_TOOLS.name: find_tools,
            CALL_TOOL.name: self._call_meta,
            REQUEST_CAPABILITY.name: self._request_capability,
            SET_MILESTONE.name: self._set_milestone,
            "execute": self._execute,
        }
        """The meta-tools by name (set_milestone answers even where it is not listed)."""
        self.server = _GatewayServer(
            "toolroute",
            version=VERSION,
            instructions=(
                "Use find_tools to discover tools across all connected servers, then "
                "call_tool to run one."
            ),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_subscriptions_listen=self.binding.listen,
        )
        if not settings.otel:  # the SDK's per-request OpenTelemetry span, off unless `otel`
            self.server.middleware = [
                m for m in self.server.middleware if not isinstance(m, OpenTelemetryMiddleware)
            ]
        relisted = self.passthrough.invalidate if settings.expose == "all" else None
        self.relay = Relay(  # resources, prompts, ... and the toolroute://status resource
            downstreams, self.bus, relisted, self._may_use, status=self.status
        )
        self.relay.ask_timeout_s = settings.call_timeout_s  # its call ends by then too
        self.relay.ready = self._warmed
        self.relay.install(self.server)
        self._request_path = _bound(self, REQUEST_STEPS, self._dispatch)
        self.answering: dict[int, list[Record]] = {}
        """What the calls of requests whose reply is not out yet left behind, by id, in the
        order they were answered (:func:`recorded_after_reply`)."""

    def replace_router(self, router: Router) -> Router:
        """Swap in a router over a resynced catalog (:meth:`Shared.replace_router`); returns
        the old one (to close). What the shell made of the old catalog is dropped."""
        old = self.shared.replace_router(router)
        self.binding.bound.clear()  # definitions are read again from the resynced servers
        self.passthrough.invalidate()
        self.relay.invalidate()
        return old

    def answered(self, records: list[Record]) -> None:
        """A request's reply is out: record what its calls left behind (nothing when
        :meth:`record_answering` already has)."""
        if self.answering.pop(id(records), None) is not None:
            self.calls.recorder.record(records)

    def record_answering(self) -> None:
        """Record what the calls of requests still answering left behind, in order: a
        gateway that stops."""
        while self.answering:
            self.calls.recorder.record(self.answering.pop(next(iter(self.answering))))

    def status(self) -> dict[str, Any]:
        """What ``toolroute status`` prints: each server's state and the quarantined tools."""
        shared = self.shared
        held = {n: h.to_dict() for n, h in shared.quarantined.items()}
        return snapshot(shared.downstreams, held, faults=shared.faults)

    def allowed_for(self, ctx: Request) -> Allowed:
        """The allow-list of the authenticated client of this request (None: everything)."""
        client = self.clients.get(authenticated_client(ctx) or "")
        return client.allows if client is not None and client.restricted else None

    def _may_use(self, ctx: Request, server: str) -> bool:
        """Resources and prompts of ``server``: for a client allowed the whole server."""
        allowed = self.allowed_for(ctx)
        return allowed is None or allowed(qualified_name(server, "*"))

    async def _list_tools(self, ctx: Request, params: Any) -> types.ListToolsResult:
        self.relay.seen(ctx)
        meta = [self.find_tools_tool, CALL_TOOL, REQUEST_CAPABILITY]
        milestones = any(
            g.milestone
            for g in (
                *self.shared.tool_preconditions.values(),
                *self.shared.server_preconditions.values(),
            )
        )
        if milestones:
            meta.append(SET_MILESTONE)
        if self.code_mode is not None:
            meta.append(self.code_mode.tool)
        allowed = self.allowed_for(ctx)
        expose = self.shared.settings.expose
        if expose == "all":  # every allowed tool; set_milestone where preconditions need it
            if self.warmup is not None:  # at start: the quick servers' tools reviewed first
                await self.warmup.wait()
            listed = await self.passthrough.listed()
            tools = [t for t, name in listed if allowed is None or allowed(name)]
            return types.ListToolsResult(tools=[*tools, *([SET_MILESTONE] if milestones else [])])
        bound: list[types.Tool] = []
        if expose == "bind":
            state = self.shared.sessions.for_request(ctx)
            self.binding.joined(ctx, state)
            if self.warmup is not None:  # at start: a new process lists what the store holds
                await self.warmup.wait()  # for this client once its servers are indexed
            bound = await self.binding.bound_for(state, allowed)
        return types.ListToolsResult(tools=[*meta, *bound])

    async def _warmed(self) -> None:
        if self.warmup is not None:
            await self.warmup.wait()

    def _waits_for(self, params: types.CallToolRequestParams) -> str | None:
        """The one server a call at start waits for: the server of the tool it calls (None:
        every server, for find_tools and the other meta-tools, or a name of no server)."""
        name: object = params.name
        if name == "call_tool":
            name = (params.arguments or {}).get("name")
        elif name in self.handlers:
            return None
        server = server_of(name) if isinstance(name, str) else ""
        return server if server in self.shared.downstreams.servers else None

    async def _call_tool(self, ctx: Request, params: types.CallToolRequestParams) -> CallResult:
        """A ``tools/call`` request, as data, through :data:`REQUEST_STEPS`."""
        # the call's progress, logs and sampling come back to this client; a 2026-07-28
        # retry's answers and requestState go down with it
        caller = Caller(self.relay, ctx, params)
        if not caller.stateless:  # a handshake-era session hears of list changes later
            self.relay.seen(ctx)
        request = _Request(
            ctx,
            params,
            params.arguments or {},
            self.shared.sessions.for_request(ctx),
            self.allowed_for(ctx),
            authenticated_client(ctx) or "",
            caller,
            caller.identity,
        )
        return await self._request_path(request)

    async def _dispatch(self, request: _Request) -> CallResult:
        """A passed-through tool, a meta-tool, or a bound tool, in that order."""
        ctx, params = request.ctx, request.params
        expose = self.shared.settings.expose
        if expose == "all":
            name = await self.passthrough.resolve(params.name)
            if name is not None:
                return await self._gated(request, name, request.args)
        handler = self.handlers.get(params.name)
        if handler is not None:
            return await handler(request)
        if expose == "bind" and params.name in self.shared.presenter.tools_by_name:
            self.binding.joined(ctx, request.state)
            return await self._gated(request, params.name, request.args)
        return error_result(
            ErrorCode.UNKNOWN_TOOL,
            f"{params.name[:200]!r} is not a toolroute tool; use find_tools, then call_tool",
        )

    async def _gated(self, r: _Request, name: str, arguments: dict[str, Any]) -> CallResult:
        """One tool call of the request through the call path; what it leaves behind joins
        the request's records (recorded after the reply)."""
        call = Call(name, arguments, r.state, r.allowed, r.client, r.caller, r.identity, r.records)
        return await self.calls.run(call)

    async def _find_tools(self, r: _Request) -> CallResult:
        problem = check_find_args(r.args)
        if problem:
            return _invalid(problem)
        server = r.args.get("server")
        if server is not None and not r.args.get("query") and not r.args.get("subtask"):
            before = set(r.state.promoted)
            listed = self.finder.inventory(
                server, r.args.get("k"), r.state, r.allowed, r.args.get("cursor")
            )
            if self.shared.settings.expose == "bind" and not listed.is_error:
                found = (listed.structured_content or {})["candidates"]
                await self.binding.bind(r.ctx, r.state, found, before)
            return listed
        query = r.args.get("query")
        subtask = r.args.get("subtask")  # the Python API's functional subtask, still accepted
        if not query and isinstance(subtask, dict) and subtask.get("operation"):
            query = subtask_text(subtask)
        k, _ = coerce_k(r.args.get("k"), self.shared.settings.k, 50)
        if not isinstance(query, str) or not query.strip():
            return _invalid("find_tools needs `query`: what you need to get done, in words")
        before = set(r.state.promoted)
        found = await self.finder.find_async(query, k, r.state, may_use=r.allowed, client=r.client)
        if self.suggester is not None and (found.get("no_tool_fits") or found.get("doubtful_fit")):
            found.update(await self.suggester.answer(query))  # registry servers that would
        indexing = self.shared.downstreams.notes.get(
            "indexing", {}
        )  # servers whose tools are not found yet
        if shown := {n: v for n, v in indexing.items() if self._may_use(r.ctx, n)}:
            found["indexing"] = shown
        if self.shared.settings.expose == "bind":
            await self.binding.bind(r.ctx, r.state, found["candidates"], before)
        return json_result(found)

    async def _call_meta(self, r: _Request) -> CallResult:
        name = r.args.get("name")
        if not isinstance(name, str) or not name:
            return _invalid("call_tool needs `name`: the `name` field of a find_tools candidate")
        arguments, problem = coerce_arguments(r.args.get("arguments", {}))
        if problem:
            return _invalid(problem)
        result = await self._gated(r, name, arguments)
        if self.code_mode is not None and isinstance(result, types.CallToolResult):
            return self.code_mode.paged(result, r.state, r.client, _connection(r.ctx))
        return result

    async def _request_capability(self, r: _Request) -> CallResult:
        need = r.args.get("need")
        if not isinstance(need, str) or not need.strip():
            return _invalid("request_capability needs `need`")
        k, problem = coerce_k(r.args.get("k"), min(self.shared.settings.k, 20), 20)
        if problem:
            return _invalid(problem)
        before = set(r.state.promoted)
        result = await self.finder.request_capability(r.state, need, k, r.allowed)
        if self.shared.settings.expose == "bind" and not result.is_error:
            found = (result.structured_content or {})["candidates"]
            await self.binding.bind(r.ctx, r.state, found, before)
        return result

    async def _execute(self, r: _Request) -> CallResult:
        if self.code_mode is None:  # [toolroute] code_mode is off
            return error_result(ErrorCode.UNKNOWN_TOOL, "execute needs code_mode = true")
        return await self.code_mode.execute(
            r.args,
            r.state,
            r.allowed,
            r.client,
            _connection(r.ctx),
            r.identity,
            caller=r.caller,
        )

    async def _set_milestone(self, r: _Request) -> CallResult:
        milestone = r.args.get("name")
        if not isinstance(milestone, str) or not milestone:
            return _invalid("set_milestone needs `name`")
        r.state.milestones.add(milestone)
        return json_result({"milestones": sorted(r.state.milestones)})
