"""All downstream servers: their owner tasks started and stopped together, and servers added,
removed and replaced one at a time while they run (live reconfiguration,
:mod:`toolroute.gateway.ops.reload`). One server's session and lifecycle is
:class:`~toolroute.downstream.session.Downstream`; its names are re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping

import anyio
import anyio.abc

from toolroute.downstream.callers import CallContext
from toolroute.downstream.listing import ListedServer
from toolroute.downstream.session import Downstream, DownstreamError

__all__ = ["CallContext", "Downstream", "DownstreamError", "Downstreams", "ListedServer"]


class Downstreams:
    """All downstream servers; ``async with downstreams.running():`` starts and stops their owners.
    While :meth:`run` runs, servers can be added, removed and replaced one at a time (live
    reconfiguration, :mod:`toolroute.gateway.ops.reload`)."""

    def __init__(self, servers: Mapping[str, Downstream]) -> None:
        self.servers = dict(servers)
        self._tg: anyio.abc.TaskGroup | None = None
        self._stopped = anyio.Event()
        self._retiring: set[Downstream] = set()
        self._changed = anyio.Event()
        self.notes: dict[str, dict[str, str]] = {}
        """What the status shows beside each server's state, by section (``names``: how
        colliding tool names were resolved; ``indexing``: each server's indexing progress)."""
        for d in self.servers.values():
            d.on_change = self.note_change

    def note_change(self) -> None:
        """Something the gateway follows changed (a server's tools, connection or status;
        servers call this): :meth:`wait_change` returns."""
        self._changed.set()

    def take_changes(self) -> bool:
        """Whether a change was noted since the last take; forgets it. Take before reading
        the servers' state, so a change made while it is read is not lost."""
        if not self._changed.is_set():
            return False
        self._changed = anyio.Event()
        return True

    async def wait_change(self, timeout_s: float) -> None:
        """Until a change is noted (at once if one is pending), at most ``timeout_s``."""
        with anyio.move_on_after(max(timeout_s, 0.0)):
            await self._changed.wait()

    def __getitem__(self, name: str) -> Downstream:
        return self.servers[name]

    async def run(
        self, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        async with anyio.create_task_group() as tg:
            for d in self.servers.values():
                tg.start_soon(d.run, name=f"downstream:{d.name}")
            tg.start_soon(self._stopped.wait)  # servers may join after the first ones left
            self._tg = tg
            task_status.started()
        self._tg = None

    def stop(self) -> None:
        self._stopped.set()
        for d in self.servers.values():
            d.stop()
        for d in self._retiring:  # replaced servers still draining: no grace at shutdown
            d.end_calls("the gateway is stopping")
            d.stop()

    def add(self, d: Downstream, grace_s: float = 0.0) -> None:
        """Start ``d``; a server of the same name is retired (its calls in flight have
        ``grace_s`` to finish, new calls go to ``d``)."""
        if self._tg is None:
            raise RuntimeError("the downstream servers are not running")
        old = self.servers.get(d.name)
        self.servers[d.name] = d
        d.on_change = self.note_change
        self.note_change()
        self._tg.start_soon(d.run, name=f"downstream:{d.name}")
        if old is not None:
            why = "the server was restarted with a new configuration while this call ran"
            self._retiring.add(old)
            self._tg.start_soon(self._retire, old, grace_s, why)

    async def _retire(self, d: Downstream, grace_s: float, why: str) -> None:
        try:
            await d.retire(grace_s, why)
        finally:
            self._retiring.discard(d)

    def remove(self, name: str) -> Downstream:
        """Stop one server now: its calls in flight end with ``unavailable``."""
        d = self.servers.pop(name)
        self.note_change()
        d.end_calls("the server was removed from the configuration while this call ran")
        d.stop()
        return d

    async def wait_connected(self, timeout_s: float) -> None:
        """Wait until every server is up or has failed at least once, at most ``timeout_s``."""
        with anyio.move_on_after(timeout_s):
            while any(d.status == "starting" for d in self.servers.values()):
                await anyio.sleep(0.05)
