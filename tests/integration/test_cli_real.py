"""The README's main job end to end with the real model: `toolroute demo` and `route`."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from toolroute import cli


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
