"""One downstream MCP server through the official ``mcp`` SDK: its long-lived session.

The SDK requires a client to be opened and closed in the same task, so each server gets an
owner task (:meth:`Downstream.run`) that holds the session open until it is told to stop or the
connection dies; any task may call through the open session meanwhile. A dead stdio server is
restarted with exponential backoff; shutdown closes stdin, then terminates, then kills.
stdio servers run through :mod:`toolroute.downstream.stdio_client` (replies capped at
``max_result_bytes``, stderr labelled with the server's name, exit code kept). Contract: errors
of one server never reach another; calls raise :class:`DownstreamError` with a code the gateway
maps to an actionable message. A server's state (``status``, ``error``, ``exit_code``,
``restarts``, ``tools``, ``changed_at``) is logged once per change, not once per retry.

Sessions open in the SDK's ``auto`` mode: a server that speaks 2026-07-28 is spoken to in it
(no session; each request declares the calling client's capabilities), any other through the
``initialize`` handshake. A server of both eras whose code turns out to ask the client by
request (a call answered "no back-channel") gets a handshake *companion* session, opened then,
for every caller but the 2026-07-28 ones (those are bridged through it by the gateway); what
the companion cannot carry (a handler's input-required result) goes back to the 2026-07-28
session (:mod:`toolroute.downstream.era` says why each era needs which). A 2026-07-28 server asks
for sampling, elicitation or roots by answering a call with an *input-required* result: for a
2026-07-28 caller that result is returned as is (the caller answers and retries,
``requestState`` passed through untouched); for a handshake-era caller the SDK answers it
through the same callbacks a handshake-era server's requests take, and retries.

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
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import AsyncExitStack, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import anyio
import anyio.abc
import mcp.types as types
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import event_to_notification
from pydantic import ValidationError

from toolroute.catalog.curation import ServerCuration
from toolroute.config import HttpSpec, StdioSpec
from toolroute.downstream.era import (
    announces_tool_changes,
    asked_by_request,
    handshake_refused,
    list_expiry_s,
    modern,
    needs_modern,
)
from toolroute.downstream.failure import (
    DownstreamError,
    closed,
    describe,
    first_line,
    http_refusal,
    too_large,
)
from toolroute.downstream.inprocess import MemorySpec
from toolroute.downstream.stdio_client import RESULT_TOO_LARGE, ProcessInfo, bounded_stdio_client
from toolroute.sdk import (
    as_caller,
    create_mcp_http_client,
    forward_caller_capabilities,
    list_tools_leniently,
    without_envelope,
)

if TYPE_CHECKING:
    from toolroute.downstream.oauth import DownstreamAuth

__all__ = ["CallContext", "Downstream", "DownstreamError", "ListedServer"]

log = logging.getLogger(__name__)

DEFAULT_MAX_RESULT_BYTES = 4 * 1024 * 1024
"""Largest downstream reply kept (bytes of its JSON); larger ones become a ``too_large`` error."""
T = TypeVar("T")

MAX_ASKS = 64
"""Requests (sampling, elicitation, roots) one server may have waiting for a client's answer at
once; one more is refused at once with an error, and logged: a server that keeps asking holds
a bounded amount of the gateway (each waits at most the call timeout)."""
MAX_PAGES = 1000
"""tools/list pages read at most from one server: a cursor that never ends is cut there, with a
warning, and the tools of the pages read are kept (a cursor seen before ends it the same way)."""


@dataclass(frozen=True, slots=True)
class ListedServer:
    """What a server said about itself and its tools at sync time."""

    name: str
    title: str
    instructions: str
    tools: tuple[types.Tool, ...]
    original: tuple[types.Tool, ...] | None = None
    """The tools as the server listed them, before curation (None: the same as ``tools``);
    what the rug-pull check pins."""

    @property
    def listed(self) -> tuple[types.Tool, ...]:
        return self.tools if self.original is None else self.original


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


_calling: ContextVar[CallContext | None] = ContextVar("toolroute_downstream_call", default=None)
"""The caller of the call the current task makes to a server: what a server's request handled
in that task (an input-required result's questions, a request on the call's own HTTP stream)
belongs to."""


NotificationHook = Callable[[str, types.ServerNotification], Awaitable[None]]
"""Called with (server name, notification) for what no in-flight call claims."""


class Downstream:
    """One downstream server and its owner task."""

    def __init__(
        self,
        name: str,
        spec: StdioSpec | HttpSpec | MemorySpec,
        *,
        connect_timeout_s: float = 20.0,
        call_timeout_s: float = 30.0,
        max_backoff_s: float = 30.0,
        max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
        auth: DownstreamAuth | None = None,
    ) -> None:
        self.name = name
        self.auth = auth
        """OAuth of a url server (downstream/oauth.py); None: stdio, or headers only."""
        self.spec = spec
        self.connect_timeout_s = connect_timeout_s
        self.call_timeout_s = call_timeout_s
        self.max_backoff_s = max_backoff_s
        self.max_result_bytes = max_result_bytes
        self.status = "starting"
        """starting, up, down (the last connect failed; retried with backoff), restarting
        (the session died; reconnecting) or stopped."""
        self.error: str | None = None
        self.exit_code: int | None = None
        """Exit code of the last stdio process of this server that ended (None: none has)."""
        self.restarts = 0
        self.connects = 0
        """Successful connects so far: a change tells the gateway to (re)list this server."""
        self.tools: int | None = None
        """Tools listed at the last sync (None before the first)."""
        self.changed_at = time.time()
        self._logged: tuple[str, str | None] = ("starting", None)
        self._http_status: int | None = None  # of the last HTTP response (url servers)
        self._skipped: dict[str, str] = {}
        self._cut: str | None = None  # why the last listing was cut short (warned once)
        self._asking = 0  # this server's requests waiting for a client's answer
        self._asks_refused = False  # one was refused since they were last below MAX_ASKS
        """Tools left out of the last listing (their schema is malformed), and why."""
        self._process = ProcessInfo()
        self.tools_changed = anyio.Event()
        self._unnoted = False  # a call may have changed the tools: not told to the pool yet
        self.on_notification: NotificationHook | None = None
        self.on_change: Callable[[], None] | None = None
        """Called when what the gateway follows changes: the tools (list_changed), a
        (re)connect, the status or restarts (the pool's change event, downstream/servers.py)."""
        self._calls: list[CallContext] = []  # in flight, oldest first
        self._client: Client | None = None
        self._ready = anyio.Event()
        self._dead = anyio.Event()
        self._stop = anyio.Event()
        self._stopping = False
        # live reconfiguration (gateway/ops/reload.py): curation, and ending this server's calls
        self.curation = ServerCuration()
        self.renames: dict[str, str] = {}
        """Exposed name → the server's own name, of the tools curation renamed."""
        self._settled = anyio.Event()  # the first connect succeeded or failed
        self._scopes: set[anyio.CancelScope] = set()  # requests in flight
        self._connecting: anyio.CancelScope | None = None  # the owner's connect or session
        self._idle = anyio.Event()
        self._idle.set()
        self._ended: str | None = None  # why the calls in flight were ended
        # the protocol eras (downstream/era.py)
        self._tg: anyio.abc.TaskGroup | None = None  # the open session's tasks
        self._companion: Client | None = None
        """The handshake session beside a 2026-07-28 one, while open (opened on need)."""
        self._companion_lock = anyio.Lock()
        self._no_companion = False
        """The server refused the handshake (2026-07-28 only), or the companion failed."""
        self._modern_tools: set[str] = set()
        """Tools that answered the companion input-required: called at 2026-07-28."""
        self._last_listed: dict[str, types.Tool] = {}  # the tools as last listed
        self._asks_by_request = False
        """A call at 2026-07-28 showed the server's code asks by request (2025 style): its
        callers go to the handshake companion from then on, 2026-07-28 ones bridged."""
        self.list_ttl_s: float | None = None
        """How long the last tools/list stays fresh by its ``ttlMs`` (None: no hint)."""
        self.cache_scope: str | None = None
        """The last tools/list's ``cacheScope`` (``private``: for this gateway's credentials)."""
        self._stale_at: float | None = None
        self._listed = anyio.Event()  # a list with a lifetime came: (re)arm its expiry

    async def _target(self, stack: AsyncExitStack, companion: bool = False) -> Any:
        """What the SDK client connects to; an HTTP client made here is closed with ``stack``.
        A ``companion`` stdio session is a second process (its exit ends the session)."""
        if isinstance(self.spec, MemorySpec):  # an SDK server object in this process
            return self.spec.server
        if isinstance(self.spec, StdioSpec):
            # a server that dies while idle is restarted now, not at the next call; so is
            # one whose companion process dies (its exit code and stderr are the server's)
            info = ProcessInfo(on_eof=lambda: self._dead.set())
            if companion:
                info.on_eof = lambda: self._companion_ended(info)
            else:
                self._process = info
            params = StdioServerParameters(
                command=self.spec.command,
                args=list(self.spec.args),
                env=dict(self.spec.env) or None,
                cwd=self.spec.cwd,
            )
            return bounded_stdio_client(
                self.name, params, max_line_bytes=self.max_result_bytes, info=info
            )
        if self.spec.type == "sse":  # the older HTTP+SSE transport (VS Code/Claude "sse")
            return sse_client(
                self.spec.url,
                headers=self.spec.headers or None,
                httpx_client_factory=self._http_client,
                auth=await self.auth.connect_auth() if self.auth else None,
            )

        # the SDK's MCP timeouts (30 s, 300 s read), not httpx's 5 s default
        oauth = await self.auth.connect_auth() if self.auth else None
        http = await stack.enter_async_context(
            self._http_client(self.spec.headers or None, auth=oauth)
        )
        return streamable_http_client(self.spec.url, http_client=http)

    def _http_client(self, headers: Any = None, timeout: Any = None, auth: Any = None) -> Any:
        """The SDK's HTTP client, noting each response's status: the SDK reports a 401 as
        "Server returned an error response", and :meth:`_denied` says what it meant."""
        http = create_mcp_http_client(headers, timeout, auth)

        async def note(response: Any) -> None:
            self._http_status = response.status_code

        http.event_hooks["response"].append(note)
        return http

    def _denied(self) -> str | None:
        return http_refusal(self.spec, self._http_status, self.auth)

    async def _on_message(self, msg: Any) -> None:  # the SDK's MessageHandlerFnT
        if isinstance(msg, types.ToolListChangedNotification):
            self.tools_changed.set()
            self._changed()
        # logs come through _on_log, progress through the call's own callback
        skip = (types.LoggingMessageNotification, types.ProgressNotification, Exception)
        if self.on_notification is not None and not isinstance(msg, skip):
            await self.on_notification(self.name, msg)

    def _caller(self) -> CallContext | None:
        """The caller a server's message during a call belongs to: the call it is handled
        in (:data:`_calling`) while that call is in flight; else the one in flight, or the
        latest of several of the same owner. A stdio server's request names no call, so with
        calls of two owners in flight it could be either's: then None (no other client ever
        sees what one client's call produced)."""
        if not self._calls:
            return None
        tied = _calling.get()
        if tied is not None and any(c is tied for c in self._calls):
            return tied
        owners = {c.owner for c in self._calls}
        return self._calls[-1] if len(owners) == 1 else None

    async def _on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        if self._calls:
            caller = self._caller()
            if caller is not None:  # else another client's call may have caused it: dropped
                await caller.log(params)
        elif self.on_notification is not None:
            await self.on_notification(self.name, types.LoggingMessageNotification(params=params))

    async def _on_sampling(
        self, context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
        return await self._ask("sampling", lambda caller: caller.sample(params))

    async def _on_elicitation(
        self, context: Any, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        return await self._ask("elicitation", lambda caller: caller.elicit(params))

    async def _on_roots(self, context: Any) -> types.ListRootsResult | types.ErrorData:
        return await self._ask("roots", lambda caller: caller.roots())

    async def _ask(
        self, what: str, ask: Callable[[CallContext], Awaitable[T]]
    ) -> T | types.ErrorData:
        """This server's request to the caller, unless :data:`MAX_ASKS` already wait for an
        answer (then refused at once, logged once until they drop below it)."""
        if not self._calls:
            return _no_caller(what)
        if self._asking >= MAX_ASKS:
            if not self._asks_refused:
                log.warning(
                    "server %s: %d of its requests already wait for a client's answer; its "
                    "%s request is refused (and any more until one is answered)",
                    self.name,
                    self._asking,
                    what,
                )
            self._asks_refused = True
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message=f"too many requests of this server ({MAX_ASKS}) already wait for the "
                "client's answer; this one is refused",
            )
        caller = self._caller()
        if caller is None:
            log.warning(
                "server %s asked a client (%s) while calls of several clients were in flight: "
                "refused, since a request names no call and could reach the wrong client",
                self.name,
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
                self._asks_refused = False

    async def _listen(self, client: Client) -> None:
        """A 2026-07-28 server's list changes come on a ``subscriptions/listen`` stream (there
        is no session to push them on): each is handled as the notification it replaces."""
        try:
            async with client.listen(
                tools_list_changed=True, prompts_list_changed=True, resources_list_changed=True
            ) as changes:
                async for event in changes:
                    await self._on_message(event_to_notification(event, {}))
        except Exception as e:  # a server without listen: re-listed on the interval only
            log.info("server %s: no change notifications (%s)", self.name, first_line(e))

    async def run(self) -> None:
        """Owner loop: connect, hold the session until it dies or stop(), reconnect with backoff."""
        backoff = 0.5
        while not self._stopping:
            # 2026-07-28 where the server speaks it (an in-process one: its era)
            mode = self.spec.mode if isinstance(self.spec, MemorySpec) else "auto"
            try:
                # initialize is bounded by read_timeout_seconds like any request; stop()
                # ends a connect under way at once (a server that never answers initialize
                # would otherwise hold the gateway's exit for the whole connect timeout)
                with anyio.CancelScope() as self._connecting:
                    async with (
                        AsyncExitStack() as stack,
                        self._new_client(await self._target(stack), mode) as client,
                        anyio.create_task_group() as tg,
                    ):
                        forward_caller_capabilities(client)
                        without_envelope(client)
                        self._client, self._tg = client, tg
                        self.connects += 1
                        self._set("up", None)
                        self._changed()  # a reconnect re-lists even when status stayed "up"
                        self._ready.set()
                        backoff = 0.5
                        if modern(client):
                            tg.start_soon(self._listen, client)
                        tg.start_soon(self._expire_lists)
                        await self._dead.wait()
                        tg.cancel_scope.cancel()
            except Exception as e:  # owner loop: any failure of one server stays with it
                self.exit_code = self._process.returncode
                if not self._stopping:  # a server stopped on purpose has not failed
                    self._set("down", self._why(e))
            finally:
                self._client, self._tg, self._companion = None, None, None
                self._no_companion = False  # the next session asks again
                if self._ready.is_set():  # waiters hold the old event only while it is unset
                    self._ready = anyio.Event()
                if self._dead.is_set():
                    self._dead = anyio.Event()
            if self.status == "up" and not self._stopping:
                self.exit_code = self._process.returncode
                self._set("restarting", self._exited() or "the session ended")
            if self._stopping:
                break
            self.restarts += 1
            self._changed()
            with anyio.move_on_after(backoff):  # stop() ends the wait at once
                if self.auth is not None and self.auth.required:  # so does a new sign-in
                    await self.auth.until_signed_in(self._stop)
                else:
                    await self._stop.wait()
            backoff = min(backoff * 2, self.max_backoff_s)
        self._set("stopped", None)

    def _new_client(self, target: Any, mode: str) -> Client:
        """An SDK client of this server whose server-to-client traffic comes here."""
        return Client(
            target,
            mode=mode,
            read_timeout_seconds=self.connect_timeout_s,
            message_handler=self._on_message,  # type: ignore[arg-type]
            logging_callback=self._on_log,
            sampling_callback=self._on_sampling,
            elicitation_callback=self._on_elicitation,
            list_roots_callback=self._on_roots,
            cache=None,  # a re-list must see the server's tools now, not a cached page
        )

    async def _session_for(self, c: Client, caller: CallContext | None) -> Client:
        """The session a request of ``caller`` goes on: the main one, but for a server of both
        eras whose code asks by request, any caller but a 2026-07-28 one goes to the
        handshake companion (downstream/era.py)."""
        if not self._asks_by_request or (caller is not None and caller.stateless):
            return c
        return await self._companion_of(c)

    async def _companion_of(self, c: Client) -> Client:
        """The handshake companion of the 2026-07-28 session ``c``, opened on first need
        (``c`` itself when the server refuses the handshake, or ``c`` is not 2026-07-28)."""
        if not modern(c) or self._no_companion:
            return c
        if self._companion is None:
            async with self._companion_lock:
                tg = self._tg
                if self._companion is None and not self._no_companion and tg is not None:
                    try:
                        await tg.start(self._hold_companion)
                    except Exception as e:  # 2026-07-28 only, or unreachable a second time
                        self._no_companion = True
                        if not handshake_refused(e):
                            log.warning("server %s: no handshake session (%s)", self.name,
                                        first_line(e))  # fmt: skip
        return self._companion or c

    def _companion_ended(self, info: ProcessInfo) -> None:
        """The companion's process ended while the server's session was open: the server
        restarts, reporting that process's exit (after a restart, both are new)."""
        if not self._dead.is_set():
            self._process = info
            self._dead.set()

    async def _asks_by_request_on(self, c: Client, answer: Any) -> bool:
        """Whether ``answer`` (a 2026-07-28 session's result or error message) says the
        server's code asked the client by request and the server also speaks the handshake:
        its callers go to the handshake companion from now on (2026-07-28 ones bridged)."""
        if not modern(c) or not asked_by_request(answer):
            return False
        if not self._asks_by_request and await self._companion_of(c) is not c:
            self._asks_by_request = True
            log.info("server %s asks the client by request: its callers go to a handshake "
                     "session (2026-07-28 ones bridged)", self.name)  # fmt: skip
        return self._asks_by_request

    async def _hold_companion(self, task_status: anyio.abc.TaskStatus[None]) -> None:
        # started from a call's task: its tasks must not take that call for theirs
        _calling.set(None)
        dead, started = self._dead, False
        try:
            async with (
                AsyncExitStack() as stack,
                self._new_client(await self._target(stack, companion=True), "legacy") as client,
            ):
                without_envelope(client)
                self._companion = client
                started = True
                task_status.started()
                await dead.wait()
        except Exception as e:  # after the start: its failure stays with it
            if not started:
                raise
            log.warning("server %s: the handshake session ended: %s", self.name, first_line(e))
        finally:
            self._companion = None

    async def _expire_lists(self) -> None:
        """Re-list when the last tools/list's ``ttlMs`` runs out (downstream/era.py)."""
        while True:
            await self._listed.wait()
            self._listed = anyio.Event()
            stale_at = self._stale_at
            if stale_at is None:
                continue
            with anyio.move_on_after(max(stale_at - anyio.current_time(), 0.0)):
                await self._listed.wait()  # a newer list: its own lifetime
            if self._stale_at == stale_at and not self._listed.is_set():
                self._stale_at = None
                self.tools_changed.set()
                self._changed()

    def _set(self, status: str, error: str | None) -> None:
        """Change state; log only when the state or its reason changed (not every retry)."""
        if status != "starting":
            self._settled.set()
        if (status, error) != (self.status, self.error):
            self.changed_at = time.time()
            self.status, self.error = status, error
            self._changed()
        if (status, error) == self._logged:
            return
        self._logged = (status, error)
        if status == "down" or (status == "restarting" and error):
            log.warning("server %s is %s: %s", self.name, status, error)
        elif status == "up" and self.restarts:
            log.warning("server %s is up again (restart %d)", self.name, self.restarts)

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    def answered(self) -> None:
        """The gateway has answered a call of this server: a change of its tools that a call
        may have made unannounced (:meth:`call_tool`) is told to the pool now, after the
        answer, not on the call's way back (it wakes the change watcher)."""
        if self._unnoted:
            self._unnoted = False
            self._changed()

    def _exited(self) -> str | None:
        """``exited with code N: <its last stderr line>`` once the process has ended."""
        rc = self._process.returncode
        if rc is None:
            return None
        tail = self._process.stderr_tail
        return f"exited with code {rc}" + (f": {tail[-1]}" if tail else "")

    def _why(self, e: BaseException) -> str:
        if self.auth is not None and (needed := self.auth.why(e)):
            return needed
        if denied := self._denied():
            return denied
        exited = self._exited()
        killed = (self._process.returncode or 0) < 0  # by our shutdown after a timeout
        if exited and not killed and closed(e):
            return exited  # "Connection closed" says less than the exit code and stderr
        return describe(e)

    def stop(self) -> None:
        self._stopping = True
        self._stop.set()
        self._dead.set()
        if self._client is None and self._connecting is not None:  # no session to drain
            self._connecting.cancel()

    async def client(self, wait_s: float | None = None) -> Client:
        """The open session, waiting up to ``wait_s`` for a (re)connect (not at all when the
        last connect failed: the error is returned at once, the owner keeps retrying)."""
        if self._client is None and self.status == "down":
            if needed := self._auth_required():
                raise DownstreamError(self.name, None, "auth_required", self.error or needed)
            raise DownstreamError(self.name, None, "unavailable", self.error or "not connected")
        if self._client is None:
            with anyio.move_on_after(self.connect_timeout_s if wait_s is None else wait_s):
                await self._ready.wait()
        if self._client is None:
            raise DownstreamError(
                self.name, None, "unavailable", self.error or "the server is not connected"
            )
        return self._client

    @property
    def stateless(self) -> bool:
        """2026-07-28 callers are served at 2026-07-28 (False while no session is open, and
        for a server whose code asks by request: they are bridged, downstream/era.py)."""
        c = self._client
        return c is not None and modern(c) and not self._asks_by_request

    @property
    def capabilities(self) -> types.ServerCapabilities | None:
        """What the server declared, while a session is open."""
        return self._client.server_capabilities if self._client is not None else None

    async def list_tools(
        self,
        page_timeout_s: float | None = None,
        on_page: Callable[[int], None] | None = None,
    ) -> ListedServer:
        """Every tool, following ``next_cursor`` (a repeated cursor or :data:`MAX_PAGES` ends
        it, with a warning), each page within ``page_timeout_s`` (TimeoutError beyond), and
        ``on_page(tools so far)`` after each; a tool the SDK cannot read (a malformed
        ``inputSchema``) is left out with a warning."""
        c = await self.client()
        try:
            tools, skipped, cut = await self._pages(c, page_timeout_s, on_page)
            if self._companion is not None and isinstance(self.spec, StdioSpec):
                # its own process: a tool changed there is served there (downstream/era.py)
                other, _, _ = await self._pages(self._companion, page_timeout_s)
                tools = _merged(tools, other, self._last_listed)
            self._last_listed = {t.name: t for t in tools}
        except MCPError as e:
            raise self._error(None, e) from None
        except ValidationError as e:  # a malformed tools/list reply
            raise DownstreamError(self.name, None, "protocol", first_line(e)) from None
        if cut is not None and self._cut != cut:  # once, not on every re-list
            log.warning("server %s: %s; its first %d tools are kept", self.name, cut, len(tools))
        self._cut = cut
        for tool, why in skipped.items():
            if self._skipped.get(tool) != why:  # once per tool and reason, not every re-list
                log.warning("server %s: tool %r skipped: %s", self.name, tool, why)
        self._skipped = skipped
        if self.list_ttl_s is not None:
            self._stale_at = anyio.current_time() + self.list_ttl_s
            self._listed.set()
        info = c.server_info
        curated, self.renames = self.curation.apply(tools, self.name)
        return ListedServer(
            name=self.name,
            title=(getattr(info, "title", None) or getattr(info, "name", None) or self.name),
            instructions=c.instructions or "",
            tools=curated,
            original=tuple(tools),
        )

    async def _pages(
        self,
        c: Client,
        page_timeout_s: float | None = None,
        on_page: Callable[[int], None] | None = None,
    ) -> tuple[list[types.Tool], dict[str, str], str | None]:
        """Every tool one session lists, the ones left out (malformed) with why, and why the
        listing was cut short (a cursor that repeats or never ends), if it was."""
        tools: list[types.Tool] = []
        names: set[str] = set()
        cursor: str | None = None
        seen: set[str] = set()
        skipped: dict[str, str] = {}
        cut: str | None = None
        for page_number in range(1, MAX_PAGES + 1):
            with anyio.fail_after(page_timeout_s):
                try:
                    page = await c.list_tools(cursor=cursor)
                except ValidationError:  # maybe one bad tool: check them one by one
                    page, bad = await list_tools_leniently(c, cursor)
                    skipped.update(bad)
            for t in page.tools:  # a repeated page, or a name listed twice, counts once
                if t.name not in names:
                    names.add(t.name)
                    tools.append(t)
            if on_page is not None:
                on_page(len(tools))
            cursor = page.next_cursor
            if modern(c):  # its lifetime (downstream/era.py)
                self.list_ttl_s = list_expiry_s(page)
                self.cache_scope = getattr(page, "cache_scope", None)
            if cursor is None:
                break
            if cursor in seen:
                cut = f"its tools/list cursor repeated after {page_number} pages"
                break
            seen.add(cursor)
        else:
            cut = f"its tools/list cursor did not end in {MAX_PAGES} pages"
        return tools, skipped, cut

    async def call_tool(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        timeout_s: float | None = None,
        caller: CallContext | None = None,
    ) -> tuple[types.CallToolResult | types.InputRequiredResult, float]:
        """Forward one call; returns the result unchanged and its latency (s). Progress, logs,
        sampling, elicitation and roots of the call go to ``caller``; an input-required
        result goes back to a 2026-07-28 caller as it is."""
        c = await self.client()
        start = time.perf_counter()
        if caller is not None:
            self._calls.append(caller)
        timeout = timeout_s or self.call_timeout_s
        progress = caller.progress if caller is not None else None
        result: types.CallToolResult | types.InputRequiredResult | None = None
        own = self.renames.get(tool, tool)  # a curated name goes down as the server's own

        async def send(c: Client) -> types.CallToolResult | types.InputRequiredResult:
            if caller is not None and caller.stateless and modern(c):
                return await c.session.call_tool(
                    own,
                    dict(arguments),
                    read_timeout_seconds=timeout,
                    progress_callback=progress,
                    input_responses=caller.input_responses,
                    request_state=caller.request_state,
                    allow_input_required=True,
                )
            return await c.call_tool(
                own, dict(arguments), read_timeout_seconds=timeout, progress_callback=progress
            )

        primary = c
        # a 2026-07-28 caller cannot be asked by request: its call is not retried below
        retry = caller is None or not caller.stateless
        calling = _calling.set(caller)
        try:
            with as_caller(caller.capabilities if caller is not None else None), self._tracked():
                if own not in self._modern_tools:
                    c = await self._session_for(c, caller)
                try:
                    result = await send(c)
                except MCPError as e:  # era.py: input-required on the companion; or asked
                    if c is not primary and needs_modern(c, e):  # by request at 2026-07-28
                        self._modern_tools.add(own)
                        c = primary
                    elif not (await self._asks_by_request_on(c, e.error.message) and retry):
                        raise
                    else:  # the tool never got its answer: once more, where it can
                        c = await self._session_for(c, caller)
                    result = await send(c)
                else:
                    if c is primary and await self._asks_by_request_on(c, result) and retry:
                        c = await self._session_for(c, caller)
                        result = await send(c)
        except MCPError as e:
            raise self._error(tool, e) from None
        except (RuntimeError, ValidationError) as e:  # malformed result / output-schema check
            raise DownstreamError(self.name, tool, "protocol", first_line(e)) from None
        finally:
            _calling.reset(calling)
            if caller is not None:
                self._calls.remove(caller)
        if result is None:  # ended by end_calls(): the server left the configuration
            raise DownstreamError(self.name, tool, "unavailable", self._ended or "ended")
        if not self.tools_changed.is_set() and (
            not announces_tool_changes(c) or (modern(c) and not self._no_companion)
        ):
            # it may have changed a tool unannounced, or announced it on a session this one
            # is not (downstream/era.py): re-listed soon, told to the pool once the call's
            # answer is out (:meth:`answered`). Once noted, the re-list is pending until the
            # watcher takes it: another note per call would only wake it to recompute the
            # status for nothing
            self.tools_changed.set()
            self._unnoted = True
        if isinstance(self.spec, HttpSpec):  # stdio replies are capped while they are read
            size = len(result.model_dump_json(by_alias=True, exclude_unset=True))
            if size > self.max_result_bytes:
                raise DownstreamError(
                    self.name, tool, "too_large", too_large(size, self.max_result_bytes)
                )
        return result, time.perf_counter() - start

    async def request(
        self, send: Callable[[Client], Awaitable[T]], caller: CallContext | None = None
    ) -> T:
        """Any other request through the open session (resources, prompts, completion, ...).
        The server's own JSON-RPC error is raised unchanged (MCPError); a closed connection
        also schedules the reconnect."""
        c = await self.client()
        if caller is not None:
            self._calls.append(caller)
        calling = _calling.set(caller)
        try:
            with as_caller(caller.capabilities if caller is not None else None):
                session = await self._session_for(c, caller)
                try:
                    return await send(session)
                except MCPError as e:  # era.py: input-required on the companion, or a
                    if session is not c and needs_modern(session, e):  # handshake-only method
                        return await send(c)
                    handshake_only = e.error.code == types.METHOD_NOT_FOUND and modern(c)
                    if not handshake_only or (other := await self._companion_of(c)) is c:
                        raise
                    return await send(other)
        except MCPError as e:
            if e.error.code == types.CONNECTION_CLOSED:
                self._dead.set()
            raise
        finally:
            _calling.reset(calling)
            if caller is not None:
                self._calls.remove(caller)

    def _auth_required(self) -> str | None:
        return self.auth.required if self.auth is not None else None

    @contextmanager
    def _tracked(self) -> Iterator[None]:
        """One request in flight, which :meth:`end_calls` can end."""
        with anyio.CancelScope() as scope:
            self._scopes.add(scope)
            self._idle = anyio.Event() if self._idle.is_set() else self._idle
            try:
                yield
            finally:
                self._scopes.discard(scope)
                if not self._scopes:
                    self._idle.set()

    def end_calls(self, why: str) -> None:
        """End every request in flight: each raises ``unavailable`` saying ``why``."""
        self._ended = why
        for scope in list(self._scopes):
            scope.cancel()

    async def settled(self, timeout_s: float) -> None:
        """Until the first connect succeeded or failed, at most ``timeout_s``."""
        with anyio.move_on_after(timeout_s):
            await self._settled.wait()

    async def retire(self, grace_s: float, why: str) -> None:
        """Stop after the calls in flight finished (at most ``grace_s``; the rest end with
        ``why``): a restarted server's old session drains while the new one serves."""
        with anyio.move_on_after(grace_s):
            await self._idle.wait()
        self.end_calls(why)
        self.stop()

    def _error(self, tool: str | None, e: MCPError) -> DownstreamError:
        if e.error.code == types.CONNECTION_CLOSED and (needed := self._auth_required()):
            self._dead.set()  # the sign-in lapsed mid-session (downstream/oauth.py)
            return DownstreamError(self.name, tool, "auth_required", needed)
        if e.error.code == types.CONNECTION_CLOSED:
            self._dead.set()  # the owner task reconnects with backoff
            return DownstreamError(
                self.name,
                tool,
                "crashed",
                "the server closed the connection; it is being restarted",
            )
        if e.error.code == types.REQUEST_TIMEOUT:
            return DownstreamError(self.name, tool, "timeout", e.error.message)
        if e.error.code == RESULT_TOO_LARGE:
            return DownstreamError(self.name, tool, "too_large", e.error.message)
        if e.error.code == types.INTERNAL_ERROR and (denied := self._denied()):
            return DownstreamError(self.name, tool, "protocol", denied)
        return DownstreamError(self.name, tool, "protocol", e.error.message, e.error)


def _merged(
    tools: list[types.Tool], other: list[types.Tool], before: Mapping[str, types.Tool]
) -> list[types.Tool]:
    """One listing of two processes of a server: a tool as ``other`` lists it where that
    differs from ``before`` (the last listing) and ``tools`` does not; the tools only
    ``other`` lists added. So a change either process made counts."""
    theirs = {t.name: t for t in other}
    out = [theirs[t.name] if t.name in theirs and t == before.get(t.name) else t for t in tools]
    names = {t.name for t in tools}
    return out + [t for t in other if t.name not in names]


def _no_caller(what: str) -> types.ErrorData:
    return types.ErrorData(
        code=types.INVALID_REQUEST,
        message=f"{what} is only relayed during a call made through toolroute",
    )
