"""A 2025 server's requests during a call, asked of a 2026-07-28 client as input-required rounds.

A server of the handshake era asks for sampling, elicitation or roots by sending a request to
the client *while* a tool call is in flight. A 2026-07-28 client cannot receive one: it has no
session and no back-channel; it answers an *input-required* result instead and retries the call
with the answers. The gateway bridges the two:

1. The call to the 2025 server runs in a task of its own (:meth:`Continuations.start`), so it
   can outlive the client's first request.
2. When the server asks, the request is handed back as an input-required result whose
   ``requestState`` names the call: ``toolroute:<id>.<HMAC of id and client>`` (minted here,
   checked here: a forged, altered or other client's state is refused).
3. The client's retry (:meth:`Continuations.resume`) delivers its answers to the waiting server
   request; the server goes on, and the next event (another request, or the result) answers
   the retry.

A call nobody resumes ends at the gateway's call deadline (the server's request is answered
with an error) and is forgotten. :class:`EraBridge` is the call path's way into this (its
``forward`` step asks it first: :class:`toolroute.gateway.calls.pipeline.Bridge`).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import mcp.types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.exceptions import MCPError

from toolroute.downstream.servers import CallContext, DownstreamError, Downstreams
from toolroute.gateway.shell._caller import Caller

__all__ = ["STATE_PREFIX", "Bridge", "Continuations", "EraBridge", "Finished", "InvalidState"]

log = logging.getLogger(__name__)

STATE_PREFIX = "toolroute:"
"""Every requestState the gateway mints starts with this (others belong to the server)."""
MAX_PENDING = 1000
"""Bridged calls kept at once; a new one beyond this is refused."""
MAX_ASKS_PER_CLIENT = 16
"""A server's requests waiting for one client's answers across its bridged calls; one more is
refused at once with an error, and logged (as ``MAX_ASKS_PER_SESSION`` for a 2025 session)."""


class InvalidState(Exception):
    """A retry's requestState is not one this gateway minted for this client, or has expired."""


@dataclass(slots=True)
class Finished:
    """What ended a bridged call: its result, or the exception the call raised."""

    result: Any = None
    error: BaseException | None = None


@dataclass(slots=True)
class _Asked:
    key: str
    request: types.ElicitRequest | types.CreateMessageRequest | types.ListRootsRequest
    answered: anyio.Event = field(default_factory=anyio.Event)
    answer: Any = None


class Bridge:
    """The :class:`~toolroute.downstream.servers.CallContext` of a bridged call: each request the
    server makes becomes an event for the client's current round and waits for its answer."""

    stateless = False  # the downstream is a 2025 server: the SDK's own callbacks drive it
    input_responses: types.InputResponses | None = None
    request_state: str | None = None

    def __init__(
        self,
        capabilities: dict[str, Any] | None,
        send: MemoryObjectSendStream[Any],
        wait_s: float,
        asking: _Asking | None = None,
        owner: object = None,
    ) -> None:
        """``asking``: the count of the client's requests waiting (shared by its calls);
        ``owner``: the client the call is for."""
        self.capabilities = capabilities
        self.owner = owner if owner is not None else self
        self._send = send
        self._wait_s = wait_s
        self._asked = 0
        self._asking = asking if asking is not None else _Asking("a client")

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """Progress has no channel between rounds at 2026-07-28: dropped."""

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        """Likewise for log messages."""

    def _can(self, capability: str) -> bool:
        return self.capabilities is None or capability in self.capabilities

    async def _ask(self, request: Any) -> Any:
        if not self._asking.take(request.method):
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message="too many requests already wait for this client's answers; "
                "this one is refused",
            )
        try:
            return await self._ask_now(request)
        finally:
            self._asking.give()

    async def _ask_now(self, request: Any) -> Any:
        self._asked += 1
        asked = _Asked(f"toolroute-{self._asked}", request)
        await self._send.send(asked)
        with anyio.move_on_after(self._wait_s):
            await asked.answered.wait()
        if not asked.answered.is_set():
            return types.ErrorData(
                code=types.REQUEST_TIMEOUT, message="the client did not answer in time"
            )
        return asked.answer

    async def sample(self, params: types.CreateMessageRequestParams) -> Any:
        if not self._can("sampling"):
            return _unsupported("sampling")
        return await self._ask(types.CreateMessageRequest(params=params))

    async def elicit(self, params: types.ElicitRequestParams) -> Any:
        if not self._can("elicitation"):
            return _unsupported("elicitation")
        return await self._ask(types.ElicitRequest(params=params))

    async def roots(self) -> Any:
        if not self._can("roots"):
            return _unsupported("roots")
        return await self._ask(types.ListRootsRequest())


@dataclass(slots=True)
class _Asking:
    """One client's server requests waiting for its answers, at most
    :data:`MAX_ASKS_PER_CLIENT`."""

    client: str
    count: int = 0
    refused: bool = False

    def take(self, what: str) -> bool:
        if self.count >= MAX_ASKS_PER_CLIENT:
            if not self.refused:
                log.warning(
                    "%d requests of servers already wait for the answers of %s; a %s request "
                    "is refused (and any more until one is answered)",
                    self.count,
                    self.client,
                    what,
                )
            self.refused = True
            return False
        self.count += 1
        return True

    def give(self) -> None:
        self.count -= 1
        if self.count < MAX_ASKS_PER_CLIENT:
            self.refused = False


def _unsupported(what: str) -> types.ErrorData:
    return types.ErrorData(
        code=types.INVALID_REQUEST,
        message=f"the client connected to toolroute does not support {what}",
    )


@dataclass(slots=True)
class _Call:
    client: str
    events: MemoryObjectReceiveStream[Any]
    waiting: dict[str, _Asked] = field(default_factory=dict)


class Continuations:
    """Bridged calls in flight, each in a task of :meth:`run`'s task group."""

    def __init__(self, wait_s: float = 30.0) -> None:
        self.wait_s = wait_s
        self._secret = secrets.token_bytes(32)
        self._calls: dict[str, _Call] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self._asking: dict[str, _Asking] = {}  # by client, while it has bridged calls

    @property
    def running(self) -> bool:
        return self._tg is not None

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[Continuations]:
        """Within: bridged calls can be started (``toolroute serve`` holds it for its life)."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                yield self
            finally:
                self._tg = None
                tg.cancel_scope.cancel()

    def _state(self, call_id: str, client: str) -> str:
        mac = hmac.new(self._secret, f"{call_id}\0{client}".encode(), hashlib.sha256)
        return f"{STATE_PREFIX}{call_id}.{mac.hexdigest()}"

    async def start(
        self,
        client: str,
        capabilities: dict[str, Any] | None,
        run: Callable[[Bridge], Awaitable[Any]],
    ) -> types.InputRequiredResult | Finished:
        """Run ``run(bridge)`` as a bridged call of ``client``; the first round's answer."""
        if self._tg is None:
            raise RuntimeError("Continuations.serving() is not entered")
        if len(self._calls) >= MAX_PENDING:
            return Finished(error=RuntimeError("too many calls are waiting for client answers"))
        send, receive = anyio.create_memory_object_stream[Any](16)
        call_id = secrets.token_urlsafe(12)
        self._calls[call_id] = _Call(client, receive)
        asking = self._asking.setdefault(client, _Asking(f"client {client[:40]!r}"))
        bridge = Bridge(capabilities, send, self.wait_s, asking, owner=f"client:{client}")

        async def task() -> None:
            async with send:
                try:
                    await send.send(Finished(result=await run(bridge)))
                except Exception as e:  # delivered to the round that waits for it
                    await send.send(Finished(error=e))

        self._tg.start_soon(task)
        return await self._next(call_id)

    async def resume(
        self, client: str, state: str, responses: types.InputResponses | None
    ) -> types.InputRequiredResult | Finished:
        """A retry of a bridged call: its answers go to the server, the next event returns."""
        call_id = state.removeprefix(STATE_PREFIX).partition(".")[0]
        call = self._calls.get(call_id)
        if call is None or not hmac.compare_digest(state, self._state(call_id, call.client)):
            raise InvalidState("requestState is not a call of this gateway (or it has ended)")
        if call.client != client:
            raise InvalidState("requestState belongs to another client")
        for key, asked in list(call.waiting.items()):
            if responses and key in responses:
                asked.answer = responses[key]
                asked.answered.set()
                del call.waiting[key]
        if call.waiting:  # asked again for what is still missing
            return self._round(call_id, call)
        return await self._next(call_id)

    async def _next(self, call_id: str) -> types.InputRequiredResult | Finished:
        call = self._calls[call_id]
        try:
            with anyio.fail_after(self.wait_s + 5):
                event = await call.events.receive()
        except (TimeoutError, anyio.EndOfStream):
            self._end(call_id)
            return Finished(error=TimeoutError("the server did not answer in time"))
        if isinstance(event, Finished):
            self._end(call_id)
            call.events.close()
            return event
        call.waiting[event.key] = event
        return self._round(call_id, call)

    def _end(self, call_id: str) -> None:
        """Forget a call, and its client's count of waiting requests with its last call."""
        call = self._calls.pop(call_id, None)
        if call is not None and not any(c.client == call.client for c in self._calls.values()):
            self._asking.pop(call.client, None)

    def _round(self, call_id: str, call: _Call) -> types.InputRequiredResult:
        return types.InputRequiredResult(
            input_requests={k: a.request for k, a in call.waiting.items()},
            request_state=self._state(call_id, call.client),
        )


class EraBridge:
    """The call path's bridge (:class:`toolroute.gateway.calls.pipeline.Bridge`): a 2026-07-28
    client's call of a 2025 server, or the retry of one, run through ``continuations``."""

    def __init__(self, continuations: Continuations, downstreams: Downstreams) -> None:
        self.continuations = continuations
        self.downstreams = downstreams

    async def call(
        self,
        server: str,
        tool: str,
        arguments: dict[str, Any],
        caller: CallContext | None,
        timeout_s: float,
    ) -> tuple[Any, float] | None:
        """The answer (an input-required round, or the result) and its latency, as the downstreams'
        ``call_tool`` gives them; None for a call that is not bridged."""
        if not isinstance(caller, Caller) or not caller.stateless:
            return None
        resuming = (caller.request_state or "").startswith(STATE_PREFIX)
        if not (resuming or self._bridges(server)):
            return None
        client = caller.identity
        try:
            if resuming:
                out = await self.continuations.resume(
                    client, caller.request_state or "", caller.input_responses
                )
            else:
                out = await self.continuations.start(
                    client,
                    caller.capabilities,
                    lambda bridge: self.downstreams[server].call_tool(
                        tool, arguments, timeout_s, caller=bridge
                    ),
                )
        except InvalidState as e:
            raise MCPError(code=types.INVALID_PARAMS, message=str(e)) from None
        if isinstance(out, types.InputRequiredResult):
            return out, 0.0  # a round, not an outcome: never recorded
        if isinstance(out.error, DownstreamError):
            raise out.error
        if out.error is not None:
            raise DownstreamError(server, tool, "timeout", str(out.error))
        result, latency = out.result
        return result, latency

    def _bridges(self, server: str) -> bool:
        """Whether a 2026-07-28 caller's call to ``server`` runs bridged: the server speaks
        2025-11-25, so it asks for input by request, and the bridge can run."""
        return self.continuations.running and not self.downstreams.servers[server].stateless
