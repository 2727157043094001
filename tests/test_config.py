from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from toolroute.config import HttpSpec, StdioSpec, load_config
from toolroute.errors import ConfigError


def _write(tmp_path: Path, servers: object, toml: str | None = None) -> Path:
    p = tmp_path / "claude_desktop_config.json"
    p.write_text(json.dumps({"mcpServers": servers}))
    if toml is not None:
        (tmp_path / "toolroute.toml").write_text(toml)
    return p


def test_claude_desktop_config_is_accepted_as_is(tmp_path: Path) -> None:
    cfg = load_config(
        _write(
            tmp_path,
            {
                "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
                "docs": {
                    "url": "https://example.com/mcp",
                    "headers": {"Authorization": "Bearer x"},
                },
                "off": {"command": "x", "disabled": True},
            },
        )
    )
    assert isinstance(cfg.servers["time"], StdioSpec) and cfg.servers["time"].args == [
        "mcp-server-time"
    ]
    assert isinstance(cfg.servers["docs"], HttpSpec)
    assert "off" not in cfg.servers
    assert (cfg.settings.strategy, cfg.settings.k, cfg.settings.expose) == ("default", 5, "meta")


def test_toolroute_toml_beside_the_config_is_read(tmp_path: Path) -> None:
    cfg = load_config(
        _write(
            tmp_path,
            {"time": {"command": "t"}},
            toml=(
                '[toolroute]\nk = 3\nexpose = "bind"\ncall_timeout_s = 5\n'
                '[servers.time]\nask_cost = 0.01\n[tools."time__now"]\nprice = 0.002\n'
            ),
        )
    )
    assert (cfg.settings.k, cfg.settings.expose, cfg.settings.call_timeout_s) == (3, "bind", 5.0)
    assert cfg.server_meta == {"time": {"ask_cost": 0.01}}
    assert cfg.tool_meta == {"time__now": {"price": 0.002}}


def test_pass_through_exposure_is_a_setting_and_an_unknown_one_is_refused(tmp_path: Path) -> None:
    servers = {"time": {"command": "t"}}
    cfg = load_config(_write(tmp_path, servers, toml='[toolroute]\nexpose = "all"\n'))
    assert cfg.settings.expose == "all"
    with pytest.raises(ConfigError, match="expose"):
        load_config(_write(tmp_path, servers, toml='[toolroute]\nexpose = "everything"\n'))


@pytest.mark.parametrize(
    ("servers", "message"),
    [
        ({"a": {"args": ["x"]}}, r"mcpServers\.a: .*either 'command'"),
        ({"a": {"command": "x", "url": "http://h"}}, r"mcpServers\.a: .*either 'command'"),
        ({"a": {"url": "ftp://h"}}, r"mcpServers\.a\.url: String should match"),
        ({"a": {"command": "x", "args": "not-a-list"}}, r"mcpServers\.a\.args"),
        ({"a__b": {"command": "x"}}, r"mcpServers\.a__b: server names may not"),
        ({}, r"mcpServers: expected an object"),
    ],
)
def test_bad_server_entries_name_the_field(tmp_path: Path, servers: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(_write(tmp_path, servers))


def test_bad_settings_name_the_field(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"toolroute.toml: toolroute\.k: "):
        load_config(_write(tmp_path, {"a": {"command": "x"}}, toml="[toolroute]\nk = 0\n"))
    with pytest.raises(ConfigError, match=r"toolroute.toml: toolroute\.colour: Extra inputs"):
        load_config(_write(tmp_path, {"a": {"command": "x"}}, toml="[toolroute]\ncolour = 1\n"))
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_config(_write(tmp_path, {"a": {"command": "x"}}, toml="[toolroute\n"))


def test_missing_config_file_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="nope.json: no such file"):
        load_config(tmp_path / "nope.json")


def test_server_names_that_would_split_ambiguously_are_refused(tmp_path: Path) -> None:
    for bad in ("my_", "_my"):
        with pytest.raises(ConfigError, match="start or end with '_'"):
            load_config(_write(tmp_path, {bad: {"command": "x"}}))


@pytest.mark.parametrize("bad", ["ti\x00me", "time\x1b[2J", "time\u200b", "time\u00a0", "a\nb"])
def test_a_server_name_with_control_or_invisible_characters_is_refused_in_one_line(
    tmp_path: Path, bad: str
) -> None:
    """A NUL or an escape sequence would reach logs and tool names raw."""
    with pytest.raises(ConfigError) as caught:
        load_config(_write(tmp_path, {bad: {"command": "x"}}))
    message = str(caught.value)
    assert "control or invisible characters (U+" in message
    assert message.isprintable()  # one line, nothing raw


def test_a_config_that_is_not_utf8_is_one_clear_error(tmp_path: Path) -> None:
    p = tmp_path / "c.json"
    p.write_bytes(b'{"mcpServers": {"a": {"command": "\xff"}}}')
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(p)


def test_settings_that_would_fail_at_run_time_are_refused_at_load(tmp_path: Path) -> None:
    servers = {"time": {"command": "x"}}
    with pytest.raises(ConfigError, match=r"toolroute\.strategy: unknown strategy 'hybird'"):
        load_config(_write(tmp_path, servers, toml='[toolroute]\nstrategy = "hybird"\n'))
    with pytest.raises(ConfigError, match="'time__convert_tme'|'tiem__now'"):
        load_config(_write(tmp_path, servers, toml='[tools."tiem__now"]\nprice = 0.1\n'))


def test_llm_endpoint_comes_from_the_toml_else_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    servers = {"time": {"command": "uvx"}}
    monkeypatch.delenv("TOOLROUTE_LLM_BASE_URL", raising=False)
    assert load_config(_write(tmp_path, servers)).llm is None
    monkeypatch.setenv("TOOLROUTE_LLM_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("TOOLROUTE_LLM_MODEL", "env-model")
    env_cfg = load_config(_write(tmp_path, servers)).llm
    assert env_cfg is not None and env_cfg.model == "env-model"
    monkeypatch.setenv("MY_KEY", "sk-1")
    toml = '[llm]\nbase_url = "http://10.0.0.2:8080/v1"\nmodel = "q"\napi_key_env = "MY_KEY"\n'
    cfg = load_config(_write(tmp_path, servers, toml)).llm
    assert cfg is not None and (cfg.base_url, cfg.model, cfg.api_key) == (
        "http://10.0.0.2:8080/v1",
        "q",
        "sk-1",
    )
    monkeypatch.delenv("MY_KEY")
    with pytest.raises(ConfigError, match=r"llm.api_key_env: the variable MY_KEY is not set"):
        load_config(_write(tmp_path, servers, toml))
    with pytest.raises(ConfigError, match=r"toolroute.toml: llm.base_url"):
        load_config(_write(tmp_path, servers, '[llm]\nbase_url = "ftp://x"\n'))


def test_llm_timeout_from_the_environment_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolroute.llm.client import LLMConfig

    monkeypatch.setenv("TOOLROUTE_LLM_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("TOOLROUTE_LLM_TIMEOUT_S", "90")
    cfg = LLMConfig.from_env()
    assert cfg is not None and cfg.timeout_s == 90.0
    monkeypatch.setenv("TOOLROUTE_LLM_TIMEOUT_S", "soon")
    with pytest.raises(ConfigError, match="TOOLROUTE_LLM_TIMEOUT_S"):
        LLMConfig.from_env()


VSCODE_MCP_JSON = """{
  // VS Code writes JSON with comments
  "inputs": [{"type": "promptString", "id": "api-key", "description": "API key", "password": true}],
  "servers": {
    "time": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"]},
    "docs": {"type": "http", "url": "https://example.com/mcp",
             "headers": {"Authorization": "Bearer ${input:api-key}"}},
    "legacy": {"type": "sse", "url": "https://example.com/sse"},
  },
}
"""


def test_vscode_mcp_json_is_accepted_with_its_types_and_comments(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    p = tmp_path / "mcp.json"
    p.write_text(VSCODE_MCP_JSON)
    cfg = load_config(p)
    time, docs, legacy = cfg.servers["time"], cfg.servers["docs"], cfg.servers["legacy"]
    assert isinstance(time, StdioSpec) and time.args == ["mcp-server-time"]
    assert isinstance(docs, HttpSpec) and docs.type == "http"
    assert isinstance(legacy, HttpSpec) and legacy.type == "sse"
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 1
    assert "servers.docs uses VS Code input ${input:api-key}" in warned[0]


def test_claude_code_mcp_json_entries_with_a_type_are_accepted(tmp_path: Path) -> None:
    cfg = load_config(
        _write(
            tmp_path,
            {
                "git": {"type": "stdio", "command": "uvx", "args": ["mcp-server-git"], "env": {}},
                "sentry": {"type": "http", "url": "https://mcp.sentry.dev/mcp"},
            },
        )
    )
    assert isinstance(cfg.servers["git"], StdioSpec)
    assert isinstance(cfg.servers["sentry"], HttpSpec) and cfg.servers["sentry"].type == "http"


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"type": "ws", "url": "wss://x"}, "servers.a: type 'ws': expected one of stdio, http"),
        ({"type": "stdio", "url": "https://x"}, "servers.a: type 'stdio' needs 'command'"),
        ({"type": "http", "command": "x"}, "servers.a: type 'http' needs 'url'"),
    ],
)
def test_a_type_that_does_not_fit_the_entry_names_the_field(
    tmp_path: Path, entry: object, message: str
) -> None:
    p = tmp_path / "mcp.json"
    p.write_text(json.dumps({"servers": {"a": entry}}))
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(p)


def test_a_file_that_is_not_json_even_with_comments_allowed_names_the_line(tmp_path: Path) -> None:
    p = tmp_path / "mcp.json"
    p.write_text('{"servers": {\n  "a": {"command": }\n}}')
    with pytest.raises(
        ConfigError, match=r"mcp\.json: invalid JSON at line 2 column 20: expected value"
    ):
        load_config(p)


def test_reading_without_secrets_leaves_out_clients_whose_token_is_unset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TR_UNSET_TOKEN", raising=False)
    monkeypatch.setenv("TR_CI_TOKEN", "c" * 20)
    p = _write(
        tmp_path,
        {"time": {"command": "t"}},
        toml=(
            '[auth]\nbearer_token_env = "TR_UNSET_TOKEN"\n'
            '[auth.clients.ci]\ntoken_env = "TR_CI_TOKEN"\n'
            '[llm]\nbase_url = "http://127.0.0.1:1/v1"\napi_key_env = "TR_UNSET_TOKEN"\n'
        ),
    )
    with pytest.raises(ConfigError, match="the variable TR_UNSET_TOKEN is not set"):
        load_config(p)
    cfg = load_config(p, secrets=False)
    assert [c.client_id for c in cfg.clients] == ["ci"]


def test_variables_in_a_server_entry_are_expanded_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TR_KEY", "k-123")
    monkeypatch.setenv("TR_HOST", "docs.example")
    monkeypatch.delenv("TR_UNSET", raising=False)
    folder = tmp_path / "project" / ".vscode"
    folder.mkdir(parents=True)
    p = folder / "mcp.json"
    p.write_text(
        json.dumps(
            {
                "servers": {
                    "git": {
                        "command": "${env:TR_HOST}-bin",
                        "args": ["--key", "${TR_KEY}", "--level", "${TR_UNSET:-info}"],
                        "env": {"API_KEY": "${env:TR_KEY}", "ROOT": "${workspaceFolder}/src"},
                    },
                    "docs": {
                        "url": "https://${TR_HOST}/mcp",
                        "headers": {"Authorization": "Bearer ${env:TR_KEY}"},
                    },
                }
            }
        )
    )
    cfg = load_config(p)
    git, docs = cfg.servers["git"], cfg.servers["docs"]
    assert isinstance(git, StdioSpec) and isinstance(docs, HttpSpec)
    assert git.command == "docs.example-bin"
    assert git.args == ["--key", "k-123", "--level", "info"]
    assert git.env == {"API_KEY": "k-123", "ROOT": f"{tmp_path / 'project'}/src"}
    assert docs.url == "https://docs.example/mcp"
    assert docs.headers == {"Authorization": "Bearer k-123"}


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"command": "x", "env": {"API_KEY": "${env:TR_UNSET}"}},
            "a.env.API_KEY: the variable TR_UNSET is not set",
        ),
        (
            {"url": "https://h/mcp", "headers": {"X-Key": "${TR_UNSET}"}},
            "a.headers.X-Key: the variable TR_UNSET is not set",
        ),
        ({"command": "x", "args": ["-v", "${TR_UNSET}"]}, "a.args[1]: the variable TR_UNSET"),
        ({"command": "x", "args": ["${command:pick}"]}, "a.args[0]: cannot expand ${command:pick}"),
    ],
)
def test_an_unknown_variable_is_refused_naming_server_field_and_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: object, message: str
) -> None:
    monkeypatch.delenv("TR_UNSET", raising=False)
    with pytest.raises(ConfigError, match=re.escape(f"mcpServers.{message}")):
        load_config(_write(tmp_path, {"a": entry}))
    if "not set" in message:  # status and approve read the file without its secrets
        load_config(_write(tmp_path, {"a": entry}), secrets=False)
