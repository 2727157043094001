"""Large results kept out of the agent's context: a preview now, the rest by handle and page.

A result whose JSON is larger than the preview size is stored here once and answered with its
first page and a handle; ``execute`` with ``{"handle", "page"}`` reads any page. The store is
bounded three ways: each handle expires after a time to live; one client's pages are bounded
by its quota, past which its own oldest handles go first; and all pages together are bounded
by the store's size, where a result that finds the store full of other clients' pages is
refused rather than stored by dropping theirs. A handle is readable only by its
:class:`Owner`: the bearer token's client, or the connection that made it (never a name a
client claims for itself). Nothing is written to disk.
"""

from __future__ import annotations

import secrets
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Owner", "Page", "Pages"]


@dataclass(frozen=True, slots=True, eq=False)
class Owner:
    """Who may read a handle, and whose quota it counts against.

    ``key`` names the quota (``token:<client>``, ``connection:<n>``, or ``anonymous`` for a
    2026-07-28 request with no token, which has no connection to bind to: its handles are
    read by whoever holds one, 96 random bits). ``connection`` holds the connection weakly:
    a closed connection's handles can never pass to a new one.
    """

    key: str
    connection: weakref.ref[Any] | None = None

    @classmethod
    def of(cls, client: str, connection: object | None) -> Owner:
        """The owner of a request: its bearer token's client, else its connection, else
        anonymous."""
        if client:
            return cls(f"token:{client}")
        if connection is not None:
            return cls(f"connection:{id(connection)}", weakref.ref(connection))
        return cls("anonymous")

    def same(self, other: Owner) -> bool:
        if self.key != other.key:
            return False
        if self.connection is None or other.connection is None:
            return self.connection is None and other.connection is None
        mine = self.connection()
        return mine is not None and mine is other.connection()


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a stored result, and where it sits in the whole."""

    handle: str
    page: int
    pages: int
    total_bytes: int
    text: str
    expires_in_s: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "handle": self.handle,
            "page": self.page,
            "pages": self.pages,
            "total_bytes": self.total_bytes,
            "text": self.text,
            "expires_in_s": round(self.expires_in_s),
        }


@dataclass(slots=True)
class _Stored:
    owner: Owner
    chunks: list[str]
    size: int
    total: int
    expires: float = field(default=0.0)


class Pages:
    """Stored results by handle: bounded in bytes per owner and in all, expiring, readable
    by their owner only."""

    def __init__(
        self,
        page_bytes: int,
        ttl_s: float,
        max_bytes: int,
        clock: Callable[[], float] = time.monotonic,
        owner_bytes: int | None = None,
    ) -> None:
        self.page_bytes = page_bytes
        self.ttl_s = ttl_s
        self.max_bytes = max_bytes
        self.owner_bytes = min(owner_bytes or max_bytes, max_bytes)
        self._clock = clock
        self._stored: OrderedDict[str, _Stored] = OrderedDict()
        self._bytes = 0
        self._by_owner: dict[str, int] = {}

    @property
    def bytes_held(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._stored)

    def put(self, owner: Owner, text: str) -> Page | None:
        """Keep ``text`` for ``owner``; its first page. A text larger than the owner's quota
        keeps only as many pages as fit (the page count says so); the owner's own oldest
        handles make room first. None: the store is full of other owners' pages."""
        self._expire()
        chunks = _split(text, self.page_bytes)
        size = sum(len(c.encode()) for c in chunks)
        while size > self.owner_bytes and len(chunks) > 1:
            size -= len(chunks.pop().encode())
        for handle, old in list(self._stored.items()):
            if self._by_owner.get(owner.key, 0) + size <= self.owner_bytes:
                break
            if old.owner.key == owner.key:
                self._drop(handle)
        if self._bytes + size > self.max_bytes:
            return None
        handle = "r_" + secrets.token_urlsafe(12)
        self._stored[handle] = _Stored(
            owner, chunks, size, len(text.encode()), self._clock() + self.ttl_s
        )
        self._bytes += size
        self._by_owner[owner.key] = self._by_owner.get(owner.key, 0) + size
        page = self.read(owner, handle, 0)
        assert page is not None  # just stored
        return page

    def held_by(self, owner: Owner) -> int:
        """Bytes of pages held against ``owner``'s quota."""
        return self._by_owner.get(owner.key, 0)

    def _drop(self, handle: str) -> None:
        old = self._stored.pop(handle)
        self._bytes -= old.size
        left = self._by_owner[old.owner.key] - old.size
        if left:
            self._by_owner[old.owner.key] = left
        else:
            del self._by_owner[old.owner.key]

    def read(self, owner: Owner, handle: str, page: int) -> Page | None:
        """Page ``page`` of ``handle`` (None: no such handle for this owner, or it expired)."""
        self._expire()
        stored = self._stored.get(handle)
        if stored is None or not stored.owner.same(owner) or not 0 <= page < len(stored.chunks):
            return None
        return Page(
            handle,
            page,
            len(stored.chunks),
            stored.total,
            stored.chunks[page],
            stored.expires - self._clock(),
        )

    def has(self, owner: Owner, handle: str) -> bool:
        self._expire()
        stored = self._stored.get(handle)
        return stored is not None and stored.owner.same(owner)

    def _expire(self) -> None:
        """Drop expired handles, and those of connections that closed."""
        now = self._clock()
        gone = [
            h
            for h, s in self._stored.items()
            if s.expires <= now or (s.owner.connection is not None and s.owner.connection() is None)
        ]
        for handle in gone:
            self._drop(handle)


def _split(text: str, page_bytes: int) -> list[str]:
    """``text`` in pages of at most ``page_bytes`` UTF-8 bytes (never splitting a character)."""
    chunks, start = [], 0
    while start < len(text):
        end = min(len(text), start + page_bytes)
        while len(text[start:end].encode()) > page_bytes and end > start + 1:
            end = start + max(1, (end - start) * 3 // 4)
        chunks.append(text[start:end])
        start = end
    return chunks or [""]
