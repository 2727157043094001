"""Hostile config files (property-based, Hypothesis): whatever the servers JSON and the
toolroute.toml hold (bytes that are no text, nesting past any parser's depth, values of every
type where settings are expected), reading them gives a config or one ConfigError line naming
the file; never another exception, never a traceback. A fixed budget of examples: small in the
default tier, larger under ``slow``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolroute.config import GatewayConfig, load_config
from toolroute.errors import ConfigError

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=25,
)
NAMES = st.sampled_from(["a", "time", "x__y", "_a", "", "docs", "ü"])
ENTRY_KEYS = st.sampled_from(
    ["command", "args", "env", "cwd", "url", "headers", "type", "disabled"]
)


def _deep(depth: int, opener: str) -> str:
    closer = {"[": "]", '{"a":': "}"}[opener]
    return opener * depth + closer * depth


servers_text = st.one_of(
    JSON.map(json.dumps),
    st.dictionaries(NAMES, st.dictionaries(ENTRY_KEYS, JSON, max_size=4), max_size=3).map(
        lambda s: json.dumps({"mcpServers": s})
    ),
    st.tuples(st.integers(150, 30_000), st.sampled_from(["[", '{"a":'])).map(
        lambda d: '{"mcpServers": {"a": {"command": "x", "args": ' + _deep(*d) + "}}}"
    ),
    st.text(max_size=200),
)
servers_bytes = servers_text.map(lambda t: t.encode("utf-8", "surrogatepass")) | st.binary(
    max_size=200
)

TABLES = st.sampled_from(
    ["toolroute", "auth", "auth.clients.ci", "http", "limits", "metrics", "llm",
     "servers.a", 'tools."a__t"', "limits.clients.ci"]
)  # fmt: skip
KEYS = st.sampled_from(
    ["store", "k", "expose", "call_gate", "pinned", "threshold", "enabled", "bearer_token_env",
     "token_env", "servers", "tools", "allowed_hosts", "forwarded_allow_ips", "base_url",
     "calls_per_minute", "name", "hidden", "annotations", "approved", "max_result_bytes"]
)  # fmt: skip


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v) if v == v and abs(v) != float("inf") else "nan"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        items = ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items())
        return "{" + items + "}"
    return '""'


toml_text = st.one_of(
    st.lists(
        st.tuples(
            TABLES, st.lists(st.tuples(KEYS, JSON.filter(lambda v: v is not None)), max_size=4)
        ),
        max_size=4,
    ).map(
        lambda tables: "".join(
            f"[{t}]\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in dict(body).items())
            for t, body in dict(tables).items()
        )
    ),
    st.integers(150, 30_000).map(lambda d: "[toolroute]\npinned = " + "[" * d + "]" * d + "\n"),
    st.text(max_size=200),
)
toml_bytes = toml_text.map(lambda t: t.encode("utf-8", "surrogatepass")) | st.binary(max_size=200)


def _load(tmp_path: Path, servers: bytes, toml: bytes | None) -> None:
    folder = tmp_path / "cfg"
    folder.mkdir(exist_ok=True)
    (folder / "servers.json").write_bytes(servers)
    settings_path = folder / "toolroute.toml"
    settings_path.unlink(missing_ok=True)
    if toml is not None:
        settings_path.write_bytes(toml)
    try:
        cfg = load_config(folder / "servers.json")
    except ConfigError as e:
        line = str(e)
        assert "\n" not in line and "Traceback" not in line, line
        assert line.startswith((str(folder / "servers.json"), str(settings_path))), line
    else:
        assert isinstance(cfg, GatewayConfig) and cfg.servers


SETTINGS = settings(
    max_examples=100,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@SETTINGS
@given(servers=servers_bytes, toml=st.none() | toml_bytes)
def test_a_hostile_config_is_one_line_naming_the_file_or_a_config(
    tmp_path: Path, servers: bytes, toml: bytes | None
) -> None:
    _load(tmp_path, servers, toml)


@SETTINGS
@given(toml=toml_bytes)
def test_hostile_settings_beside_good_servers_are_one_line_naming_the_file(
    tmp_path: Path, toml: bytes
) -> None:
    _load(tmp_path, json.dumps({"mcpServers": {"a": {"command": "x"}}}).encode(), toml)


@pytest.mark.slow
@settings(SETTINGS, max_examples=2000)
@given(servers=servers_bytes, toml=st.none() | toml_bytes)
def test_many_hostile_configs_are_one_line_naming_the_file_or_a_config(
    tmp_path: Path, servers: bytes, toml: bytes | None
) -> None:
    _load(tmp_path, servers, toml)
