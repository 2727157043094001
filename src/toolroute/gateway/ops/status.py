"""``status.json`` in the store: the gateway's :func:`~toolroute.gateway.health.snapshot`,
written whenever it changes and read by ``toolroute status`` (whether the gateway that wrote
it still runs, too)."""

from __future__ import annotations

import json
import os
from contextlib import suppress
from pathlib import Path
from typing import Any

from toolroute.gateway.health import Faults
from toolroute.store.base import open_private, private_dir

__all__ = ["STATUS_FILE", "gateway_alive", "read_status", "write_status"]

STATUS_FILE = "status.json"


def write_status(store_dir: Path, status: dict[str, Any], faults: Faults | None = None) -> bool:
    """Replace ``status.json`` atomically (a reader never sees half a file). With ``faults``,
    a failed write (full disk, read-only directory) is noted there and False returned: the
    gateway keeps serving without its status file."""
    tmp = store_dir / f".{STATUS_FILE}.{os.getpid()}"
    try:
        private_dir(store_dir)
        tmp.unlink(missing_ok=True)  # a left-over keeps its mode: made anew, 0600
        with os.fdopen(open_private(tmp, os.O_WRONLY | os.O_EXCL), "w", encoding="utf-8") as f:
            f.write(json.dumps(status, indent=1, sort_keys=True))
        tmp.replace(store_dir / STATUS_FILE)
    except OSError as e:
        if faults is None:
            raise
        with suppress(OSError):  # half a file must not hold on to the little space left
            tmp.unlink(missing_ok=True)
        faults.failed("status file", e)
        return False
    if faults is not None:
        faults.ok("status file")
    return True


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
