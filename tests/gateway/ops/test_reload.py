"""What a config reload changes (gateway/ops/reload.py ``diff``) and how a bad config is refused."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from pathlib import Path

import anyio
import pytest

from toolroute.catalog.models import Catalog
from toolroute.config import GatewayConfig, load_config
from toolroute.downstream.servers import Downstreams
from toolroute.errors import ConfigError
from toolroute.gateway.ops.reload import (
    RESTART_FIELDS,
    SPEC_FIELDS,
    SWAPPED_FIELDS,
    TOKEN_FIELDS,
    Live,
    applied,
    check_safe,
    diff,
    reload_once,
)
from toolroute.gateway.shared import Shared
from toolroute.gateway.shell.server import Gateway
from toolroute.router import Router
from toolroute.settings import HttpTable, ToolrouteSettings

TOKEN = "t" * 20


def _config(tmp_path: Path, servers: dict[str, object], toml: str = "") -> Path:
    p = tmp_path / "servers.json"
    p.write_text(json.dumps({"mcpServers": servers}))
    (tmp_path / "toolroute.toml").write_text(toml)
    return p


def test_diff_names_added_removed_restarted_and_relisted_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RELOAD_TOKEN", TOKEN)
    servers = {"a": {"command": "x"}, "b": {"command": "y"}, "c": {"command": "z"}}
    old = load_config(_config(tmp_path, servers))
    new = load_config(
        _config(
            tmp_path,
            {
                "a": {"command": "x"},
                "b": {"command": "y", "args": ["-v"]},
                "d": {"url": "http://h"},
            },
            '[toolroute]\nk = 7\nstore = "elsewhere"\n'
            '[auth]\nbearer_token_env = "RELOAD_TOKEN"\n[tools."a__t"]\nhidden = true\n',
        )
    )
    change = diff(old, new)
    assert (change.added, change.removed, change.restarted, change.relisted) == (
        ("d",),
        ("c",),
        ("b",),
        ("a",),
    )
    assert change.tokens and change.gateway == ("k",) and change.needs_restart == ("store",)
    assert change.servers == {"a", "b", "d"}
    assert change.lines() == [
        "added server d",
        "removed server c",
        "restarted server b",
        "re-listed server a (curation or metadata changed)",
        "tokens and allow-lists reloaded",
        "k changed",
        "store changed: takes effect at the next start",
    ]


def test_a_call_timeout_change_restarts_every_server(tmp_path: Path) -> None:
    servers = {"a": {"command": "x"}, "b": {"command": "y"}}
    old = load_config(_config(tmp_path, servers))
    new = load_config(_config(tmp_path, servers, "[toolroute]\ncall_timeout_s = 5\n"))
    assert diff(old, new).restarted == ("a", "b")
    assert diff(old, old) == diff(new, new)
    assert not diff(old, old).lines()


def test_a_config_that_does_not_load_is_refused_in_one_line_and_the_old_one_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    old = load_config(_config(tmp_path, {"a": {"command": "x"}}))

    def broken() -> object:
        raise ConfigError(f"{tmp_path}/servers.json: invalid JSON at line 1 column 2: oops")

    live = Live(old, broken)  # type: ignore[arg-type]
    with caplog.at_level(logging.INFO, logger="toolroute.gateway.ops.reload"):
        assert anyio.run(reload_once, live, None, None) is None
    assert live.config is old and live.reloads == 0
    [record] = caplog.records
    assert record.levelno == logging.ERROR and "\n" not in record.getMessage()
    assert record.getMessage().startswith("config not reloaded, still serving the previous one")


def test_a_refused_reload_is_shown_in_the_gateways_status_until_one_loads(tmp_path: Path) -> None:
    old = load_config(_config(tmp_path, {"a": {"command": "x"}}))
    loaded: list[GatewayConfig] = []

    def load() -> GatewayConfig:
        if not loaded:
            loaded.append(old)
            raise ConfigError("servers.json: invalid JSON at line 1 column 2: oops")
        return old

    with Router(Catalog(servers=()), store=tmp_path / "store") as router:
        gateway = Gateway(router, Downstreams({}))
        live = Live(old, load)
        assert anyio.run(reload_once, live, None, gateway) is None
        assert "invalid JSON" in gateway.status()["config"]["reload"]
        assert anyio.run(reload_once, live, None, gateway) is None  # the same config: kept
        assert "config" not in gateway.status()


def test_a_reload_that_drops_the_tokens_or_the_settings_file_is_refused_unless_explicit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RELOAD_TOKEN", TOKEN)
    servers = {"a": {"command": "x"}}
    old = load_config(_config(tmp_path, servers, '[auth]\nbearer_token_env = "RELOAD_TOKEN"\n'))
    with pytest.raises(ConfigError, match=r"write \[auth\] enabled = false"):
        check_safe(old, load_config(_config(tmp_path, servers, "[toolroute]\nk = 3\n")))
    with pytest.raises(ConfigError, match="missing or empty"):
        check_safe(old, load_config(_config(tmp_path, servers, "")))
    (tmp_path / "toolroute.toml").unlink()
    with pytest.raises(ConfigError, match="missing or empty"):
        check_safe(old, load_config(tmp_path / "servers.json"))
    off = load_config(_config(tmp_path, servers, "[auth]\nenabled = false\n"))
    check_safe(old, off)  # said explicitly
    assert off.auth_off and not off.clients


def test_auth_turned_off_with_tokens_given_is_refused(tmp_path: Path) -> None:
    toml = '[auth]\nenabled = false\nbearer_token_env = "RELOAD_TOKEN"\n'
    with pytest.raises(ConfigError, match="enabled = false with tokens given"):
        load_config(_config(tmp_path, {"a": {"command": "x"}}, toml))


def test_a_fifo_or_a_directory_in_place_of_a_config_file_is_refused_without_waiting(
    tmp_path: Path,
) -> None:
    path = _config(tmp_path, {"a": {"command": "x"}})
    path.unlink()
    os.mkfifo(path)  # nobody writes it: an open for reading would block
    with pytest.raises(ConfigError, match="not a regular file"):
        load_config(path)
    settings = tmp_path / "toolroute.toml"
    settings.unlink()
    settings.mkdir()
    path.unlink()
    path.write_text('{"mcpServers": {"a": {"command": "x"}}}')
    with pytest.raises(ConfigError, match="is a directory"):
        load_config(path)


def test_a_reload_knows_what_to_do_with_every_setting() -> None:
    """Each ``[toolroute]`` and ``[http]`` setting is taken at once, restarts the servers,
    waits for the next start, or is swapped into the HTTP front door; each other name is a
    field of the config (another table)."""
    settings = set(ToolrouteSettings.model_fields)
    http = {f"http.{name}" for name in HttpTable.model_fields}
    listed = {*SWAPPED_FIELDS, *RESTART_FIELDS, *SPEC_FIELDS, *TOKEN_FIELDS}
    assert (settings | http) - listed == set()
    fields = {f.name for f in dataclasses.fields(GatewayConfig)}
    assert listed - settings - http <= fields


def test_http_changes_swap_the_front_doors_lists_or_are_said_to_need_a_restart(
    tmp_path: Path,
) -> None:
    servers = {"a": {"command": "x"}}
    old = load_config(_config(tmp_path, servers))
    hosts = diff(old, load_config(_config(tmp_path, servers, '[http]\nallowed_hosts = ["h:*"]\n')))
    assert hosts.tokens and hosts.needs_restart == ()
    idle = diff(old, load_config(_config(tmp_path, servers, "[http]\nsession_idle_s = 60\n")))
    assert not idle.tokens and idle.needs_restart == ("http.session_idle_s",)


def test_a_code_mode_change_is_said_to_need_a_restart(tmp_path: Path) -> None:
    servers = {"a": {"command": "x"}}
    old = load_config(_config(tmp_path, servers))
    new = load_config(_config(tmp_path, servers, "[toolroute]\ncode_mode = true\n"))
    assert diff(old, new).needs_restart == ("code_mode",)


def test_a_reload_applies_the_new_settings_in_one_step_and_keeps_what_needs_a_restart(
    tmp_path: Path,
) -> None:
    running = ToolrouteSettings(store=str(tmp_path / "store"), expose="bind")
    with Router(Catalog(servers=()), store=tmp_path / "store") as router:
        shared = Shared(router, settings=running)
        new = ToolrouteSettings(
            k=2,
            threshold=0.3,
            pinned=("a__t",),
            abstain="strict",
            call_timeout_s=4.0,
            expose="all",
            strategy="hybrid",
        )
        shared.apply(applied(shared.settings, new))
        s = shared.settings
        assert (s.k, s.threshold, s.pinned, s.abstain, s.call_timeout_s) == (
            2,
            0.3,
            ("a__t",),
            "strict",
            4.0,
        )
        assert (s.expose, s.strategy, s.store) == ("bind", "default", running.store)
        shown = shared.presenter.config
        assert (shown.top_k, shown.threshold, shown.pinned) == (2, 0.3, ("a__t",))
        assert router.params.abstain == "strict"
