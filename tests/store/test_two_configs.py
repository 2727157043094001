"""A store knows its config (real `toolroute sync` / `route` processes over real servers):
``--store DIR`` or ``$TOOLROUTE_STORE`` shared by two configs keeps each config's catalog in
a folder of its own, so each answers with its own servers' tools; a store named in two
configs' toolroute.toml (one database) refuses the second config in one line naming both; a
new store's folders are 0700 and its database 0600."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, TIME_MAIN, TOOLROUTE

pytestmark = pytest.mark.integration

LATCH = REPO / "tests" / "fixtures" / "latch_server.py"


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TOOLROUTE), *args],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
        check=False,
    )


def _configs(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    time_server = {"command": sys.executable, "args": ["-c", TIME_MAIN]}
    latch = {"command": sys.executable, "args": [str(LATCH), str(tmp_path)]}
    (a / "servers.json").write_text(json.dumps({"mcpServers": {"time": time_server}}))
    (b / "servers.json").write_text(json.dumps({"mcpServers": {"latch": latch}}))
    return a / "servers.json", b / "servers.json"


def _route(config: Path, env: dict[str, str]) -> set[str]:
    r = _run("route", "what time is it, or hold a reservation", "--config", str(config),
             "-k", "10", "--json", env=env)  # fmt: skip
    assert r.returncode == 0, r.stderr
    return {row["server"] for row in json.loads(r.stdout)}


@pytest.mark.parametrize("how", ["--store", "TOOLROUTE_STORE"])
def test_two_configs_sharing_a_store_directory_each_answer_with_their_own_tools(
    tmp_path: Path, how: str
) -> None:
    a, b = _configs(tmp_path)
    shared = tmp_path / "shared" / "store"
    env = {"TOOLROUTE_STORE": str(shared)} if how == "TOOLROUTE_STORE" else {}
    flag = ["--store", str(shared)] if how == "--store" else []
    for config in (a, b):
        r = _run("sync", "--config", str(config), "--json", *flag, env=env)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["removed"] == 0  # the other config's tools are not touched
    if flag:
        env = {"TOOLROUTE_STORE": str(shared)}  # route reads the same store through the env
    assert _route(a, env) == {"time"}
    assert _route(b, env) == {"latch"}
    # created private: folders 0700, the database 0600
    dbs = list(shared.rglob("toolroute.db"))
    assert len(dbs) == 2
    for db in dbs:
        assert stat.S_IMODE(db.stat().st_mode) == 0o600, db
        for folder in [p for p in db.parents if shared.parent in (p, *p.parents)][:-1]:
            assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


def test_a_store_named_by_two_configs_refuses_the_second_in_one_line(tmp_path: Path) -> None:
    a, b = _configs(tmp_path)
    shared = tmp_path / "one-database"
    for config in (a, b):
        config.with_name("toolroute.toml").write_text(
            f"[toolroute]\nstore = {json.dumps(str(shared))}\n"
        )
    r = _run("sync", "--config", str(a))
    assert r.returncode == 0, r.stderr
    for command in (["sync"], ["route", "what time is it"], ["status"]):
        r = _run(*command, "--config", str(b))
        assert r.returncode == 2, (command, r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
        assert lines[0] == (
            f"error: store {shared} holds the catalog of {a}, not of {b}: give servers.json "
            "its own store (--store, or store = in its toolroute.toml)"
        )
    assert _route(a, {}) == {"time"}  # the first config's catalog is untouched
