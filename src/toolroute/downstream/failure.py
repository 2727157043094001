"""How a downstream failure is told: :class:`DownstreamError` and its codes, and the one-line
reasons the operator reads (an HTTP 401/403 and what to fix, an exit code and the last stderr
line, a connect error) instead of the SDK's generic messages."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

import mcp.types as types
from mcp.shared.exceptions import MCPError

from toolroute.config import HttpSpec, StdioSpec
from toolroute.downstream.stdio_client import RESULT_TOO_LARGE
from toolroute.errors import ToolrouteError

if TYPE_CHECKING:
    from toolroute.downstream.inprocess import MemorySpec
    from toolroute.downstream.oauth import DownstreamAuth

__all__ = [
    "DownstreamError",
    "ErrorCode",
    "closed",
    "http_refusal",
    "describe",
    "first_line",
    "request_error",
    "too_large",
]

ErrorCode = Literal["unavailable", "timeout", "crashed", "protocol", "too_large", "auth_required"]


class DownstreamError(ToolrouteError):
    """A downstream call failed: ``code`` is unavailable, timeout, crashed, protocol,
    too_large or auth_required (the operator must sign in: ``toolroute auth``)."""

    def __init__(
        self,
        server: str,
        tool: str | None,
        code: ErrorCode,
        message: str,
        error: types.ErrorData | None = None,
    ) -> None:
        super().__init__(f"{server}{'/' + tool if tool else ''}: {code}: {message}")
        self.server, self.tool, self.code, self.detail = server, tool, code, message
        self.error = error
        """The server's own JSON-RPC error, when it answered with one."""


def http_refusal(
    spec: StdioSpec | HttpSpec | MemorySpec, status: int | None, auth: DownstreamAuth | None
) -> str | None:
    """Why the last HTTP response refused us, when it was a 401 or a 403."""
    if not isinstance(spec, HttpSpec) or status not in (401, 403):
        return None
    has = {k.lower() for k in spec.headers}
    if status == 403:
        return "forbidden (HTTP 403): the server refused access" + (
            ' with the credentials in its entry\'s "headers"' if has else ""
        )
    if auth is not None:  # no token of its own: OAuth (downstream/oauth.py)
        return auth.unauthorized()
    if "authorization" in has:
        return (
            "unauthorized (HTTP 401): the server refused the credentials in its entry's "
            '"headers" — check the "Authorization" value (an expired or wrong token?)'
        )
    return (
        "unauthorized (HTTP 401): the server needs credentials — set "
        '"headers": {"Authorization": ...} in its entry'
    )


def request_error(
    server: str,
    tool: str | None,
    e: MCPError,
    needed: str | None,
    denied: Callable[[], str | None],
) -> DownstreamError:
    """What the JSON-RPC error ``e`` of a request to ``server`` (a call of ``tool``) tells the
    gateway: a closed connection is a lapsed sign-in where ``needed`` says what the operator
    must do (downstream/oauth.py), else a crash; an internal error is the refusal ``denied()``
    names, if the last HTTP response was one."""
    if e.error.code == types.CONNECTION_CLOSED and needed:
        return DownstreamError(server, tool, "auth_required", needed)
    if e.error.code == types.CONNECTION_CLOSED:
        return DownstreamError(
            server, tool, "crashed", "the server closed the connection; it is being restarted"
        )
    if e.error.code == types.REQUEST_TIMEOUT:
        return DownstreamError(server, tool, "timeout", e.error.message)
    if e.error.code == RESULT_TOO_LARGE:
        return DownstreamError(server, tool, "too_large", e.error.message)
    if e.error.code == types.INTERNAL_ERROR and (why := denied()):
        return DownstreamError(server, tool, "protocol", why)
    return DownstreamError(server, tool, "protocol", e.error.message, e.error)


def closed(e: BaseException) -> bool:
    """Whether ``e`` is (or holds) the SDK's "connection closed": the process ended on its
    own, so its exit code says more (a timeout keeps its own message)."""
    if isinstance(e, BaseExceptionGroup):
        return any(closed(x) for x in e.exceptions)
    return isinstance(e, MCPError) and e.error.code == types.CONNECTION_CLOSED


def too_large(size: int, limit: int) -> str:
    return f"the reply is {size} bytes, over {limit} (max_result_bytes)"


def first_line(e: BaseException) -> str:
    return (str(e).splitlines() or [type(e).__name__])[0][:300]


def describe(e: BaseException) -> str:
    if isinstance(e, BaseExceptionGroup):
        return "; ".join(describe(x) for x in e.exceptions)
    if isinstance(e, TimeoutError):
        return "timed out while connecting"
    if isinstance(e, FileNotFoundError):
        return f"command not found: {e.filename or e}"
    return f"{type(e).__name__}: {e}"
