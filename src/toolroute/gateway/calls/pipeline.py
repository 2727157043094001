"""The call path: one ordered list of steps that every tool call goes through.

``call_tool``, bound tools, pass-through tools and code mode's scripts all run :func:`steps`
in order, bound once to their gateway (:class:`toolroute.gateway.calls.path.CallPath`). Each
step has one job: it answers the call itself (a refusal, an error) or hands it to the next
step, and may look at the answer on its way back::

    allow-list → arguments → call gate → preconditions → limits → learn
        → quarantine → known tool → schema → forward (bridge or downstream)
    ← learn (on the way back: the answer of every call the limits let through)

The first six are about the caller (who may call what, and what it learns from; ``limits``
only where the gateway has ``[limits]``); the last four (:data:`EXECUTE`) about the call
itself, and are also what runs for a caller that was already checked. The MCP shell's
request steps wrap these one level up (warm-up, metrics, the recording after the reply),
because they serve the meta-tools too.

A call is data (:class:`Call`: the tool, its arguments, the caller's state and allow-list,
whose usage memory it feeds, where the server's messages go, whom the limits count): no step
reads a context variable. A step reads the rest from the gateway through :class:`Host`, data
read at call time, and each step's rule sits beside it here, so this module depends on no
gateway class. What a call leaves behind (its outcome, what it teaches the usage memory) a
step only notes, in :attr:`Call.records`: it is recorded after the answer has gone out
(:mod:`toolroute.gateway.calls.record`).

A gateway binds the steps to itself once (:func:`bind`): a call then allocates nothing per
step. A step that only looks at the call on its way down (a check) is a plain function that
returns the next step's awaitable, or its refusal (:class:`Answer`), without awaiting it, so
a call in flight holds a frame only for the steps that wait for the answer (limits, learn,
schema, forward).
"""

from __future__ import annotations

import difflib
import json
import logging
from collections.abc import Awaitable, Callable, Collection, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import mcp.types as types
from mcp.shared.exceptions import MCPError

from toolroute.catalog.name import split_name
from toolroute.downstream.servers import CallContext, DownstreamError, Downstreams
from toolroute.errors import ErrorCode, error_payload
from toolroute.gateway.calls.access import ANONYMOUS, CallGate
from toolroute.gateway.calls.arguments import MAX_NAME_CHARS, check_arguments, check_call
from toolroute.gateway.calls.preconditions import blocked_by, preconditions_for
from toolroute.gateway.calls.record import Learnt, Record
from toolroute.route.preconditions import Preconditions, SessionState
from toolroute.stats import Outcome

if TYPE_CHECKING:
    from toolroute.catalog.models import Tool
    from toolroute.gateway.calls.quarantine import Held

__all__ = [
    "EXECUTE",
    "Answer",
    "STEPS",
    "Bridge",
    "Call",
    "CallResult",
    "Host",
    "Next",
    "Step",
    "bind",
    "closest",
    "failed",
    "json_result",
    "not_promoted",
    "refusal",
    "run",
    "steps",
]

log = logging.getLogger(__name__)

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
    caller: CallContext | None = None
    """Where the server's progress, logs and requests during the call go (the shell's client
    request; None: nowhere, e.g. the Python API)."""
    identity: str = ANONYMOUS
    """Whom ``[limits]`` count the call against
    (:func:`~toolroute.gateway.calls.access.client_identity`)."""
    records: list[Record] = field(default_factory=list, repr=False, compare=False)
    """What the call leaves behind, noted by its steps in order (its outcome, what it teaches
    the usage memory): whoever runs the call records them once its answer is out
    (:class:`~toolroute.gateway.calls.record.Recorder`)."""
    server: str = field(init=False, repr=False, compare=False)
    """The server part of :attr:`name`."""
    tool: str = field(init=False, repr=False, compare=False)
    """The tool part of :attr:`name`."""

    def __post_init__(self) -> None:
        server, tool = split_name(self.name)  # once: several steps read them
        object.__setattr__(self, "server", server)
        object.__setattr__(self, "tool", tool)


class _Pinned(Protocol):
    @property
    def pinned(self) -> Collection[str]: ...


class _Tools(Protocol):
    @property
    def tools_by_name(self) -> Mapping[str, Tool]: ...
    @property
    def config(self) -> _Pinned: ...


class _Timeouts(Protocol):
    @property
    def call_timeout_s(self) -> float: ...


class Bridge(Protocol):
    """Another way downstream for some calls (the shell's, between protocol eras: a
    2026-07-28 client calling a 2025 server)."""

    async def call(
        self,
        server: str,
        tool: str,
        arguments: dict[str, Any],
        caller: CallContext | None,
        timeout_s: float,
    ) -> tuple[CallResult, float] | None:
        """The answer and its latency as the downstreams' ``call_tool`` gives them (raising
        :class:`DownstreamError` the same way); None: not a call this bridge takes."""
        ...


class Host(Protocol):
    """What the steps read from the gateway (:class:`~toolroute.gateway.shared.Shared`):
    data, read at call time (a reload swaps some of it)."""

    @property
    def presenter(self) -> _Tools: ...
    @property
    def downstreams(self) -> Downstreams: ...
    @property
    def gate(self) -> CallGate: ...
    @property
    def tool_preconditions(self) -> Mapping[str, Preconditions]: ...
    @property
    def server_preconditions(self) -> Mapping[str, Preconditions]: ...
    @property
    def quarantined(self) -> Mapping[str, Held]: ...
    @property
    def settings(self) -> _Timeouts: ...
    @property
    def bridge(self) -> Bridge | None: ...


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
    presented = host.presenter
    if call.name in presented.tools_by_name and not host.gate.admits(
        call.state, call.name, presented.config.pinned
    ):
        return Answer(not_promoted(host.gate, call, presented.config.pinned))
    return next(call)


_GATE_HINT = {
    "client": "the call gate admits the tools find_tools returned to the same client. A "
    "client that opens a new connection per call keeps them when it names itself "
    '(clientInfo.name, an X-Toolroute-Client header or a token); call_gate = "off" in '
    "toolroute.toml turns the gate off",
    "connection": "the call gate admits only the tools find_tools returned on this "
    'connection (call_gate = "connection"); call_gate = "client" keeps them for every '
    'connection of the same client, call_gate = "off" turns the gate off',
    "off": "",
}
"""The call gate's refusal hint, by scope."""


def not_promoted(gate: CallGate, call: Call, pinned: Collection[str]) -> types.CallToolResult:
    """The call gate's refusal: what the client did, what to do next, and the setting."""
    name, state, allowed = call.name, call.state, call.allowed
    where = gate.sessions.describe(state)
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
    return refusal(
        ErrorCode.TOOL_NOT_AVAILABLE,
        told,
        available=sorted(n for n in state.promoted | set(pinned) if allowed is None or allowed(n)),
        call_gate=gate.scope,
        hint=_GATE_HINT[gate.scope],
    )


def preconditions(host: Host, call: Call, next: Next) -> Awaitable[CallResult]:
    """A tool's scopes, required earlier calls and milestones hold in the caller's state."""
    if call.name in host.presenter.tools_by_name:
        needs = preconditions_for(
            call.name, call.server, host.tool_preconditions, host.server_preconditions
        )
        reason = blocked_by(needs, call.state)
        if reason:
            return Answer(refusal(ErrorCode.PRECONDITION_FAILED, reason, tool=call.name))
    return next(call)


async def learn(host: Host, call: Call, next: Next) -> CallResult:
    """A completed call of a known tool feeds the caller's state at once (its successful
    calls, which preconditions read), and notes what it teaches the usage memory: what it
    called after which find_tools answer, whether it worked, whether an earlier answer showed
    it (:class:`~toolroute.gateway.calls.record.Learnt`, recorded after the reply)."""
    result = await next(call)  # after the limits: a refusal of theirs never comes here
    if call.name not in host.presenter.tools_by_name:
        return result  # no such tool
    if isinstance(result, types.CallToolResult):
        state = call.state
        ok = not result.is_error
        if ok:
            state.succeeded.append(call.name)
        shown_earlier = call.name in state.promoted
        call.records.append(
            Learnt(
                state,
                call.server,
                call.tool,
                ok,
                state.last_query,
                state.last_shown,
                shown_earlier,
                call.client,
            )
        )
    return result


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
    if call.name not in host.presenter.tools_by_name or call.server not in host.downstreams.servers:
        indexing = host.downstreams.notes.get("indexing", {}).get(call.server)
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
    problem = await check_call(call.name, definition.schema_json, call.arguments)
    if problem:
        return json_result(problem, error=True)
    return await next(call)


async def forward(host: Host, call: Call, next: Next) -> CallResult:
    """The call downstream with a deadline — or through the host's bridge, when it takes
    the call — and its outcome noted. An input-required answer (the server needs the caller's
    answers first) goes back as it is and is not an outcome yet."""
    server, tool, caller = call.server, call.tool, call.caller
    timeout_s = host.settings.call_timeout_s
    try:
        answer = None
        if host.bridge is not None:
            answer = await host.bridge.call(server, tool, call.arguments, caller, timeout_s)
        if answer is None:
            answer = await host.downstreams.servers[server].call_tool(
                tool, call.arguments, timeout_s, caller=caller
            )
    except DownstreamError as e:
        return failed(host, call, e)
    result, latency = answer
    if isinstance(result, types.InputRequiredResult):
        return result
    call.records.append(Outcome(server, tool, success=not result.is_error, latency_s=latency))
    return result


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


def failed(host: Host, call: Call, e: DownstreamError) -> types.CallToolResult:
    """A failed downstream call: its outcome noted, answered with what to do next."""
    server, tool = e.server, e.tool or call.tool
    if e.error is not None and call.caller is not None and call.caller.stateless:
        # a 2026-07-28 client reads the server's own error (a missing capability, a
        # tampered requestState) as the server sent it
        call.records.append(Outcome(server, tool, success=False, latency_s=0.0))
        raise MCPError.from_error_data(e.error) from None
    call.records.append(
        Outcome(
            server,
            tool,
            success=False,
            latency_s=host.settings.call_timeout_s if e.code == "timeout" else 0.0,
            server_failed=e.code in ("crashed", "timeout", "unavailable"),
        )
    )
    return refusal(ErrorCode(e.code), e.detail, tool=call.name, hint=_HINTS[e.code])


EXECUTE: tuple[Step, ...] = (quarantine, known_tool, schema, forward)
"""The steps about the call itself."""


def steps(limits: Step | None = None) -> tuple[Step, ...]:
    """Every step of a tool call, in order: ``limits`` is the ``[limits]`` step of a gateway
    that has any (:meth:`toolroute.gateway.calls._limits.Limits.step`)."""
    return (
        allow_list,
        arguments,
        call_gate,
        preconditions,
        *((limits,) if limits is not None else ()),
        learn,
        *EXECUTE,
    )


STEPS = steps()
"""Every step of a tool call of a gateway without ``[limits]``, in order."""


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


def bind(host: Host, path: Sequence[Step] = STEPS) -> Next:
    """The steps of ``path`` bound to ``host``, in order: what runs a call through them (the
    last step must answer)."""
    bound: Next = _past_the_end
    for step in reversed(path):
        bound = _Link(step, host, bound)
    return bound


async def run(host: Host, call: Call, path: Sequence[Step] = STEPS) -> CallResult:
    """Run ``call`` through the steps of ``path``; the last step must answer (a gateway
    binds its steps once instead: :func:`bind`)."""
    return await bind(host, path)(call)
