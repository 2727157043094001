"""Each downstream server's state, in one place: what the running gateway knows, written to
``status.json`` in its store whenever it changes, read by ``toolroute status``.

A snapshot holds, per server: ``status`` (starting, up, down, restarting, stopped), ``error``
(why it is not up: the connect error, or ``exited with code N: <last stderr line>``),
``exit_code``, ``restarts``, ``tools`` (listed at the last sync), ``changed_at`` (the last
state change, Unix time); plus the tools in quarantine and the gateway's pid.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from toolroute.sources.pool import DownstreamPool

__all__ = ["STATUS_FILE", "ServerState", "gateway_alive", "read_status", "snapshot", "write_status"]

STATUS_FILE = "status.json"


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def server_states(pool: DownstreamPool) -> list[ServerState]:
    return [
        ServerState(d.name, d.status, d.error, d.exit_code, d.restarts, d.tools, d.changed_at)
        for d in pool.servers.values()
    ]


def snapshot(
    pool: DownstreamPool, held: dict[str, dict[str, Any]] | None = None, *, running: bool = True
) -> dict[str, Any]:
    """The JSON ``toolroute status`` prints: servers, quarantined tools, pid."""
    return {
        "pid": os.getpid(),
        "running": running,
        "servers": {s.name: s.to_dict() for s in server_states(pool)},
        "quarantined": held or {},
    }


def write_status(store_dir: Path, status: dict[str, Any]) -> None:
    """Replace ``status.json`` atomically (a reader never sees half a file)."""
    store_dir.mkdir(parents=True, exist_ok=True)
    tmp = store_dir / f".{STATUS_FILE}.{os.getpid()}"
    tmp.write_text(json.dumps(status, indent=1, sort_keys=True), encoding="utf-8")
    tmp.replace(store_dir / STATUS_FILE)


def read_status(store_dir: Path) -> dict[str, Any] | None:
    """The last snapshot a gateway wrote into ``store_dir`` (None: never)."""
    try:
        data = json.loads((store_dir / STATUS_FILE).read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def gateway_alive(status: dict[str, Any]) -> bool:
    """Whether the gateway that wrote ``status`` still runs."""
    pid = status.get("pid")
    if not status.get("running") or not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
