"""Syncing: list the servers, review their tools against their pins
(:mod:`toolroute.gateway.calls.quarantine`), index what changed, and keep following them.

``sync_once`` is ``toolroute sync``. A serving gateway re-lists the servers when one sends
``notifications/tools/list_changed``, when one (re)connects (so a gateway started with no
server up picks them up as they come), when a quarantined tool is approved, and every
``relist_interval_s`` (a tool changed without a notification) (:func:`watch_changes`); the
servers' state is written to ``status.json`` in the store (:mod:`toolroute.gateway.ops.status`)
whenever it changes.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import anyio

from toolroute.catalog.models import Catalog, Tool
from toolroute.catalog.name import is_plain, qualified_name
from toolroute.config import SEPARATOR, GatewayConfig
from toolroute.downstream.servers import DownstreamError, Downstreams, ListedServer
from toolroute.downstream.sync import Listings, ServerStatus, catalog_from_listing, list_all
from toolroute.gateway.calls.quarantine import Held, Quarantine, revision
from toolroute.gateway.ops.app import (
    build_router,
    describe_find_tools,
    make_downstream,
    running_downstreams,
    store_dir_of,
)
from toolroute.gateway.ops.follow import StoreWatch
from toolroute.gateway.ops.reload import Live
from toolroute.gateway.ops.status import write_status
from toolroute.heap import trim_heap
from toolroute.index.warm import slices, warm_cache
from toolroute.router import IndexReport, Router
from toolroute.store import open_store

if TYPE_CHECKING:
    from toolroute.embed.base import Embedder
    from toolroute.gateway.shell.server import Gateway
    from toolroute.index.build import Progress

__all__ = [
    "SyncResult",
    "held_by_name",
    "index_for",
    "live_of",
    "resync",
    "review",
    "sync_once",
    "sync_router",
    "watch_changes",
]

log = logging.getLogger(__name__)


RELIST_DEBOUNCE_S = 1.0
"""A server is re-listed at most this often on its own list_changed or reconnect."""


SLICE_TOOLS = 1000
"""A big server is embedded this many tools at a time at start (between slices, a smaller
server's step goes first)."""


STATUS_RETRY_S = 1.0
"""How soon a status.json that could not be written (full disk, read-only) is tried again."""


@dataclass(frozen=True, slots=True)
class SyncResult:
    servers: list[ServerStatus]
    index: IndexReport
    quarantined: list[Held] = field(default_factory=list)
    listings: Listings | None = field(default=None, compare=False)
    """Each server's listing at this sync: the change watcher re-lists only what changed."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "servers": {s.name: s.to_dict() for s in self.servers},
            **self.index.to_dict(),
            "quarantined": {h.name: h.to_dict() for h in self.quarantined},
        }


def live_of(
    config: GatewayConfig,
    load: Callable[[], GatewayConfig] | None = None,
    listings: Listings | None = None,
) -> Live:
    """The running config of a gateway, with what a reload needs from this module (the
    reload module does not import it)."""
    return Live(config, load, listings=listings, make_downstream=make_downstream, resync=resync)


async def review(
    config: GatewayConfig,
    downstreams: Downstreams,
    listings: Listings | None = None,
    only: Collection[str] | None = None,
    among: Collection[str] | None = None,
) -> tuple[Catalog, list[ServerStatus], list[Held]]:
    """List every server and hold back the tools in quarantine: the catalog to index. With
    ``listings``, only the servers in ``only`` (None: all) are listed again, the others'
    last listing is reused. With ``among`` (and ``listings``), the catalog of those servers
    alone (the ones indexed so far at start), whose names are checked against every server
    listed so far: a look-alike of a tool a server still being indexed lists is held before
    it is ever routable; while a server has not listed at all (at start, within its
    ``connect_timeout_s``), a name that could imitate one of its tools (one not plain) is held
    until it has, so a quick server's look-alike is never routable before the server it
    imitates lists. The review itself (hashes, pins, poisoned descriptions: seconds for
    tens of thousands of tools) runs in a worker thread, so the gateway answers meanwhile."""
    if listings is None:
        listing = await list_all(downstreams, config.settings.connect_timeout_s)
    else:
        listing = await listings.refresh(
            downstreams, config.settings.connect_timeout_s, only, among
        )
    others: list[Tool] = []
    waiting: list[str] = []
    # only a name not plain (not its own skeleton) is ever flagged a look-alike
    # (gateway/calls/_poison.py): with none among the reviewed servers, the others' names
    # are not needed, and no server still listing can be imitated
    if listings is not None and among is not None and not _plain(listing):
        others = [
            Tool(server=n, name=t.name, description="", input_schema={})
            for n, x in listings.last.items()
            if n not in among and n in downstreams.servers and isinstance(x, ListedServer)
            for t in x.listed
        ]
        waiting = [n for n in downstreams.servers if n not in listings.last]
    catalog, statuses, held = await anyio.to_thread.run_sync(
        _review, config, listing, among, others, waiting
    )
    catalog = _without(catalog, held, downstreams)
    for s in statuses:
        downstreams[s.name].tools = s.tools
    downstreams.note_change()  # the tools counts (and the quarantine set next) are in the status
    return catalog, statuses, held


def _plain(listing: Mapping[str, ListedServer | DownstreamError]) -> bool:
    """Whether every tool name listed is plain, bare and namespaced (its own skeleton: no
    invisible character, no look-alike such as ``probe_aII`` for ``probe_all``). On the
    event loop, so an ASCII name's namespaced form is not built: the skeleton of ASCII goes
    character by character, so it is plain when its server's name and its own are."""
    for n, x in listing.items():
        if not isinstance(x, ListedServer):
            continue
        server = is_plain(n) and n.isascii()
        for t in x.listed:
            if not is_plain(t.name):
                return False
            if not (server and t.name.isascii()) and not is_plain(qualified_name(n, t.name)):
                return False
    return True


def _review(
    config: GatewayConfig,
    listing: Mapping[str, ListedServer | DownstreamError],
    among: Collection[str] | None,
    others: Sequence[Tool],
    waiting: Sequence[str] = (),
) -> tuple[Catalog, list[ServerStatus], list[Held]]:
    """:func:`review`'s part in the store, on a connection of its own (a worker thread)."""
    with open_store(store_dir_of(config)) as store:
        previous = store.load_catalog() if store.tool_hashes() else None
        catalog, statuses = catalog_from_listing(config, listing, previous)
        if among is not None:
            catalog = Catalog(servers=tuple(s for s in catalog.servers if s.id in among))
            statuses = [s for s in statuses if s.name in among]
        # the rug-pull check pins what the servers listed, before curation rewrote it; a
        # server that did not answer now kept its reviewed (and curated) tools
        listed = {
            n: replace(x, tools=x.listed, original=None)
            for n, x in listing.items()
            if isinstance(x, ListedServer)
        }
        original, _ = catalog_from_listing(config, listed, None)
        _, held, _ = Quarantine(store, config.settings.approved).review(original, others, waiting)
    return catalog, statuses, held


def _without(catalog: Catalog, held: list[Held], downstreams: Downstreams) -> Catalog:
    """The curated catalog without the tools whose original is held."""
    names = {h.name for h in held}
    if not names:
        return catalog
    return Catalog(
        servers=tuple(
            replace(
                s,
                tools=tuple(
                    t
                    for t in s.tools
                    if f"{s.id}{SEPARATOR}{_own(downstreams, s.id, t.name)}" not in names
                ),
            )
            for s in catalog.servers
        )
    )


def _own(downstreams: Downstreams, server: str, tool: str) -> str:
    d = downstreams.servers.get(server)
    return d.renames.get(tool, tool) if d is not None else tool


def held_by_name(held: list[Held], downstreams: Downstreams) -> dict[str, Held]:
    """The held tools by their own and their curated names (call_tool refuses either)."""
    out = {h.name: h for h in held}
    for d in downstreams.servers.values():
        for exposed, own in d.renames.items():
            if (h := out.get(f"{d.name}{SEPARATOR}{own}")) is not None:
                out[f"{d.name}{SEPARATOR}{exposed}"] = h
    return out


async def sync_router(
    config: GatewayConfig,
    downstreams: Downstreams,
    embedder: Embedder | None = None,
    progress: Progress | None = None,
) -> tuple[Router, SyncResult]:
    """List every server, index what changed, and return a ready router (over no tools at
    all when no server answered: the gateway still starts and picks them up later)."""
    listings = Listings()
    catalog, statuses, held = await review(config, downstreams, listings)
    router = build_router(config, catalog, embedder)
    report = index_for(config, router, catalog, progress)
    return router, SyncResult(statuses, report, held, listings)


def index_for(
    config: GatewayConfig, router: Router, catalog: Catalog, progress: Progress | None = None
) -> IndexReport:
    """Index ``catalog`` for routing; a gateway that does not route (pass-through,
    ``expose = "all"``) and a catalog with no tools only store the catalog, so no embedding
    model is loaded (a stray ``find_tools`` would index on its first query)."""
    if catalog.tool_count and config.settings.expose != "all":
        return router.index(progress)
    sync = router.store.sync_catalog(catalog)
    return IndexReport(sync.added, sync.updated, sync.removed, sync.unchanged, 0)


async def sync_once(config: GatewayConfig, progress: Progress | None = None) -> SyncResult:
    async with running_downstreams(config) as downstreams:
        router, result = await sync_router(config, downstreams, progress=progress)
        router.close()
    return result


async def watch_changes(
    source: Live | GatewayConfig,
    downstreams: Downstreams,
    gateway: Gateway,
    listings: Listings | None = None,
    watch: StoreWatch | None = None,
    connects: Mapping[str, int] | None = None,
) -> None:
    """Re-list a server when it says its tools changed (notifications/tools/list_changed) or
    (re)connects, at most once per :data:`RELIST_DEBOUNCE_S` (notifications in between are
    coalesced: a server that announces a change on every listing cannot keep the gateway
    listing), reusing the other servers' last listing; re-review without listing when a
    held tool is approved; re-list every server each relist_interval_s (a tool changed
    without a notification). Swap the router only when the tools or the quarantine changed.
    Writes status.json on every change. With a :class:`~toolroute.gateway.ops.reload.Live`,
    its config is read each turn (a reload swaps it). A server re-listed only because its
    tools may have changed unannounced (after its calls, or when its list expired) that lists
    exactly what it listed before is not reviewed again: nothing would change.

    Between turns it sleeps on the downstreams' change event (a server's tools, connection or
    status, a fault, a store notification), waking on its own only when a debounced server
    is due, at the relist interval, to retry an unwritten status file, and, for a store no
    notification covers (SQLite), every ``file_check_s`` for :class:`StoreWatch`'s look."""
    live = source if isinstance(source, Live) else live_of(source, listings=listings)
    if live.listings is None:
        live.listings = Listings()
    listings = live.listings
    config = live.config
    watch = watch if watch is not None else StoreWatch(lambda: gateway.shared.router.store)
    # each server's connection count at its last listing (``connects``: given by the start)
    connects = {d.name: d.connects for d in downstreams.servers.values()} | dict(connects or {})
    listed_at: dict[str, float] = {}
    rev = revision(gateway.shared.router.store)
    next_relist = anyio.current_time() + config.settings.relist_interval_s
    written: dict[str, Any] | None = None
    reviewed: GatewayConfig | None = None  # the config of this loop's last review
    watch.on_notify = downstreams.note_change
    faults = getattr(getattr(gateway, "shared", None), "faults", None)
    if faults is not None:
        faults.on_change = downstreams.note_change
    while True:
        downstreams.take_changes()  # before reading the state: a change from now on wakes the wait
        config = live.config
        status = gateway.status()
        if status != written and write_status(
            gateway.shared.router.store.directory, status, gateway.shared.faults
        ):  # not written (full disk, read-only): noted in the faults, tried again next turn
            written = status
        now = anyio.current_time()
        pending = {
            d.name: listed_at.get(d.name, -RELIST_DEBOUNCE_S) + RELIST_DEBOUNCE_S
            for d in downstreams.servers.values()
            if d.tools_changed.is_set() or connects.get(d.name) != d.connects
        }
        changed = [d for d in downstreams.servers.values() if pending.get(d.name, now + 1) <= now]
        # the store is read only when it may have changed (StoreWatch), not every turn
        new_rev = revision(gateway.shared.router.store) if watch.changed() else rev
        due = now >= next_relist
        if not (changed or due or new_rev != rev):
            wake = min([next_relist, *pending.values()])  # a debounced server's turn
            if status != written:  # the status file could not be written: try again
                wake = min(wake, now + STATUS_RETRY_S)
            if not (gateway.shared.router.store.shared and watch.listening):
                # no notification: look when StoreWatch's next look is due (it was just
                # asked, so a hair later than file_check_s from now)
                wake = min(wake, now + watch.file_check_s + 0.01)
            await downstreams.wait_change(wake - now)
            continue
        # nothing but a possible unannounced change: no reconnect, approval or new config,
        # and every server's last listing worked (a failed one is listed at every review)
        maybe = not due and new_rev == rev and config is reviewed
        maybe = maybe and all(connects.get(d.name) == d.connects for d in changed)
        maybe = maybe and all(
            isinstance(listings.last.get(n), ListedServer) for n in downstreams.servers
        )
        for d in downstreams.servers.values() if due else changed:
            d.tools_changed = anyio.Event()  # a notification from now on means another change
            connects[d.name] = d.connects
            listed_at[d.name] = now
        rev = new_rev
        if due:
            next_relist = now + config.settings.relist_interval_s
        only = None if due else {d.name for d in changed}
        try:
            async with live.lock:
                if maybe and only:
                    if await _lists_as_before(
                        downstreams, listings, only, config.settings.connect_timeout_s
                    ):
                        continue
                    only = set()  # listed just now: the review reuses that listing
                await resync(config, downstreams, gateway, listings, only)
                reviewed = config
        except Exception:  # keep serving the previous index rather than dying
            log.exception("re-listing the servers failed; keeping the previous index")


async def _embed_new(
    config: GatewayConfig,
    router: Router,
    catalog: Catalog,
    progress: Callable[[int, int], None] | None,
) -> None:
    """Embed the texts of ``catalog``'s index the cache lacks, in a worker thread, with
    ``router``'s embedder, documents and questions."""
    r = router
    if not catalog.tool_count:
        return
    await anyio.to_thread.run_sync(
        warm_cache,
        catalog,
        store_dir_of(config),
        r.embedder,
        r.documents,
        getattr(r.questions, "name", None),
        progress,
    )


async def _lists_as_before(
    downstreams: Downstreams, listings: Listings, names: Collection[str], timeout_s: float
) -> bool:
    """List ``names`` again (kept in ``listings``): whether each listed exactly what it listed
    last time (a failed listing never counts as the same)."""
    before = {n: listings.last.get(n) for n in names}
    now = await listings.refresh(downstreams, timeout_s, names)
    return all(
        isinstance(now.get(n), ListedServer) and now.get(n) == was for n, was in before.items()
    )


async def resync(
    config: GatewayConfig,
    downstreams: Downstreams,
    gateway: Gateway,
    listings: Listings | None = None,
    only: Collection[str] | None = None,
    *,
    among: Collection[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    embed_only: bool = False,
    between: Callable[[], Awaitable[None]] | None = None,
) -> IndexReport | None:
    """List again (with ``listings``: only the servers in ``only``, None for all; ``among``:
    the catalog of those servers only, :func:`review`); rebuild and swap the gateway's
    router if the tools or quarantine changed (None if not). New texts are embedded in a
    worker thread (:func:`~toolroute.index.warm.warm_cache`, ``progress(done, total)``
    from that thread), so the gateway answers meanwhile; the index is then assembled from
    the cache. ``embed_only``: only embed ``among``'s last listed tools into the cache, no
    review and no swap (start-up does this outside the reload lock, so one server's long
    embedding holds back no other's swap), in slices of :data:`SLICE_TOOLS` tools, awaiting
    ``between()`` before each (start-up lets a small server's step go first there)."""
    if embed_only:
        if listings is not None and config.settings.expose != "all":
            listed = {n: x for n, x in listings.last.items() if among is None or n in among}
            whole, _ = await anyio.to_thread.run_sync(catalog_from_listing, config, listed, None)
            done, total = 0, whole.tool_count
            for part in slices(whole, SLICE_TOOLS):
                if between is not None:
                    await between()
                n = part.tool_count

                def shown(d: int, t: int, done: int = done, n: int = n) -> None:
                    if progress is not None:  # in tools of the whole step
                        progress(done + n * d // max(t, 1), total)

                await _embed_new(config, gateway.shared.router, part, shown)
                done += n
        return None
    catalog, statuses, held = await review(config, downstreams, listings, only, among)
    before = {(t.key, t.hash) for t in gateway.shared.router.catalog.tools()}
    after = {(t.key, t.hash) for t in catalog.tools()}
    gateway.shared.quarantined = held_by_name(held, downstreams)
    if before == after:
        return None
    router = build_router(config, catalog, gateway.shared.router.embedder)
    try:
        # only new or changed tools have texts to embed; without them (tools removed or
        # held) nothing awaits between the quarantine above and the swap below
        routes = bool(catalog.tool_count) and config.settings.expose != "all"
        grown = routes and not after <= before
        if grown:
            await _embed_new(config, router, catalog, progress)
            # the build (BM25, the matrix, the snapshot: seconds at 20,000 tools) in a
            # worker thread too: the gateway answers from the router it has until the swap
            report = await anyio.to_thread.run_sync(router.index)
        elif routes:
            report = router.index()
        else:  # nothing to route (pass-through) or no tools: the catalog alone, no model
            report = index_for(config, router, catalog)
    except BaseException:
        router.close()
        raise
    gateway.replace_router(router).close()
    describe_find_tools(gateway)
    trim_heap()
    log.info("re-listed: %s", SyncResult(statuses, report, held).to_dict())
    return report
