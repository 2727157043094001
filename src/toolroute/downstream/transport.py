"""What the SDK client of one downstream server connects to, by the server's entry: an SDK server
object in this process, a stdio process (:mod:`toolroute.downstream.stdio_client`: replies capped
while they are read, stderr labelled with the server's name, exit code kept), the older HTTP+SSE
transport, or streamable HTTP."""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

from mcp import StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from toolroute.config import HttpSpec, StdioSpec
from toolroute.downstream.inprocess import MemorySpec
from toolroute.downstream.stdio_client import ProcessInfo, bounded_stdio_client
from toolroute.sdk import create_mcp_http_client

if TYPE_CHECKING:
    from toolroute.downstream.oauth import DownstreamAuth

__all__ = ["HttpClients", "connect_target"]


class HttpClients:
    """The SDK's HTTP clients for one server, noting each response's status: the SDK reports a
    401 as "Server returned an error response", and :attr:`status` tells what it meant
    (:func:`~toolroute.downstream.failure.http_refusal`)."""

    def __init__(self) -> None:
        self.status: int | None = None
        """Of the last HTTP response."""

    def __call__(self, headers: Any = None, timeout: Any = None, auth: Any = None) -> Any:
        http = create_mcp_http_client(headers, timeout, auth)

        async def note(response: Any) -> None:
            self.status = response.status_code

        http.event_hooks["response"].append(note)
        return http


async def connect_target(
    name: str,
    spec: StdioSpec | HttpSpec | MemorySpec,
    stack: AsyncExitStack,
    *,
    info: ProcessInfo,
    max_line_bytes: int,
    http: HttpClients,
    auth: DownstreamAuth | None,
) -> Any:
    """What the SDK client of server ``name`` connects to; an HTTP client made here is closed
    with ``stack``, a stdio process reports to ``info``."""
    if isinstance(spec, MemorySpec):  # an SDK server object in this process
        return spec.server
    if isinstance(spec, StdioSpec):
        params = StdioServerParameters(
            command=spec.command,
            args=list(spec.args),
            env=dict(spec.env) or None,
            cwd=spec.cwd,
        )
        return bounded_stdio_client(name, params, max_line_bytes=max_line_bytes, info=info)
    if spec.type == "sse":  # the older HTTP+SSE transport (VS Code/Claude "sse")
        return sse_client(
            spec.url,
            headers=spec.headers or None,
            httpx_client_factory=http,
            auth=await auth.connect_auth() if auth else None,
        )
    # the SDK's MCP timeouts (30 s, 300 s read), not httpx's 5 s default
    oauth = await auth.connect_auth() if auth else None
    client = await stack.enter_async_context(http(spec.headers or None, auth=oauth))
    return streamable_http_client(spec.url, http_client=client)
