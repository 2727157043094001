"""Large results kept out of the agent's context: a preview now, the rest by handle and page.

A result whose JSON is larger than the preview size is stored here once and answered with its
first page and a handle; ``execute`` with ``{"handle", "page"}`` reads any page. The store is
bounded twice: each handle expires after a time to live, and when all pages together pass the
store's size, the oldest handles go first. A handle is readable only by the session that made
it (another client guessing one learns nothing). Nothing is written to disk.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Page", "Pages"]


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
    owner: object
    chunks: list[str]
    size: int
    total: int
    expires: float = field(default=0.0)


class Pages:
    """Stored results by handle: bounded in bytes, expiring, readable by their owner only."""

    def __init__(
        self,
        page_bytes: int,
        ttl_s: float,
        max_bytes: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.page_bytes = page_bytes
        self.ttl_s = ttl_s
        self.max_bytes = max_bytes
        self._clock = clock
        self._stored: OrderedDict[str, _Stored] = OrderedDict()
        self._bytes = 0

    @property
    def bytes_held(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._stored)

    def put(self, owner: object, text: str) -> Page:
        """Keep ``text`` for ``owner``; its first page. A text larger than the whole store
        keeps only as many pages as fit (the page count says so)."""
        self._expire()
        chunks = _split(text, self.page_bytes)
        size = sum(len(c.encode()) for c in chunks)
        while size > self.max_bytes and len(chunks) > 1:
            size -= len(chunks.pop().encode())
        while self._stored and self._bytes + size > self.max_bytes:
            _, old = self._stored.popitem(last=False)
            self._bytes -= old.size
        handle = "r_" + secrets.token_urlsafe(12)
        self._stored[handle] = _Stored(
            owner, chunks, size, len(text.encode()), self._clock() + self.ttl_s
        )
        self._bytes += size
        page = self.read(owner, handle, 0)
        assert page is not None  # just stored
        return page

    def read(self, owner: object, handle: str, page: int) -> Page | None:
        """Page ``page`` of ``handle`` (None: no such handle for this owner, or it expired)."""
        self._expire()
        stored = self._stored.get(handle)
        if stored is None or not _same(stored.owner, owner) or not 0 <= page < len(stored.chunks):
            return None
        return Page(
            handle,
            page,
            len(stored.chunks),
            stored.total,
            stored.chunks[page],
            stored.expires - self._clock(),
        )

    def has(self, owner: object, handle: str) -> bool:
        self._expire()
        stored = self._stored.get(handle)
        return stored is not None and _same(stored.owner, owner)

    def _expire(self) -> None:
        now = self._clock()
        for handle in [h for h, s in self._stored.items() if s.expires <= now]:
            self._bytes -= self._stored.pop(handle).size


def _same(a: object, b: object) -> bool:
    """One owner: the same connection's state object, or the same client id."""
    return a is b or (isinstance(a, str) and a == b)


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
