"""What adding a registry server writes and runs (registry/install.py), the write's lock and
its whole-file check, and `toolroute add` as the operator runs it (the CLI over a loopback
registry of real entries)."""

from __future__ import annotations

import copy
import json
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner
from filelock import FileLock

from tests.helpers.registry import entry_named, serve_registry
from toolroute.cli import main
from toolroute.errors import RegistryError
from toolroute.registry import install
from toolroute.registry.entry import parse_entry
from toolroute.registry.install import plan, write
from toolroute.settings import RegistrySettings

TIME = "io.github.modelcontextprotocol/time"
MEMORY = "io.github.modelcontextprotocol/memory"
AIRTABLE = "io.github.domdomegg/airtable-mcp-server"


def test_a_plan_pins_the_version_and_names_what_it_needs(tmp_path: Path) -> None:
    s = RegistrySettings()
    memory = plan(parse_entry(entry_named(MEMORY)), s, tmp_path)
    assert memory.runs == "npx -y @modelcontextprotocol/server-memory@2026.8.31"
    time = plan(parse_entry(entry_named(TIME)), s, tmp_path)
    assert time.runs == "uvx mcp-server-time==2026.10.19 --local-timezone UTC"
    assert time.server == "time" and not time.install
    airtable = plan(parse_entry(entry_named(AIRTABLE)), s, tmp_path)
    assert airtable.spec["env"] == {"AIRTABLE_API_KEY": "${AIRTABLE_API_KEY}"}  # never a value
    assert airtable.needs == ("AIRTABLE_API_KEY",)
    pip = plan(parse_entry(entry_named(TIME)), RegistrySettings(pypi_runner="pip"), tmp_path)
    assert pip.install[-1] == "mcp-server-time==2026.10.19"
    assert pip.spec["command"].startswith(str(tmp_path / "mcp-server-time-2026.10.19"))


def test_a_remote_is_added_as_its_url_with_headers_from_the_environment(tmp_path: Path) -> None:
    raw = copy.deepcopy(entry_named(TIME))
    raw["server"]["packages"] = []
    raw["server"]["remotes"] = [
        {
            "type": "streamable-http",
            "url": "https://time.example/mcp",
            "headers": [{"name": "Authorization", "isSecret": True, "isRequired": True}],
        }
    ]
    p = plan(parse_entry(raw), RegistrySettings(), tmp_path)
    assert p.spec == {
        "type": "http",
        "url": "https://time.example/mcp",
        "headers": {"Authorization": "${AUTHORIZATION}"},
    }


def test_an_argument_the_operator_must_choose_is_not_guessed(tmp_path: Path) -> None:
    raw = copy.deepcopy(entry_named(TIME))
    raw["server"]["packages"][0]["packageArguments"] = [
        {"type": "positional", "valueHint": "directory", "isRequired": True}
    ]
    with pytest.raises(RegistryError, match="needs directory chosen by you"):
        plan(parse_entry(raw), RegistrySettings(), tmp_path)


def _servers(tmp_path: Path) -> Path:
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"keep": {"command": "keep-server"}}}))
    return config


def test_two_adds_at_once_both_land(tmp_path: Path) -> None:
    config = _servers(tmp_path)
    plans = [
        plan(parse_entry(entry_named(n)), RegistrySettings(), tmp_path) for n in (TIME, MEMORY)
    ]
    threads = [threading.Thread(target=write, args=(config, p)) for p in plans]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(json.loads(config.read_text())["mcpServers"]) == {"keep", "time", "memory"}


def test_an_add_waits_for_the_lock_and_gives_up_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _servers(tmp_path)
    before = config.read_text()
    monkeypatch.setattr(install, "LOCK_TIMEOUT_S", 0.2)
    p = plan(parse_entry(entry_named(TIME)), RegistrySettings(), tmp_path)
    with FileLock(str(config) + ".lock"), pytest.raises(RegistryError, match="another toolroute"):
        write(config, p)
    assert config.read_text() == before


def test_an_add_that_would_break_the_config_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    config = _servers(tmp_path)
    (tmp_path / "toolroute.toml").write_text("[toolroute]\nk = 0\n")  # invalid already
    before = config.read_text()
    p = plan(parse_entry(entry_named(TIME)), RegistrySettings(), tmp_path)
    with pytest.raises(Exception, match="toolroute.k"):
        write(config, p)
    assert config.read_text() == before
    assert [f.name for f in tmp_path.iterdir() if f.name.endswith(".tmp")] == []


def test_a_name_taken_by_another_server_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"time": {"command": "other"}}}))
    p = plan(parse_entry(entry_named(TIME)), RegistrySettings(), tmp_path)
    with pytest.raises(RegistryError, match="has a server named time already"):
        write(config, p)


def _cli_config(tmp_path: Path, url: str | None, extra: str = "") -> Path:
    config = _servers(tmp_path)
    registry = f'[registry]\nurl = "{url}"\n{extra}' if url else ""
    store = json.dumps(str(tmp_path / "store"))
    (tmp_path / "toolroute.toml").write_text(f"[toolroute]\nstore = {store}\n{registry}")
    return config


def test_toolroute_add_shows_the_plan_asks_and_writes(tmp_path: Path) -> None:
    with serve_registry() as (url, _):
        config = _cli_config(tmp_path, url)
        args = ["add", f"{TIME}@2026.10.19", "--config", str(config)]
        refused = CliRunner().invoke(main, args, input="n\n")
        assert refused.exit_code == 1 and "time" not in json.loads(config.read_text())["mcpServers"]
        assert "would run: uvx mcp-server-time==2026.10.19 --local-timezone UTC" in refused.output
        done = CliRunner().invoke(main, args, input="y\n")
    assert done.exit_code == 0, done.output
    assert json.loads(config.read_text())["mcpServers"]["time"]["args"][0] == (
        "mcp-server-time==2026.10.19"
    )


def test_toolroute_add_refuses_a_version_the_registry_no_longer_serves(tmp_path: Path) -> None:
    with serve_registry() as (url, _):
        config = _cli_config(tmp_path, url)
        r = CliRunner().invoke(main, ["add", f"{TIME}@2025.1.1", "--config", str(config), "-y"])
    assert r.exit_code == 2
    assert r.output.strip().splitlines()[-1] == (
        f"error: {TIME}: the registry now serves version 2026.10.19, not 2025.1.1; add "
        f"{TIME}@2026.10.19 if you mean it"
    )


def test_toolroute_add_refuses_a_namespace_outside_the_allow_list(tmp_path: Path) -> None:
    with serve_registry() as (url, _):
        config = _cli_config(tmp_path, url, 'namespaces = ["io.github.modelcontextprotocol/*"]\n')
        r = CliRunner().invoke(main, ["add", AIRTABLE, "--config", str(config), "-y"])
    assert r.exit_code == 2 and "outside the allowed namespaces" in r.output
    assert "airtable" not in config.read_text()


def test_toolroute_add_refuses_a_version_changed_behind_its_pin(tmp_path: Path) -> None:
    with serve_registry() as (url, reg):
        config = _cli_config(tmp_path, url, "cache_ttl_s = 0\n")
        args = ["add", TIME, "--config", str(config), "--dry-run"]
        assert CliRunner().invoke(main, args).exit_code == 0  # seen (and pinned) once
        swapped = next(e for e in reg.entries if e["server"]["name"] == TIME)
        swapped["server"]["packages"][0]["identifier"] = "mcp-server-tlme"
        r = CliRunner().invoke(main, ["add", TIME, "--config", str(config), "-y"])
    assert r.exit_code == 2 and "changed since it was first seen" in r.output
    assert "time" not in json.loads(config.read_text())["mcpServers"]


def test_toolroute_add_without_a_registry_says_so_and_asks_nothing(tmp_path: Path) -> None:
    config = _cli_config(tmp_path, None)
    r = CliRunner().invoke(main, ["add", TIME, "--config", str(config), "-y"])
    assert r.exit_code == 2 and "no [registry] url" in r.output
