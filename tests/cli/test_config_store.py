"""A config is known by one path however it is reached (cli/common.py ``config_store``): from
two working directories, through ``dir/../dir`` or a symlinked folder it gets one store folder
(one quarantine, one set of approvals) and is never refused as another config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolroute.cli.common import config_store
from toolroute.config import load_config


def _config(folder: Path, toml: str = "") -> None:
    folder.mkdir(parents=True)
    servers = {"mcpServers": {"time": {"command": "true"}}}
    (folder / "servers.json").write_text(json.dumps(servers))
    if toml:
        (folder / "toolroute.toml").write_text(toml)


def _store(given: str, store: Path | None) -> object:
    return config_store(load_config(given), store, Path(given))


def test_one_config_reached_several_ways_gets_one_store_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _config(tmp_path / "dir")
    (tmp_path / "other").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "dir")
    root = tmp_path / "root"
    monkeypatch.chdir(tmp_path)
    first = _store("dir/servers.json", root)
    assert _store("dir/../dir/servers.json", root) == first
    assert _store("link/servers.json", root) == first
    monkeypatch.chdir(tmp_path / "other")
    assert _store("../dir/servers.json", root) == first
    monkeypatch.chdir(tmp_path / "dir")
    assert _store("servers.json", root) == first
    assert len(list((root / "gateways").iterdir())) == 1


def test_a_store_claimed_by_a_config_accepts_it_through_dot_dot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "claimed"
    _config(tmp_path / "dir", f"[toolroute]\nstore = {json.dumps(str(store))}\n")
    monkeypatch.chdir(tmp_path)
    assert _store("dir/servers.json", None) == store
    assert _store("dir/../dir/servers.json", None) == store  # the same config, not another
    monkeypatch.chdir(tmp_path / "dir")
    assert _store("./servers.json", None) == store
