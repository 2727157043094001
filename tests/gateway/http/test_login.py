"""The status page's browser logins (toolroute.gateway.http.login): sessions, their expiry and
bound, one-time codes, and where a cookie is honoured."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from toolroute.gateway.http import login as login_module
from toolroute.gateway.http.login import (
    CODE_TTL_S,
    COOKIE,
    LOGIN_FILE,
    LOGIN_SCOPE_KEY,
    SESSION_TTL_S,
    LoginBook,
    mint_code,
    read_login_file,
)

TOKENS = {"alice": "a" * 24, "bob": "b" * 24}


def _key(book: LoginBook, tmp_path: Path) -> str:
    book.publish(tmp_path, "http://127.0.0.1:1")
    data = read_login_file(tmp_path)
    assert data is not None
    return str(data["key"])


def test_a_token_names_its_client_and_nothing_else_does() -> None:
    book = LoginBook(TOKENS)
    assert book.client_of("a" * 24) == "alice" and book.client_of(" " + "b" * 24) == "bob"
    assert book.client_of("") is None and book.client_of("a" * 23) is None
    assert not LoginBook({}).required and LoginBook({}).client_of("") is None


def test_a_session_lasts_until_its_expiry_and_not_after_sign_out() -> None:
    book = LoginBook(TOKENS)
    sid = book.open("alice", now=1000.0)
    assert sid not in TOKENS.values() and len(sid) >= 40
    login = book.session(sid, now=1000.0 + SESSION_TTL_S - 1)
    assert login is not None and login.client == "alice"
    assert book.session(sid, now=1000.0 + SESSION_TTL_S) is None
    other = book.open(None, now=2000.0)
    book.close(other)
    assert book.session(other, now=2000.0) is None


def test_sessions_are_bounded_the_oldest_going_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(login_module, "MAX_SESSIONS", 3)
    book = LoginBook(TOKENS)
    sids = [book.open("alice", now=1000.0 + i) for i in range(4)]
    assert book.session(sids[0], now=1010.0) is None
    assert all(book.session(s, now=1010.0) is not None for s in sids[1:])


def test_a_one_time_code_works_once_within_its_time_and_only_on_its_gateway(
    tmp_path: Path,
) -> None:
    book = LoginBook(TOKENS)
    key = _key(book, tmp_path)
    code = mint_code(key, now=1000.0)
    assert book.redeem(code, now=1001.0)
    assert not book.redeem(code, now=1002.0)  # spent
    late = mint_code(key, now=1000.0)
    assert not book.redeem(late, now=1000.0 + CODE_TTL_S)  # expired
    foreign = mint_code(_key(LoginBook(TOKENS), tmp_path / "other"), now=1000.0)
    assert not book.redeem(foreign, now=1001.0)  # another gateway's key
    nonce, expires, mac = mint_code(key, now=1000.0).split(".")
    assert not book.redeem(f"{nonce}.{int(expires) + 3600}.{mac}", now=1001.0)  # stretched
    for junk in ("", "x", "a.b.c", "..", f"{nonce}..{mac}"):
        assert not book.redeem(junk, now=1001.0)


def test_the_login_file_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    book = LoginBook(TOKENS)
    path = book.publish(tmp_path / "store", "http://127.0.0.1:8765")
    assert path.name == LOGIN_FILE and stat.S_IMODE(path.stat().st_mode) == 0o600
    data = json.loads(path.read_text())
    assert data["url"] == "http://127.0.0.1:8765" and "a" * 24 not in path.read_text()


def test_a_cookie_is_honoured_on_the_status_routes_only() -> None:
    book = LoginBook(TOKENS)
    cookie = f"{COOKIE}={book.open('alice')}; other=1"
    for path in ("/status", "/status.json", "/status/json", "/status/logout"):
        admitted = book.admit("GET", path, cookie)
        assert admitted is not None and admitted[LOGIN_SCOPE_KEY].client == "alice", path
    for path in ("/mcp", "/", "/status/", "/statusx", "/mcp/status"):
        assert book.admit("POST", path, cookie) is None, path
        assert book.admit("GET", path, cookie) is None, path
    assert book.admit("GET", "/status", f"{COOKIE}=forged") == {}  # the form, no data
    assert book.admit("GET", "/status.json", f"{COOKIE}=forged") is None
    assert book.admit("POST", "/status/login", None) == {}
    assert book.admit("GET", "/status", 'bad"cookie') == {}
    assert LoginBook({}).admit("GET", "/status", cookie) is None  # no [auth]: not its business


def test_one_client_s_sign_ins_end_only_its_own_oldest_sessions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(login_module, "MAX_SESSIONS_PER_CLIENT", 2)
    monkeypatch.setattr(login_module, "MAX_SESSIONS", 4)
    book = LoginBook(TOKENS)
    operator = book.open(None, now=1000.0)
    bob = book.open("bob", now=1000.0)
    alice = [book.open("alice", now=1001.0 + i) for i in range(50)]
    assert book.session(operator, now=1100.0) is not None
    assert book.session(bob, now=1100.0) is not None
    assert [book.session(s, now=1100.0) is not None for s in alice[-3:]] == [False, True, True]


def test_new_tokens_end_the_sessions_of_a_client_removed_or_given_another_token() -> None:
    book = LoginBook(TOKENS)
    alice, bob, operator = book.open("alice"), book.open("bob"), book.open(None)
    book.reconfigure({"alice": TOKENS["alice"]})  # bob removed
    assert book.session(alice) is not None and book.session(operator) is not None
    assert book.session(bob) is None and book.client_of(TOKENS["bob"]) is None
    book.reconfigure({"alice": "c" * 24})  # alice's token rotated
    assert book.session(alice) is None and book.session(operator) is not None
    book.reconfigure({})  # no tokens at all: no sessions either
    assert book.session(operator) is None and not book.required
