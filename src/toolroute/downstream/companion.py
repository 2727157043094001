"""The handshake *companion* of a 2026-07-28 session: a second, handshake-era session to the same
server (for stdio, a second process), for a server of both eras whose code asks the client by
request (downstream/era.py says why). Opened on first need, from a task of the session's own
task group, and held until that session dies; after a refusal (a server that speaks 2026-07-28
only) or a failure, not tried again until the next session."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack

import anyio
import anyio.abc
from mcp import Client

from toolroute.downstream.era import handshake_refused, modern
from toolroute.downstream.failure import first_line
from toolroute.sdk import without_envelope

__all__ = ["Companion"]

log = logging.getLogger(__name__)

Connect = Callable[[AsyncExitStack], Awaitable[Client]]
"""A handshake-era client of the server, not yet entered; what it opens is closed with the
stack. Called in the task that holds the companion."""


class Companion:
    """The handshake companion of one server's 2026-07-28 sessions."""

    def __init__(self, server: str, connect: Connect) -> None:
        self.server = server
        self._connect = connect
        self.client: Client | None = None
        """The handshake session beside a 2026-07-28 one, while open."""
        self.refused = False
        """The server refused the handshake (2026-07-28 only), or the companion failed."""
        self._lock = anyio.Lock()

    def reset(self) -> None:
        """The session ended: the next one asks again."""
        self.client, self.refused = None, False

    async def of(self, c: Client, tg: anyio.abc.TaskGroup | None, dead: anyio.Event) -> Client:
        """The companion of the 2026-07-28 session ``c`` (whose tasks are ``tg``, and whose
        death ``dead`` says), opened on first need (``c`` itself when the server refuses the
        handshake, or ``c`` is not 2026-07-28)."""
        if not modern(c) or self.refused:
            return c
        if self.client is None:
            async with self._lock:
                if self.client is None and not self.refused and tg is not None:
                    try:
                        await tg.start(self._hold, dead)
                    except Exception as e:  # 2026-07-28 only, or unreachable a second time
                        self.refused = True
                        if not handshake_refused(e):
                            log.warning("server %s: no handshake session (%s)", self.server,
                                        first_line(e))  # fmt: skip
        return self.client or c

    async def _hold(self, dead: anyio.Event, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        started = False
        try:
            async with AsyncExitStack() as stack, await self._connect(stack) as client:
                without_envelope(client)
                self.client = client
                started = True
                task_status.started()
                await dead.wait()
        except Exception as e:  # after the start: its failure stays with it
            if not started:
                raise
            log.warning("server %s: the handshake session ended: %s", self.server, first_line(e))
        finally:
            self.client = None
