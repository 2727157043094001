"""A deeply nested config, settings, catalog or queries file ends in one line and exit 2, not a
RecursionError traceback (Python's parsers recurse once per level)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import TOOLROUTE

pytestmark = pytest.mark.integration

DEEP = "[" * 100_000 + "]" * 100_000


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    return subprocess.run(
        [str(TOOLROUTE), *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env=env,
        check=False,
    )


def one_line_error(r: subprocess.CompletedProcess[str], path: Path) -> None:
    assert r.returncode == 2, r.stderr[-2000:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert lines[0].startswith(f"error: {path}: nested too deeply to read (arrays or objects over")


def test_a_deeply_nested_servers_file_is_one_line(tmp_path: Path) -> None:
    p = tmp_path / "servers.json"
    p.write_text('{"mcpServers": {"a": {"command": "x", "args": ' + DEEP + "}}}")
    one_line_error(run("serve", "--config", str(p)), p)


def test_a_deeply_nested_settings_file_is_one_line(tmp_path: Path) -> None:
    p = tmp_path / "servers.json"
    p.write_text('{"mcpServers": {"a": {"command": "x"}}}')
    (tmp_path / "toolroute.toml").write_text("[toolroute]\npinned = " + DEEP + "\n")
    one_line_error(run("serve", "--config", str(p)), tmp_path / "toolroute.toml")


def test_a_deeply_nested_catalog_is_one_line(tmp_path: Path) -> None:
    p = tmp_path / "catalog.json"
    p.write_text('{"servers": ' + DEEP + "}")
    one_line_error(run("route", "x", "--catalog", str(p), "--store", str(tmp_path)), p)
