"""Whose a call to a downstream server is: where what the server sends during it goes.

What a server sends back while a call is in flight (progress, log messages, sampling and
elicitation requests) goes to the :class:`CallContext` of that call: the gateway passes one per
call. Where the request can be tied to its call it goes to that call's caller: a 2026-07-28
server's input-required result answers one call, and over streamable HTTP a request comes on
the stream of the call it belongs to (both are handled in the calling task, which knows its
caller). Otherwise (a handshake-era server over stdio, whose requests name no call) it goes to
the newest call in flight of the only owner with calls in flight, and is refused when several
owners have calls in flight, since it could reach the wrong client. The other notifications
(list changes, resource updates, logs outside any call) go to ``on_notification``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeVar

import mcp.types as types

__all__ = ["MAX_ASKS", "Asks", "CallContext", "caller_of", "no_caller"]

log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_ASKS = 64
"""Requests (sampling, elicitation, roots) one server may have waiting for a client's answer at
once; one more is refused at once with an error, and logged: a server that keeps asking holds
a bounded amount of the gateway (each waits at most the call timeout)."""


class CallContext(Protocol):
    """Where a server's messages about one in-flight call go: the client that made the call."""

    stateless: bool
    """The caller speaks 2026-07-28: input-required results go back to it as they are."""
    capabilities: dict[str, Any] | None
    """What the caller declared it can do (sampling, elicitation, roots), as on the wire."""
    input_responses: types.InputResponses | None
    request_state: str | None
    """The answers and the opaque state of a retried 2026-07-28 request (else None)."""
    owner: object
    """Who made the call (one client connection; one client for a token's sessions or a
    2026-07-28 caller): a server's request or log during calls of several owners that names
    no call cannot be told apart, so it goes to none of them."""

    async def progress(self, progress: float, total: float | None, message: str | None) -> None: ...

    async def log(self, params: types.LoggingMessageNotificationParams) -> None: ...

    async def sample(
        self, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData: ...

    async def elicit(
        self, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData: ...

    async def roots(self) -> types.ListRootsResult | types.ErrorData: ...


def caller_of(calls: Sequence[CallContext], tied: CallContext | None) -> CallContext | None:
    """The caller a server's message during a call belongs to, of the ``calls`` in flight
    (oldest first): ``tied``, the caller of the call the message is handled in, while that call
    is in flight; else the one in flight, or the latest of several of the same owner. A stdio
    server's request names no call, so with calls of two owners in flight it could be either's:
    then None (no other client ever sees what one client's call produced)."""
    if not calls:
        return None
    if tied is not None and any(c is tied for c in calls):
        return tied
    owners = {c.owner for c in calls}
    return calls[-1] if len(owners) == 1 else None


class Asks:
    """One server's requests to its callers (sampling, elicitation, roots): at most
    :data:`MAX_ASKS` wait for an answer at once."""

    def __init__(self, server: str) -> None:
        self.server = server
        self._asking = 0  # this server's requests waiting for a client's answer
        self._refused = False  # one was refused since they were last below MAX_ASKS

    async def ask(
        self,
        what: str,
        ask: Callable[[CallContext], Awaitable[T]],
        calls: Sequence[CallContext],
        tied: CallContext | None,
    ) -> T | types.ErrorData:
        """The server's request to the caller it belongs to (:func:`caller_of`), unless
        :data:`MAX_ASKS` already wait for an answer (then refused at once, logged once until
        they drop below it)."""
        if not calls:
            return no_caller(what)
        if self._asking >= MAX_ASKS:
            if not self._refused:
                log.warning(
                    "server %s: %d of its requests already wait for a client's answer; its "
                    "%s request is refused (and any more until one is answered)",
                    self.server,
                    self._asking,
                    what,
                )
            self._refused = True
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message=f"too many requests of this server ({MAX_ASKS}) already wait for the "
                "client's answer; this one is refused",
            )
        caller = caller_of(calls, tied)
        if caller is None:
            log.warning(
                "server %s asked a client (%s) while calls of several clients were in flight: "
                "refused, since a request names no call and could reach the wrong client",
                self.server,
                what,
            )
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message=f"calls of more than one client are in flight to this server; toolroute "
                f"cannot tell whose call this {what} request belongs to, so it is refused",
            )
        self._asking += 1
        try:
            return await ask(caller)
        finally:
            self._asking -= 1
            if self._asking < MAX_ASKS:
                self._refused = False


def no_caller(what: str) -> types.ErrorData:
    """The answer to a server's request made while none of its calls is in flight."""
    return types.ErrorData(
        code=types.INVALID_REQUEST,
        message=f"{what} is only relayed during a call made through toolroute",
    )
