"""What the gateway reports of itself: each downstream server's state now, the tools held in
quarantine, and what the gateway fails to write (:class:`Faults`: the store, the events log,
the status file). ``toolroute status``, the ``toolroute://status`` resource and the status
page show one :func:`snapshot`; :mod:`toolroute.gateway.ops.status` writes it to
``status.json`` in the store whenever it changes.

A snapshot holds, per server: ``status`` (starting, up, down, restarting, stopped), ``error``
(why it is not up: the connect error, or ``exited with code N: <last stderr line>``),
``exit_code``, ``restarts``, ``tools`` (listed at the last sync), ``changed_at`` (the last
state change, Unix time); plus the tools in quarantine, the gateway's pid and, under
``faults``, what the gateway cannot write right now (``{"store": "write failed: disk full
(since …)"}``), and under ``config`` a refused reload or ``[auth]`` turned off.
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

from toolroute.downstream.servers import Downstreams
from toolroute.errors import ErrorCode, error_payload

__all__ = [
    "Faults",
    "ServerState",
    "describe_failure",
    "server_states",
    "snapshot",
    "store_failed",
]

log = logging.getLogger(__name__)


def describe_failure(e: BaseException) -> str:
    """Why a write failed, in words safe to show any client: no file path (an OSError's
    text names the file), ``disk full`` for ENOSPC and SQLite's "database or disk is full"."""
    if isinstance(e, OSError):
        if e.errno == errno.ENOSPC:
            return "disk full"
        return e.strerror or errno.errorcode.get(e.errno or 0, type(e).__name__)
    text = str(e)
    if isinstance(e, sqlite3.Error) and "disk is full" in text:
        return "disk full"
    if isinstance(e, sqlite3.Error):
        return text.splitlines()[0][:200] if text else type(e).__name__
    return type(e).__name__  # a driver's text may name hosts or files


class Faults:
    """What the gateway failed to write (store, events log, status file), by part: logged
    once per distinct failure (not once per call: a full disk fails every call), shown in
    the status snapshot until a write of that part succeeds again."""

    def __init__(self) -> None:
        self._now: dict[str, tuple[str, float]] = {}
        self.on_change: Callable[[], None] | None = None  # what is failing changed
        self.config: dict[str, str] = {}
        """What the operator must know about the running config (a reload refused, ``[auth]``
        turned off), shown under ``config`` in the snapshot."""

    def note_config(self, part: str, line: str | None) -> None:
        """Show ``line`` under ``config.<part>`` in the status (None: clear it)."""
        before = self.config.get(part)
        if line is None:
            self.config.pop(part, None)
        else:
            self.config[part] = line
        if before != line and self.on_change is not None:
            self.on_change()

    def failed(self, part: str, e: BaseException) -> str:
        """Note that writing ``part`` failed with ``e``; the line shown in the status."""
        why = describe_failure(e)
        if self._now.get(part, ("", 0.0))[0] != why:
            log.error("%s: write failed: %s; skipped until it works again (logged once)", part, e)
            self._now[part] = (why, time.time())
            if self.on_change is not None:
                self.on_change()
        return f"write failed: {why}"

    def ok(self, part: str) -> None:
        if self._now.pop(part, None) is not None:
            log.warning("%s: writing works again", part)
            if self.on_change is not None:
                self.on_change()

    @contextmanager
    def audit(self, part: str) -> Iterator[None]:
        """An audit write (routing event, events log, outcome): a failure is noted and
        skipped, never raised to the caller."""
        try:
            yield
        except Exception as e:  # an audit trail must never fail the agent's call
            self.failed(part, e)
        else:
            self.ok(part)

    def now(self) -> dict[str, str]:
        """``{part: "write failed: <why> (since <UTC time>)"}`` of every part failing now."""
        return {
            part: f"write failed: {why} (since {_utc(since)})"
            for part, (why, since) in sorted(self._now.items())
        }


def store_failed(faults: Faults, e: BaseException) -> dict[str, Any]:
    """What an agent reads when the gateway's own store or disk fails its request (the
    ``isError`` result's JSON): no path, what to do next."""
    line = faults.failed("store", e)
    return error_payload(
        ErrorCode.STORE_FAILED,
        f"the gateway's store failed: {line.removeprefix('write failed: ')}",
        hint="a problem on the gateway's machine, not in your request: try again later "
        "or tell the user (toolroute status shows it)",
    )


def _utc(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


@dataclass(frozen=True, slots=True)
class ServerState:
    """One downstream server as the gateway sees it now."""

    name: str
    status: str
    error: str | None
    exit_code: int | None
    restarts: int
    tools: int | None
    changed_at: float
    fix: str | None = None
    """The command that makes the server usable again, when the operator must act
    (``toolroute auth NAME …``: its OAuth sign-in lapsed or never happened)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def server_states(downstreams: Downstreams) -> list[ServerState]:
    return [
        ServerState(
            d.name,
            d.status,
            d.error,
            d.exit_code,
            d.restarts,
            d.tools,
            d.changed_at,
            fix=d.auth.fix if d.auth is not None and d.sign_in and d.status != "up" else None,
        )  # fmt: skip
        for d in downstreams.servers.values()
    ]


def snapshot(
    downstreams: Downstreams,
    held: dict[str, dict[str, Any]] | None = None,
    *,
    running: bool = True,
    faults: Faults | None = None,
) -> dict[str, Any]:
    """The JSON ``toolroute status`` prints: servers, quarantined tools, pid, what the
    gateway cannot write (``faults``, only when something fails), and the downstreams' notes
    (``names``, ``indexing``: only while they say something)."""
    out: dict[str, Any] = {
        "pid": os.getpid(),
        "running": running,
        "servers": {s.name: s.to_dict() for s in server_states(downstreams)},
        "quarantined": held or {},
    }
    failing = faults.now() if faults is not None else {}
    if failing:
        out["faults"] = failing
    if faults is not None and faults.config:
        out["config"] = dict(sorted(faults.config.items()))
    out.update((section, dict(notes)) for section, notes in downstreams.notes.items() if notes)
    return out
