"""One downstream MCP server through the official ``mcp`` SDK: its long-lived session.

The SDK requires a client to be opened and closed in the same task, so each server gets an
owner task (:meth:`Downstream.run`) that holds the session open until it is told to stop or the
connection dies; any task may call through the open session meanwhile
(:mod:`toolroute.downstream.transport` says what it connects to). A dead stdio server is
restarted with exponential backoff; shutdown closes stdin, then terminates, then kills.
Contract: errors of one server never reach another; calls raise :class:`DownstreamError` with
a code the gateway maps to an actionable message. A server's state (``status``, ``error``,
``exit_code``, ``restarts``, ``tools``, ``changed_at``) is logged once per change, not once per
retry.

Sessions open in the SDK's ``auto`` mode: a server that speaks 2026-07-28 is spoken to in it
(no session; each request declares the calling client's capabilities), any other through the
``initialize`` handshake. A server of both eras whose code turns out to ask the client by
request (a call answered "no back-channel") gets a handshake companion session
(:mod:`toolroute.downstream.companion`) for every caller but the 2026-07-28 ones (those are
bridged through it by the gateway); what the companion cannot carry goes back to the
2026-07-28 session (:mod:`toolroute.downstream.era` says why). A 2026-07-28 server asks
for sampling, elicitation or roots by answering a call with an *input-required* result: for a
2026-07-28 caller that result is returned as is (the caller answers and retries,
``requestState`` passed through untouched); for a handshake-era caller the SDK answers it
through the same callbacks a handshake-era server's requests take, and retries.

What a server sends back while a call is in flight (progress, log messages, sampling and
elicitation requests) goes to the :class:`~toolroute.downstream.callers.CallContext` of that
call, the gateway passing one per call (:mod:`toolroute.downstream.callers` says which call a
message is tied to). The other notifications (list changes, resource updates, logs outside any
call) go to ``on_notification``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import AsyncExitStack, contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.abc
import mcp.types as types
from mcp import Client
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from toolroute.catalog.curation import ServerCuration
from toolroute.config import HttpSpec, StdioSpec
from toolroute.downstream.callers import Asks, CallContext, caller_of
from toolroute.downstream.companion import Companion
from toolroute.downstream.era import announces_tool_changes, asked_by_request, modern, needs_modern
from toolroute.downstream.failure import (
    DownstreamError,
    closed,
    describe,
    first_line,
    http_refusal,
    request_error,
    too_large,
)
from toolroute.downstream.inprocess import MemorySpec
from toolroute.downstream.listing import LastListing, ListedServer, listen, merged, read_pages
from toolroute.downstream.stdio_client import ProcessInfo
from toolroute.downstream.transport import HttpClients, connect_target
from toolroute.sdk import as_caller, forward_caller_capabilities, without_envelope

if TYPE_CHECKING:
    from toolroute.downstream.oauth import DownstreamAuth

__all__ = ["Downstream", "DownstreamError"]

log = logging.getLogger(__name__)

DEFAULT_MAX_RESULT_BYTES = 4 * 1024 * 1024
"""Largest downstream reply kept (bytes of its JSON); larger ones become a ``too_large`` error."""
T = TypeVar("T")


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
        self.status = "starting"  # up, down (retried with backoff), restarting, stopped
        self.error: str | None = None
        self.sign_in: str | None = None  # why the operator must sign in, as of the status
        self.exit_code: int | None = None
        """Exit code of the last stdio process of this server that ended (None: none has)."""
        self.restarts = 0
        self.connects = 0
        """Successful connects so far: a change tells the gateway to (re)list this server."""
        self.tools: int | None = None
        """Tools listed at the last sync (None before the first)."""
        self.changed_at = time.time()
        self._logged: tuple[str, str | None] = ("starting", None)
        self._http = HttpClients()  # url servers' (their last response's status)
        self._listing = LastListing(name)
        self._asks = Asks(name)
        self._process = ProcessInfo()
        self.tools_changed = anyio.Event()
        self._unnoted = False  # a call may have changed the tools: not told to the downstreams yet
        self.on_notification: NotificationHook | None = None
        self.on_change: Callable[[], None] | None = None
        """Called when what the gateway follows changes: tools, (re)connect, status, restarts
        (the change event of downstream/servers.py)."""
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
        self._companion = Companion(name, self._companion_client)
        self._modern_tools: set[str] = set()
        """Tools that answered the companion input-required: called at 2026-07-28."""
        self._asks_by_request = False
        """A call at 2026-07-28 showed the server's code asks by request (2025 style): its
        callers go to the handshake companion from then on, 2026-07-28 ones bridged."""
        self.list_ttl_s: float | None = None
        """How long the last tools/list stays fresh by its ``ttlMs`` (None: no hint)."""
        self.cache_scope: str | None = None
        """The last tools/list's ``cacheScope`` (``private``: for this gateway's credentials)."""

    async def _target(self, stack: AsyncExitStack, companion: bool = False) -> Any:
        """What the SDK client connects to (:func:`connect_target`). A ``companion`` stdio
        session is a second process (its exit ends the session)."""
        # a server that dies while idle is restarted now, not at the next call; so is
        # one whose companion process dies (its exit code and stderr are the server's)
        info = ProcessInfo(on_eof=lambda: self._dead.set())
        if companion:
            info.on_eof = lambda: self._companion_ended(info)
        elif isinstance(self.spec, StdioSpec):
            self._process = info
        return await connect_target(
            self.name,
            self.spec,
            stack,
            info=info,
            max_line_bytes=self.max_result_bytes,
            http=self._http,
            auth=self.auth,
        )

    def _denied(self) -> str | None:
        return http_refusal(self.spec, self._http.status, self.auth)

    async def _on_message(self, msg: Any) -> None:  # the SDK's MessageHandlerFnT
        if isinstance(msg, types.ToolListChangedNotification):
            self._relist()
        # logs come through _on_log, progress through the call's own callback
        skip = (types.LoggingMessageNotification, types.ProgressNotification, Exception)
        if self.on_notification is not None and not isinstance(msg, skip):
            await self.on_notification(self.name, msg)

    def _caller(self) -> CallContext | None:
        """The caller a server's message during a call belongs to (:func:`caller_of`)."""
        return caller_of(self._calls, _calling.get())

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
        return await self._asks.ask(what, ask, self._calls, _calling.get())

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
                            tg.start_soon(listen, self.name, client, self._on_message)
                        tg.start_soon(self._listing.expiry, self._relist)
                        await self._dead.wait()
                        tg.cancel_scope.cancel()
            except Exception as e:  # owner loop: any failure of one server stays with it
                self.exit_code = self._process.returncode
                if not self._stopping:  # a server stopped on purpose has not failed
                    self._set("down", self._why(e))
            finally:
                self._client, self._tg = None, None
                self._companion.reset()
                if self._ready.is_set():  # waiters hold the old event only while it is unset
                    self._ready = anyio.Event()
                if self._dead.is_set():
                    self._dead = anyio.Event()
            if self.status == "up" and not self._stopping:
                self.exit_code = self._process.returncode
                self._set("restarting", self._process.exited() or "the session ended")
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
        """The handshake companion of the 2026-07-28 session ``c`` (``c`` when there is none)."""
        return await self._companion.of(c, self._tg, self._dead)

    async def _companion_client(self, stack: AsyncExitStack) -> Client:
        # in the task that holds the companion: its tasks must not take the call that opened
        # it for theirs
        _calling.set(None)
        return self._new_client(await self._target(stack, companion=True), "legacy")

    @property
    def _no_companion(self) -> bool:
        return self._companion.refused

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

    def _relist(self) -> None:
        """Have the gateway re-list this server: its tools may have changed."""
        self.tools_changed.set()
        self._changed()

    def _set(self, status: str, error: str | None) -> None:
        """Change state; log only when the state or its reason changed (not every retry)."""
        if status != "starting":
            self._settled.set()
        self.sign_in = self.auth.required if self.auth is not None and status != "up" else None
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
        """A call of this server was answered: a change of its tools it may have made
        unannounced (:meth:`call_tool`) is told to the downstreams (waking its watcher) now."""
        if self._unnoted:
            self._unnoted = False
            self._changed()

    def _why(self, e: BaseException) -> str:
        if self.auth is not None and (needed := self.auth.why(e)):
            return needed
        if denied := self._denied():
            return denied
        exited = self._process.exited()
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
        """Every tool (:func:`~toolroute.downstream.listing.read_pages`: a cursor that repeats
        or never ends is cut, with a warning), each page within ``page_timeout_s``
        (TimeoutError beyond), and ``on_page(tools so far)`` after each; a tool the SDK cannot
        read (a malformed ``inputSchema``) is left out with a warning."""
        c = await self.client()
        try:
            pages = await read_pages(c, page_timeout_s, on_page)
            tools = pages.tools
            if pages.lifetime is not None:
                self.list_ttl_s, self.cache_scope = pages.lifetime
            if self._companion.client is not None and isinstance(self.spec, StdioSpec):
                # its own process: a tool changed there is served there (downstream/era.py)
                other = (await read_pages(self._companion.client, page_timeout_s)).tools
                tools = merged(tools, other, self._listing.tools)
            self._listing.tools = {t.name: t for t in tools}
        except MCPError as e:
            raise self._error(None, e) from None
        except ValidationError as e:  # a malformed tools/list reply
            raise DownstreamError(self.name, None, "protocol", first_line(e)) from None
        self._listing.took(pages, len(tools), self.list_ttl_s)
        info = c.server_info
        curated, self.renames = self.curation.apply(tools, self.name)
        return ListedServer(
            name=self.name,
            title=(getattr(info, "title", None) or getattr(info, "name", None) or self.name),
            instructions=c.instructions or "",
            tools=curated,
            original=tuple(tools),
        )

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
            # is not (downstream/era.py): re-listed soon, told once the answer is out
            # (:meth:`answered`), once until the watcher takes it (not a wake-up per call)
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
        return (self.auth.required if self.auth is not None else None) or self.sign_in

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
        if e.error.code == types.CONNECTION_CLOSED:
            self._dead.set()  # the owner task reconnects with backoff
        return request_error(self.name, tool, e, self._auth_required(), self._denied)
