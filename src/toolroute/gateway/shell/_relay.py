"""The rest of the protocol through the gateway: resources, prompts, completion, logging, and the
messages a downstream server sends while one of its tools runs.

- ``resources/list``, ``resources/templates/list``, ``prompts/list`` merge every server's lists.
  A URI or prompt name keeps its own form when only one server has it; where two servers share
  one it is namespaced like a tool, ``<server>__<name>``. The namespaced form is accepted for
  every name.
- ``resources/read``, ``resources/subscribe``/``unsubscribe``, ``prompts/get`` and
  ``completion/complete`` go to the server that owns the URI (listed, or matching one of its
  templates) or the prompt; the answer, and a server's own JSON-RPC error, come back unchanged.
  ``notifications/resources/updated`` reaches the sessions that subscribed to the URI.
- ``logging/setLevel`` is kept per client session and forwarded to the servers at the most
  verbose level any session asked for; log messages are filtered per session.
- During a tool call (:class:`Caller`), progress is re-sent against the caller's own progress
  token; log messages, ``sampling/createMessage`` and ``elicitation/create`` go to the client
  that made the call, and its answer goes back to the server. Cancelling the call cancels the
  downstream request (the SDK sends ``notifications/cancelled`` both ways).
- ``list_changed`` for resources and prompts is passed on to every session, and for tools too
  in pass-through mode (where the servers' tools are the gateway's own list).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import mcp.types as types
from mcp import Client
from mcp.server import Server
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ToolsListChanged,
)
from mcp.shared.uri_template import InvalidUriTemplate, UriTemplate

from toolroute.catalog.name import namespace_of, qualified_name, server_of, split_name
from toolroute.downstream.servers import Downstreams
from toolroute.gateway.calls.access import Request, is_stateless
from toolroute.gateway.shell._caller import Caller, connection_key
from toolroute.sdk import connection_of

__all__ = [
    "MAX_ASKS_PER_SESSION",
    "STATUS_URI",
    "Caller",
    "Relay",
    "exposed_names",
]

log = logging.getLogger(__name__)

LEVELS: tuple[types.LoggingLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
MAX_PAGES = 100
STATUS_URI = "toolroute://status"
"""The gateway's own resource: what ``toolroute status`` prints (servers, quarantine)."""
STATUS_RESOURCE = types.Resource(
    uri=STATUS_URI,
    name="toolroute status",
    description="Each downstream server's state (up, down, restarting; last error, exit code, "
    "restarts, tools) and the tools held in quarantine: what `toolroute status` prints.",
    mime_type="application/json",
)
RESOURCE_NOT_FOUND = -32002
MAX_ASKS_PER_SESSION = 16
"""Server→client requests (sampling, elicitation, roots) waiting for one client session's
answers at once; one more is refused at once with an error, and logged (each server is also
bounded on its own: ``MAX_ASKS`` in downstream/session.py)."""


def exposed_names(
    owners: Iterable[tuple[str, str]],
    servers: Collection[str] = (),
    refused: Collection[str] = (),
) -> dict[str, tuple[str, str]]:
    """``{exposed: (server, name)}``: a name kept as is where one server has it, else
    ``<server>__<name>`` for each server that has it. A name never kept as is: one written
    inside a server's namespace (``time__x``, ``time.x``, ``time/x``, with ``time`` in
    ``servers`` or listing: :func:`~toolroute.catalog.name.namespace_of`), which would shadow
    that server's own; and one in ``refused``. So every exposed name is one item's."""
    pairs = list(dict.fromkeys(owners))
    spaces = {*servers, *(s for s, _ in pairs)}
    count: dict[str, int] = {}
    for _, name in pairs:
        count[name] = count.get(name, 0) + 1

    def plain(name: str) -> bool:
        owned = namespace_of(name, spaces) is not None
        return count[name] == 1 and not owned and name not in refused

    return {
        (name if plain(name) else qualified_name(server, name)): (server, name)
        for server, name in pairs
    }


def _no_resource(uri: str) -> MCPError:
    """What an unknown resource gets, and one another server holds for a restricted client."""
    return MCPError(code=RESOURCE_NOT_FOUND, message=f"Resource not found: {uri}")


def _no_prompt(name: str) -> MCPError:
    """What an unknown prompt gets, and one another server holds for a restricted client."""
    return MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt: {name}")


class Relay:
    """Resources, prompts, completion and logging of every downstream server."""

    ask_timeout_s: float | None = None
    """How long a relayed server→client request (sampling, elicitation, roots) waits for the
    client's answer (None: until the session ends); the gateway sets its call_timeout_s."""

    def __init__(
        self,
        downstreams: Downstreams,
        bus: InMemorySubscriptionBus,
        on_tools_changed: Callable[[], None] | None = None,
        may_use: Callable[[Any, str], bool] | None = None,
        status: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        """``on_tools_changed``: when given (pass-through), a server's tools/list_changed calls
        it and is passed on to every client. ``may_use(ctx, server)``: whether the client of a
        request may use that server's resources and prompts (its allow-list); default yes.
        ``status``: the gateway's own state (``toolroute status``), served as the resource
        :data:`STATUS_URI` beside the relayed ones."""
        self.downstreams = downstreams
        self.bus = bus
        self.on_tools_changed = on_tools_changed
        self.may_use = may_use or (lambda ctx, server: True)
        self.status = status
        self.sessions: dict[int, Any] = {}  # connection → a ServerSession to notify it on
        self.levels: dict[int, types.LoggingLevel] = {}
        self.subscribers: dict[tuple[str, str], set[int]] = {}
        self.asking: dict[int, int] = {}
        """Connection → its server→client requests waiting for an answer."""
        self._asks_refused: set[int] = set()
        self._resources: dict[str, tuple[str, str]] | None = None
        self._templates: dict[str, tuple[str, str]] | None = None
        self._prompts: dict[str, tuple[str, str]] | None = None
        for d in downstreams.servers.values():
            d.on_notification = self._on_downstream

    def install(self, server: Server[Any]) -> None:
        """Register the relayed methods on the gateway's MCP server."""
        handlers: list[tuple[str, type[Any], Callable[[Any, Any], Awaitable[Any]]]] = [
            ("resources/list", types.PaginatedRequestParams, self.list_resources),
            ("resources/templates/list", types.PaginatedRequestParams, self.list_templates),
            ("resources/read", types.ReadResourceRequestParams, self.read_resource),
            ("resources/subscribe", types.SubscribeRequestParams, self.subscribe),
            ("resources/unsubscribe", types.UnsubscribeRequestParams, self.unsubscribe),
            ("prompts/list", types.PaginatedRequestParams, self.list_prompts),
            ("prompts/get", types.GetPromptRequestParams, self.get_prompt),
            ("completion/complete", types.CompleteRequestParams, self.complete),
            ("logging/setLevel", types.SetLevelRequestParams, self.set_level),
        ]
        for method, params_type, handler in handlers:
            server.add_request_handler(method, params_type, handler)

    def seen(self, ctx: Request | None) -> None:
        """Remember the client of ``ctx`` (to notify it later) until its connection closes. A
        2026-07-28 request has no connection to tell: its client hears of changes through
        ``subscriptions/listen``."""
        session = getattr(ctx, "session", None)
        if ctx is None or session is None or is_stateless(ctx):
            return
        key = connection_key(ctx)
        if key not in self.sessions:
            # forgotten when the connection closes: holding a closed connection's session
            # kept its whole request state alive (~0.15 MB per HTTP session, for ever)
            stack = getattr(connection_of(session), "exit_stack", None)
            if stack is not None:
                stack.callback(self.forget, key)
        self.sessions[key] = session

    @contextmanager
    def ask_slot(self, key: int, what: str) -> Iterator[bool]:
        """Within: one of :data:`MAX_ASKS_PER_SESSION` slots of connection ``key`` for a
        server→client request, if one is free (yields whether it was; a refusal is logged
        once until the connection's requests drop below the cap)."""
        held = self.asking.get(key, 0)
        if held >= MAX_ASKS_PER_SESSION:
            if key not in self._asks_refused:
                self._asks_refused.add(key)
                log.warning(
                    "a client session already has %d requests of servers waiting for its "
                    "answers; a %s request is refused (and any more until one is answered)",
                    held,
                    what,
                )
            yield False
            return
        self.asking[key] = held + 1
        try:
            yield True
        finally:
            left = self.asking.pop(key, 1) - 1
            if left:
                self.asking[key] = left
            if left < MAX_ASKS_PER_SESSION:
                self._asks_refused.discard(key)

    def forget(self, key: int) -> None:
        """Drop everything kept for one connection (it closed)."""
        self.sessions.pop(key, None)
        self.levels.pop(key, None)
        for keys in self.subscribers.values():
            keys.discard(key)

    def invalidate(self) -> None:
        """Forget the merged lists (a server's lists changed or the downstreams resynced)."""
        self._resources = self._templates = self._prompts = None

    # --- lists ----------------------------------------------------------------------------

    ready: Callable[[], Awaitable[None]] | None = None
    """What a listing waits for first (the gateway's start-up warmup), if anything."""

    def _serving(self, capability: str) -> list[str]:
        """Connected servers that declared ``capability`` (resources, prompts, ...)."""
        names = []
        for name, d in self.downstreams.servers.items():
            caps = d.capabilities  # of the open session: listing never waits for a reconnect
            if caps is not None and getattr(caps, capability, None) is not None:
                names.append(name)
        return names

    async def _gather(
        self, capability: str, fetch: Callable[[Client, str | None], Awaitable[Any]], field: str
    ) -> list[tuple[str, Any]]:
        """Every item of one list method from every server, pages followed; a failing server
        is logged and contributes nothing. At start it waits for the quick servers to be
        reviewed (``ready``), so a first listing is not cached empty."""
        if self.ready is not None:
            await self.ready()
        found: dict[str, list[Any]] = {}

        async def one(server: str) -> None:
            items: list[Any] = []
            cursor: str | None = None
            try:
                for _ in range(MAX_PAGES):
                    page = await self.downstreams[server].request(
                        lambda c, cur=cursor: fetch(c, cur)  # type: ignore[misc]
                    )
                    items.extend(getattr(page, field))
                    cursor = page.next_cursor
                    if cursor is None:
                        break
            except Exception:  # one server's failure must not hide the others' lists
                log.warning("listing %s of %s failed", field, server, exc_info=True)
            found[server] = items

        async with anyio.create_task_group() as tg:
            for server in self._serving(capability):
                tg.start_soon(one, server)
        return [(s, item) for s in self.downstreams.servers if s in found for item in found[s]]

    def _exposed(
        self, ctx: Request | None, listed: list[tuple[str, Any]], field: str
    ) -> tuple[dict[str, tuple[str, str]], list[Any]]:
        """The exposed names of ``listed`` items (keyed by their ``field``: uri, uri_template or
        name) and the items under those names that this client may use."""
        names = exposed_names(
            ((s, getattr(item, field)) for s, item in listed), self.downstreams.servers
        )
        back = {v: k for k, v in names.items()}
        items = [
            item.model_copy(update={field: back[(s, getattr(item, field))]})
            for s, item in listed
            if ctx is None or self.may_use(ctx, s)
        ]
        return names, items

    async def list_resources(
        self, ctx: Request | None, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        self.seen(ctx)
        listed = await self._gather(
            "resources", lambda c, cur: c.list_resources(cursor=cur), "resources"
        )
        self._resources, resources = self._exposed(ctx, listed, "uri")
        status = [STATUS_RESOURCE] if self.status is not None else []
        return types.ListResourcesResult(resources=[*status, *resources])

    async def list_templates(
        self, ctx: Request | None, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        self.seen(ctx)
        listed = await self._gather(
            "resources",
            lambda c, cur: c.list_resource_templates(cursor=cur),
            "resource_templates",
        )
        self._templates, templates = self._exposed(ctx, listed, "uri_template")
        return types.ListResourceTemplatesResult(resource_templates=templates)

    async def list_prompts(
        self, ctx: Request | None, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        self.seen(ctx)
        listed = await self._gather("prompts", lambda c, cur: c.list_prompts(cursor=cur), "prompts")
        self._prompts, prompts = self._exposed(ctx, listed, "name")
        return types.ListPromptsResult(prompts=prompts)

    # --- resolving a name to its server -----------------------------------------------------

    def _split(self, name: str) -> tuple[str, str] | None:
        server, rest = split_name(name)
        return (server, rest) if server in self.downstreams.servers and rest else None

    async def resource_owner(self, uri: str) -> tuple[str, str]:
        """(server, its own URI) for an exposed URI: listed, namespaced, or matching a template."""
        for attempt in range(2):
            if attempt or self._resources is None or self._templates is None:
                await self.list_resources(None, None)
                await self.list_templates(None, None)
            assert self._resources is not None and self._templates is not None
            if uri in self._resources:
                return self._resources[uri]
            if split := self._split(uri):
                return split
            for server, template in self._templates.values():
                try:
                    if UriTemplate.parse(template).match(uri) is not None:
                        return server, uri
                except InvalidUriTemplate:
                    continue
        serving = self._serving("resources")
        if len(serving) == 1:  # unlisted but only one server could have it
            return serving[0], uri
        raise _no_resource(uri)

    async def prompt_owner(self, name: str) -> tuple[str, str]:
        for attempt in range(2):
            if attempt or self._prompts is None:
                await self.list_prompts(None, None)
            assert self._prompts is not None
            if name in self._prompts:
                return self._prompts[name]
            if split := self._split(name):
                return split
        raise _no_prompt(name)

    async def template_owner(self, template: str) -> tuple[str, str]:
        if self._templates is None or template not in self._templates:
            await self.list_templates(None, None)
        assert self._templates is not None
        if template in self._templates:
            return self._templates[template]
        if split := self._split(template):
            return split
        return await self.resource_owner(template)

    async def _check(
        self, ctx: Request, owner: tuple[str, str], missing: MCPError
    ) -> tuple[str, str]:
        """``owner`` if the client may use its server, else ``missing``: the error an unknown
        name gets, after the work an unknown name costs (one re-listing), so a restricted
        client can tell another server's name from none neither by the answer nor its time."""
        if not self.may_use(ctx, owner[0]):
            if missing.code == RESOURCE_NOT_FOUND:
                await self.list_resources(None, None)
                await self.list_templates(None, None)
            else:
                await self.list_prompts(None, None)
            raise missing
        return owner

    # --- requests -------------------------------------------------------------------------

    async def read_resource(
        self, ctx: Request, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        self.seen(ctx)
        if str(params.uri) == STATUS_URI and self.status is not None:
            return self._read_status(ctx)
        uri = str(params.uri)
        server, uri = await self._check(ctx, await self.resource_owner(uri), _no_resource(uri))
        caller = Caller(self, ctx, params)

        async def send(c: Client) -> types.ReadResourceResult | types.InputRequiredResult:
            if caller.stateless:  # an input-required result goes back as it is
                return await c.session.read_resource(
                    uri,
                    input_responses=caller.input_responses,
                    request_state=caller.request_state,
                    allow_input_required=True,
                )
            return await c.read_resource(uri)  # the SDK answers input-required itself

        return await self.downstreams[server].request(send, caller)

    def _read_status(self, ctx: Request) -> types.ReadResourceResult:
        """The status snapshot, cut to the servers this client may use."""
        assert self.status is not None
        snap = self.status()
        snap["servers"] = {n: s for n, s in snap["servers"].items() if self.may_use(ctx, n)}
        snap["quarantined"] = {
            n: h for n, h in snap["quarantined"].items() if self.may_use(ctx, server_of(n))
        }
        text = json.dumps(snap, sort_keys=True)
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(uri=STATUS_URI, mime_type="application/json", text=text)
            ]
        )

    async def subscribe(
        self, ctx: Request, params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        self.seen(ctx)
        uri = str(params.uri)
        server, uri = await self._check(ctx, await self.resource_owner(uri), _no_resource(uri))
        first = (server, uri) not in self.subscribers
        self.subscribers.setdefault((server, uri), set()).add(connection_key(ctx))
        if first:
            await self.downstreams[server].request(
                lambda c: c.session.send_request(
                    types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri)),
                    types.EmptyResult,
                )
            )
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: Request, params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        self.seen(ctx)
        uri = str(params.uri)
        server, uri = await self._check(ctx, await self.resource_owner(uri), _no_resource(uri))
        keys = self.subscribers.get((server, uri), set())
        keys.discard(connection_key(ctx))
        if not keys and self.subscribers.pop((server, uri), None) is not None:
            await self.downstreams[server].request(
                lambda c: c.session.send_request(
                    types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=uri)),
                    types.EmptyResult,
                )
            )
        return types.EmptyResult()

    async def get_prompt(
        self, ctx: Request, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        self.seen(ctx)
        server, name = await self._check(
            ctx, await self.prompt_owner(params.name), _no_prompt(params.name)
        )
        caller = Caller(self, ctx, params)

        async def send(c: Client) -> types.GetPromptResult | types.InputRequiredResult:
            if caller.stateless:  # an input-required result goes back as it is
                return await c.session.get_prompt(
                    name,
                    params.arguments,
                    input_responses=caller.input_responses,
                    request_state=caller.request_state,
                    allow_input_required=True,
                )
            return await c.get_prompt(name, params.arguments)

        return await self.downstreams[server].request(send, caller)

    async def complete(
        self, ctx: Request, params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        self.seen(ctx)
        ref = params.ref
        if isinstance(ref, types.PromptReference):
            missing = _no_prompt(ref.name)
            server, name = await self._check(ctx, await self.prompt_owner(ref.name), missing)
            ref = ref.model_copy(update={"name": name})
        else:
            missing = _no_resource(ref.uri)
            server, uri = await self._check(ctx, await self.template_owner(ref.uri), missing)
            ref = ref.model_copy(update={"uri": uri})
        if server not in self._serving("completions"):  # nothing to complete with: no values
            return types.CompleteResult(completion=types.Completion(values=[]))
        result: types.CompleteResult = await self.downstreams[server].request(
            lambda c: c.session.send_request(
                types.CompleteRequest(params=params.model_copy(update={"ref": ref})),
                types.CompleteResult,
            )
        )
        return result

    async def set_level(
        self, ctx: Request, params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        self.seen(ctx)
        self.levels[connection_key(ctx)] = params.level
        level = min(self.levels.values(), key=LEVELS.index)

        async def one(server: str) -> None:
            try:
                await self.downstreams[server].request(
                    lambda c: c.session.send_request(
                        types.SetLevelRequest(params=types.SetLevelRequestParams(level=level)),
                        types.EmptyResult,
                    )
                )
            except Exception:  # a server that refuses keeps its own level; the others follow
                log.warning("logging/setLevel on %s failed", server, exc_info=True)

        async with anyio.create_task_group() as tg:
            for server in self._serving("logging"):
                tg.start_soon(one, server)
        return types.EmptyResult()

    def wants_log(self, key: int, level: types.LoggingLevel) -> bool:
        wanted = self.levels.get(key)
        return wanted is None or LEVELS.index(level) >= LEVELS.index(wanted)

    # --- what servers send outside a call -------------------------------------------------

    async def _on_downstream(self, server: str, note: types.ServerNotification) -> None:
        if isinstance(note, types.ResourceUpdatedNotification):
            uri = str(note.params.uri)
            keys = self.subscribers.get((server, uri), set())
            exposed = next(
                (k for k, v in (self._resources or {}).items() if v == (server, uri)), uri
            )
            await self.bus.publish(ResourceUpdated(exposed))
            await self._broadcast(lambda s: s.send_resource_updated(exposed), keys)
        elif isinstance(note, types.ResourceListChangedNotification):
            self.invalidate()
            await self.bus.publish(ResourcesListChanged())
            await self._broadcast(lambda s: s.send_resource_list_changed())
        elif isinstance(note, types.PromptListChangedNotification):
            self.invalidate()
            await self.bus.publish(PromptsListChanged())
            await self._broadcast(lambda s: s.send_prompt_list_changed())
        elif isinstance(note, types.ToolListChangedNotification) and self.on_tools_changed:
            self.on_tools_changed()
            await self.bus.publish(ToolsListChanged())
            await self._broadcast(lambda s: s.send_tool_list_changed())
        elif isinstance(note, types.LoggingMessageNotification):
            level = note.params.level
            keys = {k for k in self.levels if self.wants_log(k, level)}
            await self._broadcast(lambda s: s.send_notification(note), keys)

    async def _broadcast(
        self, send: Callable[[Any], Awaitable[None]], keys: set[int] | None = None
    ) -> None:
        """Send on each session's standalone channel; a closed session is forgotten."""
        for key, session in list(self.sessions.items()):
            if keys is not None and key not in keys:
                continue
            if str(getattr(session, "protocol_version", "")).startswith("2026"):
                continue  # modern clients get it through subscriptions/listen (the bus)
            try:
                await send(session)
            except Exception:  # a client that went away: drop it, keep the others
                log.debug("dropping a closed client session", exc_info=True)
                self.sessions.pop(key, None)
                self.levels.pop(key, None)
