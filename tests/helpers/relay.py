"""Configs for the relay tests: a gateway over the conformance fixture server (pass-through or
meta-tools), shared by the relay and access-probe tests."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.fixtures import conformance_server as fixture

FIXTURE = Path(fixture.__file__)


def relay_config(tmp: Path, servers: dict[str, Any], expose: str) -> Path:
    """servers.json and toolroute.toml in ``tmp``: the call gate off, ``expose`` as given."""
    path = tmp / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    (tmp / "toolroute.toml").write_text(
        f'[toolroute]\nstore = "{tmp / "store"}"\ncall_timeout_s = 20\nexpose = "{expose}"\n'
        "call_gate = false\n"
    )
    return path


def conformance_servers(copies: int = 1) -> dict[str, Any]:
    """One or two copies of the conformance fixture server (``conformance``, ``twin``)."""
    names = ["conformance", "twin"][:copies]
    return {n: {"command": sys.executable, "args": [str(FIXTURE)]} for n in names}
