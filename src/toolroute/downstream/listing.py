"""A server's tools/list: every page of it, bounded, and what the server said about itself.

A page the SDK cannot read as a whole is read tool by tool, and a tool with a malformed schema
is left out (with why); a cursor that repeats, or that has not ended after :data:`MAX_PAGES`
pages, ends the listing with the tools read so far. A 2026-07-28 listing also says how long it
stays fresh (``ttlMs``) and for whom (``cacheScope``; downstream/era.py), and a 2026-07-28
server's list changes come on a ``subscriptions/listen`` stream (:func:`listen`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import mcp.types as types
from mcp import Client
from mcp.shared.subscriptions import event_to_notification
from pydantic import ValidationError

from toolroute.downstream.era import list_expiry_s, modern
from toolroute.downstream.failure import first_line
from toolroute.sdk import list_tools_leniently

__all__ = ["MAX_PAGES", "LastListing", "ListedServer", "Pages", "listen", "merged", "read_pages"]

log = logging.getLogger(__name__)

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


@dataclass(frozen=True, slots=True)
class Pages:
    """What one session listed."""

    tools: list[types.Tool]
    skipped: dict[str, str]
    """The tools left out (their schema is malformed), and why."""
    cut: str | None
    """Why the listing was cut short (a cursor that repeats or never ends), if it was."""
    lifetime: tuple[float | None, str | None] | None
    """A 2026-07-28 listing's lifetime in seconds and cache scope, as its last page said
    (None: a handshake-era listing, which says neither)."""


async def read_pages(
    c: Client,
    page_timeout_s: float | None = None,
    on_page: Callable[[int], None] | None = None,
) -> Pages:
    """Every tool the session ``c`` lists, following ``next_cursor``, each page within
    ``page_timeout_s`` (TimeoutError beyond), and ``on_page(tools so far)`` after each."""
    tools: list[types.Tool] = []
    names: set[str] = set()
    cursor: str | None = None
    seen: set[str] = set()
    skipped: dict[str, str] = {}
    cut: str | None = None
    lifetime: tuple[float | None, str | None] | None = None
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
            lifetime = (list_expiry_s(page), getattr(page, "cache_scope", None))
        if cursor is None:
            break
        if cursor in seen:
            cut = f"its tools/list cursor repeated after {page_number} pages"
            break
        seen.add(cursor)
    else:
        cut = f"its tools/list cursor did not end in {MAX_PAGES} pages"
    return Pages(tools, skipped, cut, lifetime)


def merged(
    tools: list[types.Tool], other: list[types.Tool], before: Mapping[str, types.Tool]
) -> list[types.Tool]:
    """One listing of two processes of a server: a tool as ``other`` lists it where that
    differs from ``before`` (the last listing) and ``tools`` does not; the tools only
    ``other`` lists added. So a change either process made counts."""
    theirs = {t.name: t for t in other}
    out = [theirs[t.name] if t.name in theirs and t == before.get(t.name) else t for t in tools]
    names = {t.name for t in tools}
    return out + [t for t in other if t.name not in names]


class LastListing:
    """What one server's last listing was: the tools as listed, what it left out or cut short
    (each warned of once, not at every re-list), and when its lifetime (a 2026-07-28 list's
    ``ttlMs``) runs out."""

    def __init__(self, server: str) -> None:
        self.server = server
        self.tools: dict[str, types.Tool] = {}
        """The tools as last listed, by name."""
        self._skipped: dict[str, str] = {}
        """Tools left out of the last listing (their schema is malformed), and why."""
        self._cut: str | None = None  # why the last listing was cut short
        self._stale_at: float | None = None
        self._listed = anyio.Event()  # a list with a lifetime came: (re)arm its expiry

    def took(self, pages: Pages, kept: int, ttl_s: float | None) -> None:
        """A listing of ``kept`` tools was read as ``pages``, fresh for ``ttl_s`` (None: no
        hint): warn of what it cut or left out, unless the listing before did already."""
        if pages.cut is not None and self._cut != pages.cut:  # once, not on every re-list
            log.warning("server %s: %s; its first %d tools are kept", self.server, pages.cut, kept)
        self._cut = pages.cut
        for tool, why in pages.skipped.items():
            if self._skipped.get(tool) != why:  # once per tool and reason, not every re-list
                log.warning("server %s: tool %r skipped: %s", self.server, tool, why)
        self._skipped = pages.skipped
        if ttl_s is not None:
            self._stale_at = anyio.current_time() + ttl_s
            self._listed.set()

    async def expiry(self, stale: Callable[[], None]) -> None:
        """Call ``stale`` whenever the last listing's lifetime runs out (downstream/era.py)."""
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
                stale()


async def listen(server: str, client: Client, handle: Callable[[Any], Awaitable[None]]) -> None:
    """A 2026-07-28 server's list changes come on a ``subscriptions/listen`` stream (there is no
    session to push them on): each is handled as the notification it replaces."""
    try:
        async with client.listen(
            tools_list_changed=True, prompts_list_changed=True, resources_list_changed=True
        ) as changes:
            async for event in changes:
                await handle(event_to_notification(event, {}))
    except Exception as e:  # a server without listen: re-listed on the interval only
        log.info("server %s: no change notifications (%s)", server, first_line(e))
