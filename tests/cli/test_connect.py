"""`toolroute connect` / `disconnect` on sample client configs in a temporary home."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from toolroute import cli
from toolroute.config import load_config

TIME = {"command": "uvx", "args": ["mcp-server-time"]}
GIT = {"command": "uvx", "args": ["mcp-server-git", "--repository", "."], "env": {"A": "1"}}


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME, XDG_CONFIG_HOME, APPDATA and the working directory inside tmp_path: nothing
    here may read or write the real home."""
    home = tmp_path / "home"
    (home / "work").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("USERPROFILE", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("APPDATA", str(home / "AppData" / "Roaming"))
    monkeypatch.chdir(home / "work")
    return home


def _run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(cli.main, list(args))
    return res.exit_code, res.stdout, res.stderr


def _write(path: Path, data: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path


def _read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _claude_desktop(home: Path) -> Path:
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    if sys.platform == "win32":
        return home / "AppData" / "Roaming" / "Claude" / "claude_desktop_config.json"
    return home / ".config" / "Claude" / "claude_desktop_config.json"


def _vscode_user(home: Path) -> Path:
    base = {"darwin": home / "Library" / "Application Support"}.get(sys.platform, home / ".config")
    return base / "Code" / "User" / "mcp.json"


CASES = [
    ("claude", _claude_desktop, "mcpServers", {"globalShortcut": "Ctrl+Space"}, None),
    ("cursor", lambda h: h / ".cursor" / "mcp.json", "mcpServers", {}, None),
    ("vscode", _vscode_user, "servers", {"inputs": []}, "stdio"),
    ("claude-code", lambda h: h / ".claude.json", "mcpServers", {"numStartups": 3}, "stdio"),
]


@pytest.mark.parametrize(("client", "where", "key", "other", "type_"), CASES)
def test_connect_moves_the_servers_and_leaves_one_toolroute_entry(
    home: Path, client: str, where: Any, key: str, other: dict[str, Any], type_: str | None
) -> None:
    config = _write(where(home), {**other, key: {"time": TIME, "git": GIT}})
    original = config.read_text()
    code, out, err = _run("connect", client)
    assert code == 0, err
    data = _read(config)
    assert {k: v for k, v in data.items() if k != key} == other  # the rest is kept
    (entry,) = data[key].values()
    assert list(data[key]) == ["toolroute"]
    assert Path(entry["command"]).is_absolute()
    assert entry["args"][-3:-1] == ["serve", "--config"]
    assert entry.get("type") == type_
    servers_file = Path(entry["args"][-1])
    assert servers_file.is_relative_to(home)  # toolroute's per-user config dir, in HOME
    assert _read(servers_file) == {"mcpServers": {"time": TIME, "git": GIT}}
    assert set(load_config(servers_file).servers) == {"time", "git"}
    (backup,) = config.parent.glob(f"{config.name}.*.bak")
    assert backup.read_text() == original
    assert f"toolroute sync --config {servers_file}" in err


def test_connect_twice_changes_nothing_and_never_nests_toolroute(home: Path) -> None:
    config = _write(home / ".cursor" / "mcp.json", {"mcpServers": {"time": TIME}})
    assert _run("connect", "cursor")[0] == 0
    after_first = config.read_text()
    code, out, err = _run("connect", "cursor")
    assert code == 0 and out == ""
    assert "already connected" in err
    assert config.read_text() == after_first
    assert len(list(config.parent.glob("*.bak"))) == 1
    # a server added to the client later joins the others behind toolroute
    data = _read(config)
    data["mcpServers"]["git"] = GIT
    _write(config, data)
    assert _run("connect", "cursor")[0] == 0
    (entry,) = _read(config)["mcpServers"].values()
    assert _read(Path(entry["args"][-1]))["mcpServers"] == {"time": TIME, "git": GIT}


def test_dry_run_prints_the_diff_of_every_file_and_writes_nothing(home: Path) -> None:
    config = _write(home / ".cursor" / "mcp.json", {"mcpServers": {"time": TIME}})
    before = config.read_text()
    code, out, err = _run("connect", "cursor", "--dry-run", "--servers-file", "s.json")
    assert code == 0, err
    assert config.read_text() == before and not Path("s.json").exists()
    assert not list(config.parent.glob("*.bak"))
    assert "--- /dev/null\n+++ s.json\n" in out  # the new servers file
    assert f"--- {config}\n+++ {config}\n" in out
    assert '-    "time": {' in out and '+    "toolroute": {' in out


def test_disconnect_puts_the_servers_back(home: Path) -> None:
    config = _write(
        home / ".claude.json", {"numStartups": 3, "mcpServers": {"time": TIME, "git": GIT}}
    )
    original = _read(config)
    assert _run("connect", "claude-code")[0] == 0
    code, out, err = _run("connect", "claude-code", "--undo", "--dry-run")
    assert code == 0 and '+    "time": {' in out
    code, _, err = _run("disconnect", "claude-code")
    assert code == 0, err
    assert _read(config) == original
    backups = sorted(home.glob(".claude.json.*.bak"))  # connect's and disconnect's, both kept
    assert len(backups) == 2 and original in [_read(b) for b in backups]
    code, _, err = _run("disconnect", "claude-code")
    assert code == 0 and "not connected" in err


def test_workspace_files_are_preferred_and_config_file_names_any_other(home: Path) -> None:
    workspace = _write(Path(".vscode") / "mcp.json", {"servers": {"time": TIME}})
    assert _run("connect", "vscode")[0] == 0
    assert list(_read(workspace)["servers"]) == ["toolroute"]
    project = _write(home / "elsewhere" / ".mcp.json", {"mcpServers": {"git": GIT}})
    assert _run("connect", "claude-code", "--config-file", str(project))[0] == 0
    assert list(_read(project)["mcpServers"]) == ["toolroute"]
    assert not (home / ".claude.json").exists()


def test_a_client_without_servers_is_one_line_exit_2(home: Path) -> None:
    code, _, err = _run("connect", "cursor")
    assert code == 2 and err.strip() == (
        f"error: {home / '.cursor' / 'mcp.json'}: no such file: the client has no servers to "
        "connect"
    )
    _write(home / ".cursor" / "mcp.json", {"mcpServers": {}})
    code, _, err = _run("connect", "cursor")
    assert code == 2 and "no servers to put behind toolroute" in err
