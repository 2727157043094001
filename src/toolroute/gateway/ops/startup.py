"""Serving at once: ``toolroute serve`` listens before any server is listed, and each
server's tools become routable as soon as they are indexed, whatever order the listings
arrive in.

At start every server is listed concurrently (each bounded by ``connect_timeout_s``); as
listings arrive they are indexed in steps: the servers ready together that list at most
:data:`STEP_TOOLS` tools, a bigger server in a step of its own. Steps run side by side: each
embeds its new texts in a worker thread with no lock held (a big step in bounded slices, and
only while no small step is under way: small ones go first), then swaps the router over
every server indexed so far (``resync(among=…)``, under the reload lock, the short part), so
a server listing 20,000 tools, whether its listing came first or last, holds back no other's.
Each step's quarantine review sees every server listed so far, so a look-alike of a tool the
big server lists is held before it is ever routable, and holds a name that is not plain (not
its own skeleton) while a server has not listed at all, so a quick server's look-alike of a
slow one's tool is never routable either (``syncing.review``). Meanwhile ``find_tools`` answers from
what is indexed and says what is not yet (``indexing`` in its result), and the status shows
each server's progress (``indexing``: "listing its tools", "waiting: 20,000 tools",
"indexing: 3,200 of 20,000 tools"), logged every :data:`LOG_EVERY_S`. Then the change
watcher takes over.

A request made in the first moments waits (:class:`Warmup`), at most ``connect_timeout_s``
after the start: a call of one server's tool waits for that server alone; ``find_tools`` and
the listings wait until every server is indexed, has failed, or is slow (it lists more than
:data:`STEP_TOOLS` tools, or its listing took longer than :data:`SLOW_LISTING_S` once
connected: an endless cursor, a huge page). A client that asks at once thus gets the quick
servers' tools rather than an empty index, and never waits for a slow one.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Collection
from typing import TYPE_CHECKING

import anyio
import anyio.from_thread

from toolroute.downstream.servers import Downstreams, ListedServer
from toolroute.downstream.sync import Listings, list_all

if TYPE_CHECKING:
    from toolroute.gateway.ops.reload import Live
    from toolroute.gateway.shell.server import Gateway

__all__ = [
    "LOG_EVERY_S",
    "SLOW_LISTING_S",
    "STEP_TOOLS",
    "IndexProgress",
    "Warmup",
    "index_at_start",
    "next_step",
]

log = logging.getLogger(__name__)

STEP_TOOLS = 2000
"""Servers listing at most this many tools together are indexed in one step."""
SLOW_LISTING_S = 1.0
"""A server still listing this long after it connected is slow: no request at start waits
for it (a cursor that never ends, a page that takes long to read)."""
LOG_EVERY_S = 10.0
"""How often a step's progress is logged (the status follows it every second)."""
SHOW_EVERY_S = 1.0


class Warmup:
    """What a request at start waits for, at most until ``wait_s`` after the gateway started:
    one server ready (:meth:`wait` with its name), or every server (:meth:`wait` alone). A
    server is ready once indexed, failed or slow (:meth:`settle`)."""

    def __init__(self, wait_s: float, servers: Collection[str] = ()) -> None:
        self.settled = anyio.Event()
        self.deadline = anyio.current_time() + wait_s
        self._ready = {name: anyio.Event() for name in servers}
        if not self._ready:
            self.settled.set()

    def settle(self, server: str | None = None) -> None:
        """``server`` is ready (None: all of them)."""
        for name, ready in self._ready.items():
            if server is None or name == server:
                ready.set()
        if all(ready.is_set() for ready in self._ready.values()):
            self.settled.set()

    def ready(self, server: str) -> bool:
        got = self._ready.get(server)
        return got is None or got.is_set()

    async def wait(self, server: str | None = None) -> None:
        """Until ``server`` (None: every server) is ready, at most until the deadline; a
        server the start did not know (added since) is not waited for."""
        event = self.settled if server is None else self._ready.get(server)
        if event is None or event.is_set():
            return
        with anyio.move_on_after(max(self.deadline - anyio.current_time(), 0.0)):
            await event.wait()


class IndexProgress:
    """One step's progress, from the embedding worker thread to the status and the log."""

    def __init__(self, downstreams: Downstreams, servers: Collection[str], tools: int) -> None:
        self.downstreams = downstreams
        self.servers = list(servers)
        self.tools = tools
        self._shown = self._logged = 0.0

    @property
    def label(self) -> str:
        return ", ".join(self.servers)

    def show(self, done: int) -> None:
        """On the event loop: the status note of each server in the step."""
        notes = self.downstreams.notes.setdefault("indexing", {})
        for name in self.servers:
            notes[name] = f"indexing: {done:,} of {self.tools:,} tools"
        self.downstreams.note_change()

    def __call__(self, done_texts: int, total_texts: int) -> None:
        """``CachedEmbedder``'s progress (texts embedded, in the worker thread), as tools;
        a gateway stopping meanwhile ends the embedding here, at the chunk's end."""
        with contextlib.suppress(RuntimeError):  # RuntimeError: not in a worker thread
            anyio.from_thread.check_cancelled()
        now = time.monotonic()
        if now - self._shown < SHOW_EVERY_S and done_texts < total_texts:
            return
        self._shown = now
        done = self.tools * done_texts // max(total_texts, 1)
        if now - self._logged >= LOG_EVERY_S:
            self._logged = now
            log.info("indexing %s: %s of %s tools", self.label, f"{done:,}", f"{self.tools:,}")
        # outside an anyio worker thread (a direct call) there is no loop to show it on
        with contextlib.suppress(RuntimeError):
            anyio.from_thread.run_sync(self.show, done)


def _count(listings: Listings, name: str) -> int:
    got = listings.last.get(name)
    return len(got.tools) if isinstance(got, ListedServer) else 0


def next_step(ready: list[str], listings: Listings) -> list[str]:
    """The servers of the next step: the smallest ready ones that list at most
    :data:`STEP_TOOLS` tools together, or else the smallest alone."""
    step: list[str] = []
    total = 0
    for name in sorted(ready, key=lambda n: (_count(listings, n), n)):
        count = _count(listings, name)
        if step and total + count > STEP_TOOLS:
            break
        step.append(name)
        total += count
    return step


async def index_at_start(
    live: Live, downstreams: Downstreams, gateway: Gateway, warmup: Warmup | None = None
) -> dict[str, int]:
    """List every server and index each as its listing arrives, steps side by side, swapping
    the gateway's router after each; ``warmup`` learns each server as it becomes ready.
    Returns each server's connection count when it was listed: the change watcher re-lists
    one that reconnected since (its listing may be of a connection that is gone)."""
    assert live.resync is not None  # set by serve (gateway.app.resync)
    resync = live.resync
    config = live.config
    if live.listings is None:
        live.listings = Listings()
    listings = live.listings
    names = list(downstreams.servers)
    notes = downstreams.notes.setdefault("indexing", {})
    notes.update((n, "listing its tools") for n in names)
    downstreams.note_change()
    send, receive = anyio.create_memory_object_stream[str](max(len(names), 1))
    indexed: set[str] = set()
    listed: set[str] = set()

    def ready(name: str) -> None:  # requests waiting for this server go on
        if warmup is not None:
            warmup.settle(name)

    def paged(name: str, so_far: int) -> None:
        notes[name] = f"listing its tools: {so_far:,} so far"
        downstreams.note_change()
        if so_far > STEP_TOOLS:
            ready(name)

    async def slow_after_connect(name: str) -> None:
        with anyio.move_on_after(config.settings.connect_timeout_s):
            with contextlib.suppress(Exception):  # its error is the listing's to report
                await downstreams[name].client()
            await anyio.sleep(SLOW_LISTING_S)
            if name not in listed:
                ready(name)

    connects: dict[str, int] = {}

    async def one(name: str) -> None:
        async with anyio.create_task_group() as watch:
            watch.start_soon(slow_after_connect, name)
            listings.last.update(
                await list_all(downstreams, config.settings.connect_timeout_s, [name], paged)
            )
            listed.add(name)
            watch.cancel_scope.cancel()
        if name in downstreams.servers:
            connects[name] = downstreams[name].connects
        got = listings.last.get(name)
        failed = got is not None and not isinstance(got, ListedServer)
        if (
            failed and name in downstreams.servers and downstreams[name].status == "up"
        ):  # down: logged
            log.warning("server %s: %s (its last known tools are kept)", name, got)
        await send.send(name)

    # small steps go first: a big step starts, and goes on after each slice it embedded,
    # only while no small step is under way (the machine's cores are theirs meanwhile)
    small = 0
    idle = anyio.Event()
    idle.set()

    async def small_steps_done() -> None:
        await idle.wait()

    async def index_step(step: list[str]) -> None:
        nonlocal small, idle
        tools = sum(_count(listings, n) for n in step)
        big = tools > STEP_TOOLS
        progress = IndexProgress(downstreams, step, tools)
        if big:
            for n in step:
                ready(n)
        else:
            small += 1
            idle = anyio.Event() if idle.is_set() else idle
        progress.show(0)
        try:
            # the slow part, beside the other steps: the step's new texts into the cache
            await resync(
                config,
                downstreams,
                gateway,
                listings,
                (),
                among=step,
                progress=progress,
                embed_only=True,
                between=small_steps_done if big else None,
            )
            async with live.lock:  # the swap, over every server indexed so far
                indexed.update(step)
                await resync(
                    live.config, downstreams, gateway, listings, only=(), among=set(indexed)
                )
        except Exception:  # keep serving what is indexed; the watcher retries later
            log.exception("indexing %s failed", progress.label)
            indexed.update(step)
        finally:
            if not big:
                small -= 1
                if not small:
                    idle.set()
        for n in step:
            notes.pop(n, None)
            ready(n)
        if (passthrough := getattr(gateway, "passthrough", None)) is not None:
            passthrough.invalidate()  # the step's servers are reviewed: listed from now on
        downstreams.note_change()
        log.info("indexed %s: %s tools", progress.label, f"{tools:,}")

    waiting = len(names)
    async with anyio.create_task_group() as tg, send, receive:
        for name in names:
            tg.start_soon(one, name)
        while waiting:
            ready_now = [await receive.receive()]
            waiting -= 1
            while waiting:  # the listings that came together are stepped together
                try:
                    ready_now.append(receive.receive_nowait())
                except anyio.WouldBlock:
                    break
                waiting -= 1
            while ready_now:
                step = next_step(ready_now, listings)
                ready_now = [n for n in ready_now if n not in step]
                for n in ready_now:
                    notes[n] = f"waiting: {_count(listings, n):,} tools listed"
                tg.start_soon(index_step, step)
    if warmup is not None:
        warmup.settle()
    if not gateway.shared.router.catalog.tool_count:
        log.warning("no server has tools yet; serving anyway, they join as they connect")
    return connects
