"""The README's main job end to end with the real model: `toolroute demo` and `route`."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner
from rich.console import Console

import toolroute.cli.render
from tests.conftest import TIME_MAIN
from toolroute import cli

pytestmark = pytest.mark.integration


def test_demo_routes_the_example_requests(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli.main, ["demo", "--store", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "get_current_time" in res.stdout or "convert_time" in res.stdout
    assert "git_" in res.stdout


def test_route_over_demo_catalog_finds_the_time_tool(tmp_path: Path) -> None:
    res = CliRunner().invoke(
        cli.main,
        [
            "route",
            "what time is it in Tokyo",
            "--store",
            str(tmp_path),
            "--json",
            "-k",
            "3",
            "--schemas",
        ],
    )
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert rows[0]["server"] == "time"
    assert rows[0]["input_schema"]["type"] == "object"


def test_route_with_config_ranks_the_synced_servers_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The newcomer's path: sync a client config, then route over its servers (not the demo
    catalog, whose time server is named `time`)."""
    monkeypatch.delenv("TOOLROUTE_STORE", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "servers": {
                    "clock": {"type": "stdio", "command": sys.executable, "args": ["-c", TIME_MAIN]}
                }
            }
        )
    )
    screen = io.StringIO()  # a terminal: the cold index shows its progress bar
    monkeypatch.setattr(
        toolroute.cli.render, "stderr", Console(file=screen, force_terminal=True, width=100)
    )
    res = CliRunner().invoke(cli.main, ["sync", "--config", str(config)])
    assert res.exit_code == 0, res.output
    assert "embedding" in screen.getvalue()
    res = CliRunner().invoke(
        cli.main, ["route", "what time is it in Tokyo", "--config", str(config), "--json"]
    )
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert {r["server"] for r in rows} == {"clock"}
    assert rows[0]["tool"] == "get_current_time"


def test_serve_names_a_missing_binary_as_sync_does(tmp_path: Path) -> None:
    """serve runs on uvloop, whose spawn error carries no file name."""
    missing = tmp_path / "no-such-server"
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"gone": {"command": str(missing)}}}))
    env = {**os.environ, "TOOLROUTE_STORE": str(tmp_path / "store")}

    async def main() -> bytes:
        seen = b""
        cmd = [sys.executable, "-m", "toolroute.cli", "serve", "--config", str(config)]
        async with await anyio.open_process(cmd, env=env) as proc:
            assert proc.stderr is not None and proc.stdin is not None
            with anyio.fail_after(120):
                async for chunk in proc.stderr:
                    seen += chunk
                    if b"is down" in seen and b"\n" in seen.split(b"is down", 1)[1]:
                        break
                await proc.stdin.aclose()  # the client leaves: serve ends
                await proc.wait()
        return seen

    err = anyio.run(main).decode()
    down = [line for line in err.splitlines() if "is down" in line]
    assert down and all(line.endswith(f"command not found: {missing}") for line in down), err
