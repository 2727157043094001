"""Every name toolroute uses from the ``mcp`` SDK that the SDK does not export, in one place.

The SDK's public API covers most of what the gateway needs; what it does not is imported here
and nowhere else, so an SDK upgrade is checked against this one file (``pyproject`` bounds
``mcp`` to the minor versions it was tested on). Each entry says why it is needed.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import mcp_types as types
from mcp.client.auth import OAuthClientProvider
from mcp.client.session import _clamp_inbound_ttl, _later_revision_fields
from mcp.client.stdio import _stop_server_process
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.connection import allowed_log_levels
from mcp.shared._context_streams import create_context_streams
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.direct_dispatcher import DIRECT_TRANSPORT_KIND
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    LOG_LEVEL_META_KEY,
    PROTOCOL_VERSION_META_KEY,
)
from mcp_types import methods as _methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

__all__ = [
    "EarlyRefreshProvider",
    "OpenTelemetryMiddleware",
    "ReadStream",
    "WriteStream",
    "allowed_log_levels",
    "as_caller",
    "connection_of",
    "create_context_streams",
    "create_mcp_http_client",
    "forward_caller_capabilities",
    "in_process",
    "list_tools_leniently",
    "stop_server_process",
    "without_envelope",
]

# The SDK's per-request OpenTelemetry span middleware: the gateway drops it unless `otel`.
OpenTelemetryMiddleware = OpenTelemetryMiddleware
# The SDK client's HTTP client with MCP's timeouts, for a downstream with its own headers.
create_mcp_http_client = create_mcp_http_client
# The SDK's stdio shutdown (close stdin, wait, terminate, kill) for downstream processes.
stop_server_process = _stop_server_process
# The per-request stream pair the SDK's stdio server uses, for the gateway's own transport.
create_context_streams = create_context_streams
# What the SDK's server reads and writes messages through (a transport's two ends).
ReadStream = ReadStream
WriteStream = WriteStream
# The 2026-07-28 per-request log opt-in (`_meta` logLevel), for logs relayed from a server.
allowed_log_levels = allowed_log_levels

_CALLER_CAPABILITIES: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "toolroute_caller_capabilities", default=None
)


def in_process(ctx: Any) -> bool:
    """Whether a handler's request came from a client in this process (the SDK's direct
    dispatcher: no wire, the caller has the answer the moment the handler returns). The
    per-request session keeps the request's dispatch context as ``_request_outbound`` (SDK
    2.3), whose transport says its kind."""
    outbound = getattr(getattr(ctx, "session", None), "_request_outbound", None)
    return getattr(getattr(outbound, "transport", None), "kind", None) == DIRECT_TRANSPORT_KIND


def connection_of(session: Any) -> Any:
    """The client connection behind a handler's per-request ``ServerSession`` (SDK 2.3 keeps
    it as ``_connection``); the session itself when there is none."""
    return getattr(session, "_connection", None) or session


@contextmanager
def as_caller(capabilities: Mapping[str, Any] | None) -> Iterator[None]:
    """Within: 2026-07-28 requests to a downstream declare ``capabilities`` (the calling
    client's, as it declared them) instead of the gateway's own, so a server that needs
    sampling from a client that has none refuses as it would without the gateway."""
    token = _CALLER_CAPABILITIES.set(dict(capabilities) if capabilities is not None else None)
    try:
        yield
    finally:
        _CALLER_CAPABILITIES.reset(token)


def forward_caller_capabilities(client: Any) -> None:
    """Make ``client`` (an open SDK ``Client``) stamp :func:`as_caller`'s capabilities on its
    2026-07-28 requests. The SDK stamps the envelope in ``ClientSession._stamp``, fixed once
    the protocol is negotiated and with no per-request override; this wraps it."""
    session = client.session
    stamp: Callable[[dict[str, Any], Any], None] = session._stamp

    def with_caller(data: dict[str, Any], opts: Any) -> None:
        stamp(data, opts)
        caps = _CALLER_CAPABILITIES.get()
        meta = data.get("params", {}).get("_meta")
        if caps is not None and isinstance(meta, dict) and CLIENT_CAPABILITIES_META_KEY in meta:
            meta[CLIENT_CAPABILITIES_META_KEY] = caps

    session._stamp = with_caller


ENVELOPE = (
    PROTOCOL_VERSION_META_KEY,
    CLIENT_INFO_META_KEY,
    CLIENT_CAPABILITIES_META_KEY,
    LOG_LEVEL_META_KEY,
)
"""The 2026-07-28 per-request ``_meta`` keys: a handshake server refuses a request that has them."""


def without_envelope(client: Any) -> None:
    """Make a handshake session of ``client`` (an open SDK ``Client``) drop the 2026-07-28
    envelope from what it sends: a request forwarded for a 2026-07-28 caller carries the
    caller's ``_meta`` as it came. Wraps ``ClientSession._stamp`` as above."""
    session = client.session
    stamp: Callable[[dict[str, Any], Any], None] = session._stamp

    def handshake_stamp(data: dict[str, Any], opts: Any) -> None:
        stamp(data, opts)
        meta = (data.get("params") or {}).get("_meta")
        if session.protocol_version not in MODERN_PROTOCOL_VERSIONS and isinstance(meta, dict):
            for key in ENVELOPE:
                meta.pop(key, None)

    session._stamp = handshake_stamp


async def list_tools_leniently(
    client: Any, cursor: str | None
) -> tuple[types.ListToolsResult, list[tuple[str, str]]]:
    """One tools/list page with each tool checked on its own: the tools that fail the
    negotiated revision's schema are left out and returned as ``(name, why)``; the others are
    absorbed by the session as a valid page would be (their output schemas, x-mcp-header maps).

    SDK 2.3 validates a page as a whole, so one tool with a malformed ``inputSchema`` would
    hide all of its server's tools; this sends the request as ``ClientSession.send_request``
    does but validates the reply tool by tool. Raises :class:`ValidationError` when the page
    itself is malformed."""
    session = client.session
    request = types.ListToolsRequest(params=types.PaginatedRequestParams(cursor=cursor))
    data = request.model_dump(by_alias=True, mode="json", exclude_none=True)
    opts: Any = {}
    session._stamp(data, opts)
    if session._session_read_timeout_seconds is not None:
        opts["timeout"] = session._session_read_timeout_seconds
    raw: dict[str, Any] = await session._dispatcher.send_raw_request(
        "tools/list", data.get("params"), opts
    )
    _clamp_inbound_ttl(raw)
    version = session._negotiated_version or "2025-11-25"
    if not (foreign := _later_revision_fields("tools/list", version)).isdisjoint(raw):
        raw = {key: value for key, value in raw.items() if key not in foreign}
    listed = raw.get("tools")
    kept: list[Any] = []
    skipped: list[tuple[str, str]] = []
    for tool in listed if isinstance(listed, list) else []:
        try:
            _methods.validate_server_result("tools/list", version, {**raw, "tools": [tool]})
            types.Tool.model_validate(tool, by_name=False)
        except ValidationError as e:
            name = tool.get("name") if isinstance(tool, dict) else None
            if not isinstance(name, str):  # nothing to name it by: the page is malformed
                raise
            skipped.append((name, _why_tool(tool, e)))
        else:
            kept.append(tool)
    page = {**raw, "tools": kept}
    _methods.validate_server_result("tools/list", version, page)  # the page's own fields
    result = types.ListToolsResult.model_validate(page, by_name=False)
    complete = cursor is None and result.next_cursor is None
    return session._absorb_tool_listing(result, complete=complete), skipped


def _why_tool(tool: dict[str, Any], e: ValidationError) -> str:
    schema = tool.get("inputSchema")
    if not isinstance(schema, dict):
        return f"its inputSchema is a {type(schema).__name__}, not a JSON object"
    if schema.get("type") != "object":
        return (
            f"its inputSchema describes {schema.get('type')!r}, not an object "
            "(tools/call arguments are an object)"
        )
    first = e.errors()[0]
    loc = first["loc"][2:] if first["loc"][:2] == ("tools", 0) else first["loc"]
    where = ".".join(str(p) for p in loc) or "the tool"
    return f"{where}: {first['msg']}"[:300]


class EarlyRefreshProvider(OAuthClientProvider):
    """The SDK's OAuth client provider with two gaps of SDK 2.3 closed, by overriding its
    private ``_initialize``, ``_handle_token_response`` and ``_handle_refresh_response`` and
    setting fields of its ``context`` (``current_tokens``, ``token_expiry_time``,
    ``oauth_metadata``, ``protected_resource_metadata``, ``auth_server_url``):

    - a token loaded from storage gets its expiry back (``storage.expires_at``; the SDK alone
      treats a loaded token as never expiring), and every token is refreshed
      :meth:`refresh_margin` before it expires;
    - what discovery found is kept in ``storage`` (``metadata``, ``resource_metadata``) and
      restored with the tokens, so a gateway that starts with a stored token refreshes it at
      the authorization server's token endpoint (the SDK alone would post to the MCP
      server's own ``/token``).

    ``storage`` is the SDK's ``TokenStorage`` with those three attributes besides."""

    storage: Any

    def refresh_margin(self, lifetime_s: float | None) -> float:
        """How long before expiry a token of this lifetime is refreshed (s)."""
        return 0.0

    def refreshed(self) -> None:
        """Called after each successful refresh."""

    async def _initialize(self) -> None:
        await super()._initialize()
        ctx, storage = self.context, self.storage
        if ctx.current_tokens is not None and storage.expires_at is not None:
            margin = self.refresh_margin(ctx.current_tokens.expires_in)
            ctx.token_expiry_time = storage.expires_at - margin
        if ctx.oauth_metadata is None and storage.metadata is not None:
            ctx.oauth_metadata = storage.metadata
        if ctx.protected_resource_metadata is None and storage.resource_metadata is not None:
            ctx.protected_resource_metadata = storage.resource_metadata
            servers = storage.resource_metadata.authorization_servers
            ctx.auth_server_url = str(servers[0]) if servers else None

    def _keep_discovery(self) -> None:
        self.storage.metadata = self.context.oauth_metadata
        self.storage.resource_metadata = self.context.protected_resource_metadata

    def _early(self) -> None:
        tokens = self.context.current_tokens
        if tokens is not None and self.context.token_expiry_time is not None:
            self.context.token_expiry_time -= self.refresh_margin(tokens.expires_in)

    async def _handle_token_response(self, response: Any) -> None:
        self._keep_discovery()
        await super()._handle_token_response(response)
        self._early()

    async def _handle_refresh_response(self, response: Any) -> bool:
        self._keep_discovery()
        ok = await super()._handle_refresh_response(response)
        if ok:
            self._early()
            self.refreshed()
        return ok
