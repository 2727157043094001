"""Sandbox slots shared fairly between clients: ``concurrent`` scripts at once across the
gateway, at most ``per_client`` of them one client's.

A client that fills its own share waits for one of its own scripts to end, never holding a
slot another client could use; a freed slot goes to the waiting client that runs the fewest
scripts (the longest waiting first among equals). So one client's slow or spinning scripts
cannot keep another's out for longer than one of that other client's own turns, however many
it sends.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable
from dataclasses import dataclass, field

import anyio

__all__ = ["FairSlots"]


@dataclass(slots=True)
class _Waiter:
    client: Hashable
    order: int
    granted: anyio.Event = field(default_factory=anyio.Event)


class FairSlots:
    """``total`` slots, at most ``per_client`` held by one client at a time."""

    def __init__(self, total: int, per_client: int) -> None:
        self.total = total
        self.per_client = max(1, min(per_client, total))
        self._held: dict[Hashable, int] = {}
        self._waiting: list[_Waiter] = []
        self._order = itertools.count()

    @property
    def in_use(self) -> int:
        return sum(self._held.values())

    def held(self, client: Hashable) -> int:
        """Slots ``client`` holds now."""
        return self._held.get(client, 0)

    async def acquire(self, client: Hashable) -> None:
        """Take one slot for ``client``, waiting first when none is free for it (the caller
        bounds the wait); :meth:`release` gives it back."""
        waiter = _Waiter(client, next(self._order))
        self._waiting.append(waiter)
        self._grant()
        try:
            await waiter.granted.wait()
        except BaseException:
            if waiter.granted.is_set():  # granted as it was cancelled: give it back
                self.release(client)
            else:
                self._waiting.remove(waiter)
            raise

    def release(self, client: Hashable) -> None:
        left = self._held[client] - 1
        if left:
            self._held[client] = left
        else:
            del self._held[client]
        self._grant()

    def _grant(self) -> None:
        """Give free slots to waiters: the client holding fewest first, then the oldest."""
        while self._waiting and self.in_use < self.total:
            ready = [w for w in self._waiting if self.held(w.client) < self.per_client]
            if not ready:
                return
            chosen = min(ready, key=lambda w: (self.held(w.client), w.order))
            self._waiting.remove(chosen)
            self._held[chosen.client] = self.held(chosen.client) + 1
            chosen.granted.set()
