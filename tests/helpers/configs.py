"""A gateway's configuration files, as the tests write them: ``servers.json`` and
``toolroute.toml`` in one folder."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.conftest import TIME_MAIN

TIME_SERVER = {"command": sys.executable, "args": ["-c", TIME_MAIN]}
"""The reference time server's entry (UTC)."""


def write_config(
    directory: Path, servers: Mapping[str, Any], *, store: str | Path | None = None, **settings: Any
) -> Path:
    """``servers`` in ``directory/servers.json`` and, in ``toolroute.toml``, the store (default
    ``directory/store``), no call gate and ``settings`` (TOML values); the servers file's path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "servers.json"
    path.write_text(json.dumps({"mcpServers": dict(servers)}))
    where = str(store if store is not None else directory / "store")
    lines = [f"store = {json.dumps(where)}", "call_gate = false"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in settings.items()]
    (directory / "toolroute.toml").write_text("[toolroute]\n" + "\n".join(lines) + "\n")
    return path
