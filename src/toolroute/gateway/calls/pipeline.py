"""The call path: one ordered list of steps that every tool call goes through.

``call_tool``, bound tools, pass-through tools and code mode's scripts all enter at
:meth:`toolroute.gateway.core.GatewayCore.gated_call`, which runs :data:`STEPS` in order. Each
step has one job: it answers the call itself (a refusal, an error) or hands it to the next
step, and may look at the answer on its way back::

    allow-list → arguments → call gate → preconditions → learn → limits
        → quarantine → known tool → schema → forward (bridge or downstream, record)

The first six are about the caller (who may call what, and what it learns from); the last four
(:data:`EXECUTE`) about the call itself, and are also what
:meth:`~toolroute.gateway.core.GatewayCore.call` runs for a caller that was already checked.
Request metrics wrap the whole request one level up, in the MCP shell
(:meth:`toolroute.gateway.ops._metrics.GatewayMetrics.observed`), because they count the meta-tools
too. A step reads what it needs from the gateway through :class:`Host`, so this module depends
on no gateway class.

A gateway binds the steps to itself once (:func:`bind`): a call then allocates nothing per
step. A step that only looks at the call on its way down (a check) is a plain function that
returns the next step's awaitable, or its refusal (:class:`Answer`), without awaiting it, so
a call in flight holds a frame only for the steps that wait for the answer (learn, limits,
schema, forward).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import mcp.types as types

from toolroute.catalog.name import split_name
from toolroute.downstream.servers import CallContext, DownstreamError, DownstreamPool
from toolroute.errors import ErrorCode, error_payload
from toolroute.gateway.calls._checks import MAX_NAME_CHARS, check_arguments
from toolroute.gateway.calls._schema import check_call
from toolroute.learn.memory import learn_from_call
from toolroute.route.preconditions import SessionState
from toolroute.stats import Outcome

if TYPE_CHECKING:
    from toolroute.catalog.models import Tool
    from toolroute.gateway.calls.quarantine import Held
    from toolroute.router import Router

__all__ = [
    "EXECUTE",
    "Answer",
    "STEPS",
    "Call",
    "CallResult",
    "Host",
    "Next",
    "Step",
    "bind",
    "closest",
    "json_result",
    "refusal",
    "run",
]

CallResult = types.CallToolResult | types.InputRequiredResult
Allowed = Callable[[str], bool] | None


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call on its way down: the tool, its arguments and who asked."""

    name: str
    """The catalog name ``<server>__<tool>``."""
    arguments: dict[str, Any]
    state: SessionState
    """The caller's session state (its promotions, milestones, successful calls)."""
    allowed: Allowed = None
    """The caller's allow-list (None: every tool)."""
    client: str = ""
    """Whose usage memory the call feeds (the token's client id; "" without tokens)."""
    server: str = field(init=False, repr=False, compare=False)
    """The server part of :attr:`name`."""
    tool: str = field(init=False, repr=False, compare=False)
    """The tool part of :attr:`name`."""

    def __post_init__(self) -> None:
        server, tool = split_name(self.name)  # once: several steps read them
        object.__setattr__(self, "server", server)
        object.__setattr__(self, "tool", tool)


class _Tools(Protocol):
    @property
    def tools_by_name(self) -> Mapping[str, Tool]: ...


class _Limits(Protocol):
    def refused(self, result: object) -> bool: ...

    async def call(
        self,
        run: Callable[[str, dict[str, Any]], Awaitable[CallResult]],
        name: str,
        arguments: dict[str, Any],
    ) -> CallResult: ...


class Host(Protocol):
    """What the steps read from the gateway (:class:`~toolroute.gateway.core.GatewayCore`)."""

    @property
    def presenter(self) -> _Tools: ...
    @property
    def pool(self) -> DownstreamPool: ...
    @property
    def limits(self) -> _Limits: ...
    @property
    def quarantined(self) -> Mapping[str, Held]: ...
    @property
    def router(self) -> Router: ...
    @property
    def call_timeout_s(self) -> float: ...

    def admits(self, state: SessionState, name: str) -> bool: ...
    def not_promoted(
        self, name: str, state: SessionState, allowed: Allowed
    ) -> types.CallToolResult: ...
    def blocked(self, name: str, server: str, state: SessionState) -> str | None: ...
    def remember(self, query: str, server: str, tool: str, ok: bool, client: str) -> None: ...
    def caller(self) -> CallContext | None: ...
    async def bridged(
        self, server: str, tool: str, arguments: dict[str, Any], caller: CallContext | None
    ) -> CallResult | None: ...
    def failed(self, e: DownstreamError, name: str, stateless: bool) -> types.CallToolResult: ...
    def record(self, outcome: Outcome) -> None: ...


Next = Callable[[Call], Awaitable[CallResult]]
Step = Callable[[Host, Call, Next], Awaitable[CallResult]]


class Answer(Awaitable[CallResult]):
    """``result`` as an awaitable that is already done: a check's refusal, returned where
    the next step's awaitable would be."""

    __slots__ = ("result",)

    def __init__(self, result: CallResult) -> None:
        self.result = result

    def __await__(self) -> Generator[Any, None, CallResult]:
        return self.result
        yield  # a generator that returns at once: awaiting it never suspends


def json_result(payload: dict[str, Any], *, error: bool = False) -> types.CallToolResult:
    """``payload`` as structured content and as the same JSON in text."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(payload, ensure_ascii=False))],
        structured_content=payload,
        is_error=error,
    )


def refusal(code: ErrorCode, message: str, **extra: Any) -> types.CallToolResult:
    """An ``isError`` result naming ``code`` (:func:`toolroute.errors.error_payload`)."""
    return json_result(error_payload(code, message, **extra), error=True)


def closest(name: str, names: Sequence[str]) -> list[str]:
    """Known names close to a mistyped one (none for a name no tool could have)."""
    if len(name) > MAX_NAME_CHARS:
        return []
    return difflib.get_close_matches(name, list(names), n=5, cutoff=0.4)


# -- the caller's steps ------------------------------------------------------------------------


def allow_list(host: Host, call: Call, next: Next) -> Awaitable[CallResult]:
    """A client with an allow-list reaches only its tools; others' are not even named."""
    allowed = call.allowed
    if allowed is not None and not (
        call.name in host.presenter.tools_by_name and allowed(call.name)
    ):
        return Answer(
            refusal(
                ErrorCode.UNKNOWN_TOOL,
                f"no tool named {call.name[:200]!r} is available to this client; "
                "names come from find_tools",
                closest=closest(call.name, [n for n in host.presenter.tools_by_name if allowed(n)]),
            )
        )
    return next(call)


def arguments(host: Host, call: Call, next: Next) -> Awaitable[CallResult]:
    """Arguments bounded in depth and size before anything reads them."""
    problem = check_arguments(call.arguments)
    if problem:
        return Answer(refusal(ErrorCode.INVALID_ARGUMENTS, problem, tool=call.name[:200]))
    return next(call)


def call_gate(host: Host, call: Call, next: Next) -> Awaitable[CallResult]:
    """Only a tool find_tools returned to this caller (or a pinned one) may be called."""
    if call.name in host.presenter.tools_by_name and not host.admits(call.state, call.name):
        return Answer(host.not_promoted(call.name, call.state, call.allowed))
    return next(call)


def preconditions(host: Host, call: Call, next: Next) -> Awaitable[CallResult]:
    """A tool's scopes, required earlier calls and milestones hold in the caller's state."""
    if call.name in host.presenter.tools_by_name:
        reason = host.blocked(call.name, call.server, call.state)
        if reason:
            return Answer(refusal(ErrorCode.PRECONDITION_FAILED, reason, tool=call.name))
    return next(call)


async def learn(host: Host, call: Call, next: Next) -> CallResult:
    """A completed call of a known tool feeds the caller's state and usage memory: what it
    called after which find_tools request, whether it worked, what it passed over."""
    result = await next(call)
    if host.limits.refused(result) or call.name not in host.presenter.tools_by_name:
        return result  # the client's limit, not the tool's failure; or no such tool
    if isinstance(result, types.CallToolResult):
        state = call.state
        if not result.is_error:
            state.succeeded.append(call.name)
        if state.last_query:
            ok = not result.is_error
            host.remember(state.last_query, call.server, call.tool, ok, call.client)
        promoted = call.name in state.promoted
        learn_from_call(host.router, state, (call.server, call.tool), promoted, call.client)
    return result


async def limits(host: Host, call: Call, next: Next) -> CallResult:
    """The client's ``[limits]``: concurrency, rate and USD budget (a refusal is no call)."""
    return await host.limits.call(
        lambda name, args: next(Call(name, args, call.state, call.allowed, call.client)),
        call.name,
        call.arguments,
    )


# -- the call's steps --------------------------------------------------------------------------


def quarantine(host: Host, call: Call, next: Next) -> Awaitable[CallResult]:
    """A held tool (changed since pinned, or instructions in its text) is not called."""
    held = host.quarantined.get(call.name)
    if held is not None:
        return Answer(refusal(ErrorCode.QUARANTINED, held.message, tool=call.name))
    return next(call)


def known_tool(host: Host, call: Call, next: Next) -> Awaitable[CallResult]:
    """The tool exists in the catalog and its server is configured (a server still being
    listed or indexed at start says so: the call may work in a moment)."""
    if call.name not in host.presenter.tools_by_name or call.server not in host.pool.servers:
        indexing = host.pool.notes.get("indexing", {}).get(call.server)
        if indexing is not None:
            return Answer(
                refusal(
                    ErrorCode.UNAVAILABLE,
                    f"server {call.server!r} is not routable yet ({indexing})",
                    hint="the gateway is starting: try again in a moment",
                )
            )
        return Answer(
            refusal(
                ErrorCode.UNKNOWN_TOOL,
                f"no tool named {call.name[:200]!r}; names come from find_tools",
                closest=closest(call.name, list(host.presenter.tools_by_name)),
            )
        )
    return next(call)


async def schema(host: Host, call: Call, next: Next) -> CallResult:
    """The arguments fit the tool's input schema (validated off the event loop)."""
    definition = host.presenter.tools_by_name[call.name]
    problem = await check_call(call.name, dict(definition.input_schema), call.arguments)
    if problem:
        return json_result(problem, error=True)
    return await next(call)


async def forward(host: Host, call: Call, next: Next) -> CallResult:
    """The call downstream with a deadline — or through the shell's bridge — and its
    outcome recorded before the answer goes out. An input-required answer (the server needs
    the caller's answers first) goes back as it is and is not an outcome yet."""
    server, tool = call.server, call.tool
    caller = host.caller()
    bridged = await host.bridged(server, tool, call.arguments, caller)
    if bridged is not None:
        return bridged
    try:
        result, latency = await host.pool[server].call_tool(
            tool, call.arguments, host.call_timeout_s, caller=caller
        )
    except DownstreamError as e:
        return host.failed(e, call.name, caller is not None and caller.stateless)
    if isinstance(result, types.InputRequiredResult):
        return result
    host.record(Outcome(server, tool, success=not result.is_error, latency_s=latency))
    return result


EXECUTE: tuple[Step, ...] = (quarantine, known_tool, schema, forward)
"""The steps about the call itself."""
STEPS: tuple[Step, ...] = (
    allow_list,
    arguments,
    call_gate,
    preconditions,
    learn,
    limits,
    *EXECUTE,
)
"""Every step of a tool call, in order."""


class _Link:
    """One step bound to the gateway and to the steps after it: calling it with a call runs
    the step (a :data:`Next` made once, not per call)."""

    __slots__ = ("host", "next", "step")

    def __init__(self, step: Step, host: Host, next: Next) -> None:
        self.step, self.host, self.next = step, host, next

    def __call__(self, call: Call) -> Awaitable[CallResult]:
        return self.step(self.host, call, self.next)


def _past_the_end(call: Call) -> Awaitable[CallResult]:
    raise RuntimeError(f"no step answered the call of {call.name[:200]!r}")


def bind(host: Host, steps: Sequence[Step] = STEPS) -> Next:
    """``steps`` bound to ``host``, in order: what runs a call through them (the last step
    must answer)."""
    path: Next = _past_the_end
    for step in reversed(steps):
        path = _Link(step, host, path)
    return path


async def run(host: Host, call: Call, steps: Sequence[Step] = STEPS) -> CallResult:
    """Run ``call`` through ``steps``; the last step must answer (a gateway binds its steps
    once instead: :func:`bind`)."""
    return await bind(host, steps)(call)
