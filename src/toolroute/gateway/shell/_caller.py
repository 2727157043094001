"""The client request a downstream server's messages go back to while one of its tools runs:
progress against the caller's own token, log messages at the levels its session asked for,
``sampling/createMessage``, ``elicitation/create`` and ``roots/list`` sent to it and its answer
returned to the server (:class:`Caller`, the :class:`~toolroute.downstream.servers.CallContext` of a
relayed call). :meth:`~toolroute.gateway.shell._relay.Relay.caller` makes one for each request
it serves, and the request hands it on as data (``Call.caller``).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

import mcp.types as types
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from pydantic import BaseModel

from toolroute.gateway.calls.access import Request, client_identity, is_stateless
from toolroute.sdk import allowed_log_levels, connection_of


class Relay(Protocol):
    """What a caller reads from the relay serving it (the shell's Relay)."""

    ask_timeout_s: float | None

    def wants_log(self, key: int, level: types.LoggingLevel) -> bool: ...

    def ask_slot(self, key: int, what: str) -> AbstractContextManager[bool]: ...


__all__ = ["Caller", "connection_key"]

T = TypeVar("T", bound=BaseModel)


def connection_key(ctx: Request) -> int:
    """One key per client connection (what the gateway remembers per session)."""
    return id(connection_of(getattr(ctx, "session", None)))


class Caller:
    """One gateway client request that downstream messages are sent back to.

    A 2026-07-28 caller (``stateless``) has no back-channel: the gateway cannot push a
    sampling, elicitation or roots request to it. A 2026-07-28 server asks through an
    input-required result instead, which goes back to the caller as it is; a handshake-era
    server's pushed request is refused with an error naming the reason.
    """

    def __init__(self, relay: Relay, ctx: Request, params: Any = None) -> None:
        self.relay = relay
        self.ctx = ctx
        self.stateless = is_stateless(ctx)
        self.identity = identity = client_identity(ctx)
        """Who sent the request (:func:`~toolroute.gateway.calls.access.client_identity`)."""
        # one token is one client, whatever its sessions; without one, a name or header
        # anyone can claim never joins two connections
        self.owner: object = (
            f"client:{identity}"
            if self.stateless or identity.startswith("token:")
            else connection_key(ctx)
        )
        self.input_responses = getattr(params, "input_responses", None)
        self.request_state = getattr(params, "request_state", None)
        client = getattr(getattr(ctx, "session", None), "client_params", None)
        caps = getattr(client, "capabilities", None)
        self.capabilities: dict[str, Any] | None = (
            caps.model_dump(by_alias=True, exclude_none=True) if caps is not None else None
        )

    async def roots(self) -> types.ListRootsResult | types.ErrorData:
        wanted = types.ClientCapabilities(roots=types.RootsCapability())
        if not self.ctx.session.check_client_capability(wanted):
            return _unsupported("roots")
        return await self._ask(types.ListRootsRequest(), types.ListRootsResult)

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        # against the caller's own progress token; nothing when the caller asked for none
        await self.ctx.session.report_progress(progress, total, message)

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        if self.stateless:  # 2026-07-28: only what this request's _meta logLevel asked for
            meta = self.ctx.meta if isinstance(self.ctx.meta, Mapping) else None
            if params.level not in allowed_log_levels(self.ctx.protocol_version, meta):
                return
        if self.relay.wants_log(connection_key(self.ctx), params.level):
            note = types.LoggingMessageNotification(params=params)
            await self.ctx.session.send_notification(note, related_request_id=self.ctx.request_id)

    async def sample(
        self, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
        wanted = types.ClientCapabilities(sampling=types.SamplingCapability())
        if not self.ctx.session.check_client_capability(wanted):
            return _unsupported("sampling")
        result_type: type[types.CreateMessageResult | types.CreateMessageResultWithTools] = (
            types.CreateMessageResultWithTools if params.tools else types.CreateMessageResult
        )
        return await self._ask(types.CreateMessageRequest(params=params), result_type)

    async def elicit(
        self, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        wanted = types.ClientCapabilities(elicitation=types.ElicitationCapability())
        if not self.ctx.session.check_client_capability(wanted):
            return _unsupported("elicitation")
        return await self._ask(types.ElicitRequest(params=params), types.ElicitResult)

    async def _ask(self, request: Any, result_type: type[T]) -> T | types.ErrorData:
        with self.relay.ask_slot(connection_key(self.ctx), request.method) as admitted:
            if not admitted:
                return types.ErrorData(
                    code=types.INVALID_REQUEST,
                    message="too many requests already wait for this client's answers; "
                    "this one is refused",
                )
            return await self._send(request, result_type)

    async def _send(self, request: Any, result_type: type[T]) -> T | types.ErrorData:
        if self.stateless:
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message="the client connected to toolroute speaks MCP 2026-07-28, which has no "
                "server-to-client requests; this server asked during a call (a 2025 server)",
            )
        try:
            answer: T = await self.ctx.session.send_request(
                request,
                result_type,
                # a client that never answers must not hold the request (and the server's
                # wait) until the session ends: REQUEST_TIMEOUT goes back to the server
                request_read_timeout_seconds=self.relay.ask_timeout_s,
                metadata=ServerMessageMetadata(related_request_id=self.ctx.request_id),
            )
        except MCPError as e:  # the client's own refusal goes back to the server as is
            return e.error
        return answer


def _unsupported(what: str) -> types.ErrorData:
    return types.ErrorData(
        code=types.INVALID_REQUEST,
        message=f"the client connected to toolroute does not support {what}",
    )
