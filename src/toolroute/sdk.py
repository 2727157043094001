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

from mcp.client.stdio import _stop_server_process
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.connection import allowed_log_levels
from mcp.shared._context_streams import create_context_streams
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import CLIENT_CAPABILITIES_META_KEY

__all__ = [
    "OpenTelemetryMiddleware",
    "allowed_log_levels",
    "as_caller",
    "connection_of",
    "create_context_streams",
    "create_mcp_http_client",
    "forward_caller_capabilities",
    "stop_server_process",
]

# The SDK's per-request OpenTelemetry span middleware: the gateway drops it unless `otel`.
OpenTelemetryMiddleware = OpenTelemetryMiddleware
# The SDK client's HTTP client with MCP's timeouts, for a downstream with its own headers.
create_mcp_http_client = create_mcp_http_client
# The SDK's stdio shutdown (close stdin, wait, terminate, kill) for downstream processes.
stop_server_process = _stop_server_process
# The per-request stream pair the SDK's stdio server uses, for the gateway's own transport.
create_context_streams = create_context_streams
# The 2026-07-28 per-request log opt-in (`_meta` logLevel), for logs relayed from a server.
allowed_log_levels = allowed_log_levels

_CALLER_CAPABILITIES: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "toolroute_caller_capabilities", default=None
)


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
