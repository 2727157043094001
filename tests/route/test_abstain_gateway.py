"""`toolroute serve` over stdio in front of two real servers (PyPI mcp-server-time and
mcp-server-git), with the bundled embedding model and the shipped abstention model: a need
neither server can meet is answered "no tool fits" with the nearest servers, a need one
serves is answered with its tools, one whose topic a server owns but whose operation it
lacks gets the tools with a caution, and `abstain = "off"` in toolroute.toml ranks both."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import TIME_MAIN, TOOLROUTE

pytestmark = pytest.mark.integration

FAR = "Order a large pepperoni pizza for delivery to my flat"
DOUBT = "Delete the branch called old-feature"
"""mcp-server-git creates, lists and switches branches but deletes none. (Over run 2, the default
before run 4e, this near miss was answered plainly and the test asked "Stash my uncommitted
changes", which run 4e answers with `git_commit` and no caution; docs/training-data.md lists such
misses among what the models get wrong.)"""


def _config(tmp_path: Path, abstain: str) -> Path:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    servers: dict[str, Any] = {
        "time": {"command": sys.executable, "args": ["-c", TIME_MAIN]},
        "git": {
            "command": sys.executable,
            "args": ["-m", "mcp_server_git", "--repository", str(repo)],
        },
    }
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    (tmp_path / "toolroute.toml").write_text(
        f'[toolroute]\nstore = "{tmp_path / "store"}"\nabstain = "{abstain}"\n'
    )
    return path


def _find(config: Path, *queries: str) -> list[dict[str, Any]]:
    # the whole environment: the SDK passes only a safe few variables by default, and a
    # checkout's PYTHONPATH decides which toolroute serves
    params = StdioServerParameters(
        command=str(TOOLROUTE), args=["serve", "--config", str(config)], env=dict(os.environ)
    )
    out: list[dict[str, Any]] = []

    async def main() -> None:
        with anyio.fail_after(240):
            async with Client(params, read_timeout_seconds=120) as c:
                for q in queries:
                    r = await c.call_tool("find_tools", {"query": q, "k": 3})
                    assert not r.is_error and json.loads(r.content[0].text) == (  # type: ignore[union-attr]
                        r.structured_content
                    )
                    out.append(r.structured_content or {})

    anyio.run(main)
    return out


def test_find_tools_says_no_tool_fits_for_a_need_no_server_meets(tmp_path: Path) -> None:
    far, near, doubt = _find(
        _config(tmp_path, "default"), FAR, "what time is it in Tokyo right now", DOUBT
    )
    assert far["candidates"] == [] and far["no_tool_fits"] is True
    assert set(far["nearest_servers"]) <= {"time", "git"} and far["hint"]
    assert "time__get_current_time" in [c["name"] for c in near["candidates"]]
    assert "no_tool_fits" not in near and "doubtful_fit" not in near
    # mcp-server-git deletes no branch: its tools go out, with the caution that they may not do it
    assert doubt["candidates"][0]["name"].startswith("git__")
    assert doubt["doubtful_fit"] is True and doubt["p_fits"] < 0.5 and doubt["hint"]


def test_abstain_off_in_the_settings_ranks_every_need(tmp_path: Path) -> None:
    (far,) = _find(_config(tmp_path, "off"), FAR)
    assert far["candidates"] and "no_tool_fits" not in far
