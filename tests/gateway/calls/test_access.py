"""Clients, allow-lists and the call gate's scope: parsing from toolroute.toml and matching."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from toolroute.config import load_config
from toolroute.errors import ConfigError
from toolroute.gateway.calls.access import (
    CLIENT_SCOPE_KEY,
    ClientAccess,
    SessionStates,
    client_identity,
    gate_scope,
)
from toolroute.route.preconditions import SessionState

TOKEN = "t" * 24


def _config(tmp_path: Path, toml: str) -> Path:
    p = tmp_path / "servers.json"
    p.write_text(json.dumps({"mcpServers": {"time": {"command": "x"}, "git": {"command": "y"}}}))
    (tmp_path / "toolroute.toml").write_text(toml)
    return p


@pytest.mark.parametrize(
    ("value", "scope"),
    [
        ("true", "client"),
        ("false", "off"),
        ('"client"', "client"),
        ('"connection"', "connection"),
        ('"off"', "off"),
    ],
)
def test_call_gate_takes_a_scope_or_the_old_booleans(
    tmp_path: Path, value: str, scope: str
) -> None:
    cfg = load_config(_config(tmp_path, f"[toolroute]\ncall_gate = {value}\n"))
    assert cfg.settings.call_gate == scope


def test_an_unknown_call_gate_scope_is_one_line_naming_the_field(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"toolroute.call_gate"):
        load_config(_config(tmp_path, '[toolroute]\ncall_gate = "session"\n'))
    with pytest.raises(ConfigError, match="connection, client, off"):
        gate_scope("session")


def test_tokens_come_from_the_environment_with_their_allow_lists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TR_ONE", TOKEN)
    monkeypatch.setenv("TR_CI", TOKEN + "ci")
    cfg = load_config(
        _config(
            tmp_path,
            '[auth]\nbearer_token_env = "TR_ONE"\n[auth.clients.ci]\ntoken_env = "TR_CI"\n'
            'servers = ["time"]\ntools = ["git__git_status"]\n'
            '[http]\nallowed_hosts = ["gw.lan:*"]\n',
        )
    )
    assert [(c.client_id, c.servers, c.tools) for c in cfg.clients] == [
        ("default", (), ()),
        ("ci", ("time",), ("git__git_status",)),
    ]
    assert cfg.http.allowed_hosts == ["gw.lan:*"]
    assert TOKEN not in repr(cfg.clients)  # a token never shows up in a log line


@pytest.mark.parametrize(
    ("env", "toml", "message"),
    [
        ({}, '[auth]\nbearer_token_env = "TR_UNSET"\n', "TR_UNSET is not set"),
        ({"TR_A": "short"}, '[auth]\nbearer_token_env = "TR_A"\n', "under 16 characters"),
        (
            {"TR_A": TOKEN, "TR_B": TOKEN},
            '[auth]\nbearer_token_env = "TR_A"\n[auth.clients.b]\ntoken_env = "TR_B"\n',
            "same token",
        ),
        ({}, "[auth]\n", "give bearer_token_env"),
        ({}, '[auth.clients.x]\ntoken_env = "E"\nhosts = []\n', "auth.clients.x.hosts"),
    ],
)
def test_auth_mistakes_are_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    env: dict[str, str],
    toml: str,
    message: str,
) -> None:
    monkeypatch.delenv("TR_UNSET", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(ConfigError, match=message):
        load_config(_config(tmp_path, toml))


def test_allow_list_matches_servers_or_tool_patterns() -> None:
    ci = ClientAccess("ci", TOKEN, servers=("time",), tools=("memory__search_*",))
    assert ci.allows("time__get_current_time")
    assert ci.allows("memory__search_nodes")
    assert not ci.allows("memory__delete_entities")
    assert not ci.allows("timex__now")
    assert not ci.allows("../time__x") and not ci.allows("TIME__get_current_time")
    assert ClientAccess("all", TOKEN).allows("anything__at_all")


def _ctx(connection: object, *, client: str | None = None, header: str | None = None) -> object:
    scope: dict[str, object] = {"headers": []}
    if client:
        scope[CLIENT_SCOPE_KEY] = client
    if header:
        scope["headers"] = [(b"x-toolroute-client", header.encode())]
    info = SimpleNamespace(client_info=SimpleNamespace(name="inspector"))
    session = SimpleNamespace(_connection=connection, client_params=info)
    return SimpleNamespace(request=SimpleNamespace(scope=scope), session=session)


class _Conn:
    pass


def test_the_default_call_gate_keeps_promotions_per_client(tmp_path: Path) -> None:
    assert load_config(_config(tmp_path, "")).settings.call_gate == "client"


def test_client_scope_keeps_a_nameless_session_to_its_connection() -> None:
    """With no token, header or client name there is no client to share promotions with:
    such a session must not see another nameless session's promotions."""
    states = SessionStates("client", SessionState)

    def nameless(connection: object) -> object:
        session = SimpleNamespace(_connection=connection, client_params=None)
        return SimpleNamespace(request=SimpleNamespace(scope={"headers": []}), session=session)

    first, second = _Conn(), _Conn()
    states.for_request(nameless(first)).promoted.add("time__x")
    assert "time__x" in states.for_request(nameless(first)).promoted
    assert "time__x" not in states.for_request(nameless(second)).promoted
    assert states.for_request(nameless(first)).client is None


def test_client_identity_prefers_the_token_then_the_header_then_the_client_name() -> None:
    conn = _Conn()
    assert client_identity(_ctx(conn, client="ci", header="h")) == "token:ci"
    assert client_identity(_ctx(conn, header="agent-7")) == "header:agent-7"
    assert client_identity(_ctx(conn)) == "name:inspector"
    assert client_identity(SimpleNamespace()) == "anonymous"


def test_connection_scope_forgets_a_closed_connection_and_client_scope_outlives_it() -> None:
    by_connection = SessionStates("connection", SessionState)
    first = _Conn()
    by_connection.for_request(_ctx(first)).promoted.add("time__x")
    assert "time__x" in by_connection.for_request(_ctx(first)).promoted
    assert "time__x" not in by_connection.for_request(_ctx(_Conn())).promoted
    del first
    assert len(by_connection) == 0  # held weakly: gone with its connection

    by_client = SessionStates("client", SessionState)
    by_client.for_request(_ctx(_Conn(), client="ci")).promoted.add("time__x")
    assert "time__x" in by_client.for_request(_ctx(_Conn(), client="ci")).promoted
    assert "time__x" not in by_client.for_request(_ctx(_Conn(), client="other")).promoted


def test_client_states_share_promotions_through_the_store_and_connections_do_not(
    tmp_path: Path,
) -> None:
    from toolroute.gateway.calls.access import SessionStates
    from toolroute.route.preconditions import SessionState
    from toolroute.store import open_store

    with open_store(tmp_path / "store") as store:
        one = SessionStates("client", SessionState, store=lambda: store)
        two = SessionStates("client", SessionState, store=lambda: store)
        one.promote(one.for_client("name:a"), ["s__t"])
        assert two.is_promoted(two.for_client("name:a"), "s__t")
        assert not two.is_promoted(two.for_client("name:b"), "s__t")
        conn_one = SessionStates("connection", SessionState, store=lambda: store)
        conn_two = SessionStates("connection", SessionState, store=lambda: store)
        conn_one.promote(conn_one.for_connection(None), ["s__u"])
        assert not conn_two.is_promoted(conn_two.for_connection(None), "s__u")
