"""Serving at once: ``toolroute serve`` listens before any server is listed, and each
server's tools become routable as soon as they are indexed.

At start every server is listed concurrently (each bounded by ``connect_timeout_s``); as
listings arrive they are indexed in steps, the smallest first: the servers that together list
at most :data:`STEP_TOOLS` tools in one step, a bigger server in a step of its own, so one
server listing 20,000 tools (or one slow to answer) holds back no other's. Each step embeds
its new texts in a worker thread and swaps the router (``resync(among=…)``); meanwhile
``find_tools`` answers from what is indexed and says what is not yet (``indexing`` in its
result), and the status shows each server's progress (``indexing``: "listing its tools",
"waiting: 20,000 tools", "indexing: 3,200 of 20,000 tools"), logged every
:data:`LOG_EVERY_S`. Then the change watcher takes over.

A tool call (find_tools included) made in the first moments waits (:class:`Warmup`) until
every server is indexed, has failed, or is known to be big (it listed more than
:data:`STEP_TOOLS` tools, so far or in all): a client that asks at once gets the quick
servers' tools rather than an empty index, as it did when ``serve`` listened only after
indexing, and never waits for a big one. Listing is bounded (``connect_timeout_s`` to
connect, then per page) and so is this wait, at ``connect_timeout_s`` +
:data:`WARMUP_INDEX_S`.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Collection
from typing import TYPE_CHECKING

import anyio
import anyio.from_thread

from toolroute.downstream.servers import DownstreamPool, ListedServer
from toolroute.downstream.sync import Listings, list_all

if TYPE_CHECKING:
    from toolroute.gateway.ops.reload import Live
    from toolroute.gateway.shell.server import Gateway

__all__ = [
    "LOG_EVERY_S",
    "STEP_TOOLS",
    "WARMUP_INDEX_S",
    "IndexProgress",
    "Warmup",
    "index_at_start",
    "next_step",
]

log = logging.getLogger(__name__)

STEP_TOOLS = 2000
"""Servers listing at most this many tools together are indexed in one step."""
WARMUP_INDEX_S = 120.0
"""Beyond connecting, how long a call at start may wait for the quick servers' indexing (a
loaded machine embeds slowly)."""
LOG_EVERY_S = 10.0
"""How often a step's progress is logged (the status follows it every second)."""
SHOW_EVERY_S = 1.0


class Warmup:
    """What a request at start waits for: the quick servers indexed (:meth:`settle`), at
    most until ``wait_s`` after the gateway started."""

    def __init__(self, wait_s: float) -> None:
        self.settled = anyio.Event()
        self.deadline = anyio.current_time() + wait_s

    def settle(self) -> None:
        self.settled.set()

    async def wait(self) -> None:
        if self.settled.is_set():
            return
        with anyio.move_on_after(max(self.deadline - anyio.current_time(), 0.0)):
            await self.settled.wait()


class IndexProgress:
    """One step's progress, from the embedding worker thread to the status and the log."""

    def __init__(self, pool: DownstreamPool, servers: Collection[str], tools: int) -> None:
        self.pool = pool
        self.servers = list(servers)
        self.tools = tools
        self._shown = self._logged = 0.0

    @property
    def label(self) -> str:
        return ", ".join(self.servers)

    def show(self, done: int) -> None:
        """On the event loop: the status note of each server in the step."""
        notes = self.pool.notes.setdefault("indexing", {})
        for name in self.servers:
            notes[name] = f"indexing: {done:,} of {self.tools:,} tools"
        self.pool.note_change()

    def __call__(self, done_texts: int, total_texts: int) -> None:
        """``CachedEmbedder``'s progress (texts embedded, in the worker thread), as tools."""
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
    live: Live, pool: DownstreamPool, gateway: Gateway, warmup: Warmup | None = None
) -> dict[str, int]:
    """List every server and index each as its listing arrives (smallest first), swapping the
    gateway's router after each step; ``warmup`` settles once only big servers are left.
    Returns each server's connection count when it was listed: the change watcher re-lists
    one that reconnected since (its listing may be of a connection that is gone)."""
    assert live.resync is not None  # set by serve (gateway.app.resync)
    resync = live.resync
    config = live.config
    if live.listings is None:
        live.listings = Listings()
    listings = live.listings
    names = list(pool.servers)
    notes = pool.notes.setdefault("indexing", {})
    notes.update((n, "listing its tools") for n in names)
    pool.note_change()
    send, receive = anyio.create_memory_object_stream[str](max(len(names), 1))
    big: set[str] = set()  # listed (or listing) more than a step's worth
    indexed: set[str] = set()

    def settle_if_only_big_left() -> None:
        if warmup is not None and all(n in indexed or n in big for n in names):
            warmup.settle()

    def paged(name: str, so_far: int) -> None:
        notes[name] = f"listing its tools: {so_far:,} so far"
        pool.note_change()
        if so_far > STEP_TOOLS and name not in big:
            big.add(name)
            settle_if_only_big_left()

    connects: dict[str, int] = {}

    async def one(name: str) -> None:
        listings.last.update(await list_all(pool, config.connect_timeout_s, [name], paged))
        if name in pool.servers:
            connects[name] = pool[name].connects
        got = listings.last.get(name)
        failed = got is not None and not isinstance(got, ListedServer)
        if failed and name in pool.servers and pool[name].status == "up":  # down: logged
            log.warning("server %s: %s (its last known tools are kept)", name, got)
        await send.send(name)

    ready: list[str] = []
    waiting = len(names)
    async with anyio.create_task_group() as tg, send, receive:
        for name in names:
            tg.start_soon(one, name)
        while waiting or ready:
            if not ready:
                ready.append(await receive.receive())
                waiting -= 1
            while waiting:
                try:
                    ready.append(receive.receive_nowait())
                except anyio.WouldBlock:
                    break
                waiting -= 1
            step = next_step(ready, listings)
            ready = [n for n in ready if n not in step]
            if sum(_count(listings, n) for n in step) > STEP_TOOLS:
                big.update(step)
                settle_if_only_big_left()
            for n in ready:
                notes[n] = f"waiting: {_count(listings, n):,} tools listed"
            tools = sum(_count(listings, n) for n in step)
            progress = IndexProgress(pool, step, tools)
            progress.show(0)
            try:
                async with live.lock:
                    await resync(
                        live.config,
                        pool,
                        gateway,
                        listings,
                        only=(),
                        among={*indexed, *step},
                        progress=progress,
                    )
            except Exception:  # keep serving what is indexed; the watcher retries later
                log.exception("indexing %s failed", progress.label)
            indexed.update(step)
            for n in step:
                notes.pop(n, None)
            if (passthrough := getattr(gateway, "passthrough", None)) is not None:
                passthrough.invalidate()  # the step's servers are reviewed: listed from now on
            pool.note_change()
            settle_if_only_big_left()
            log.info("indexed %s: %s tools", progress.label, f"{tools:,}")
    if warmup is not None:
        warmup.settle()
    if not gateway.router.catalog.tool_count:
        log.warning("no server has tools yet; serving anyway, they join as they connect")
    return connects
