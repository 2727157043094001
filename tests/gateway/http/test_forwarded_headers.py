"""Forwarded headers and status sessions on a real `toolroute serve --transport http`:
``X-Forwarded-For`` is believed only from a proxy named in ``[http] forwarded_allow_ips``
(none by default), so a guesser cannot dodge the sign-in throttle (or lock out an address of
its choosing) by naming a new address per guess; one token's sign-ins end only its own
oldest sessions, never another client's; and a client a reload removes loses its status
sessions and its sign-in (its cookie does not fall back to the operator's view)."""

from __future__ import annotations

import http.client
import time
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest

from tests.helpers.status import serving_gateway
from toolroute.gateway.http.login import COOKIE, LOGIN_FAILURES, MAX_SESSIONS

pytestmark = pytest.mark.integration


def _request(
    base: str, method: str, path: str, headers: dict[str, str], body: str = ""
) -> tuple[int, dict[str, str]]:
    conn = http.client.HTTPConnection("127.0.0.1", urlsplit(base).port, timeout=30)
    try:
        conn.request(method, path, body=body or None, headers=headers)
        r = conn.getresponse()
        r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}
    finally:
        conn.close()


def _login(base: str, token: str, forwarded: str | None = None) -> tuple[int, dict[str, str]]:
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if forwarded is not None:
        headers["X-Forwarded-For"] = forwarded
    return _request(base, "POST", "/status/login", headers, urlencode({"token": token}))


def _cookie(headers: dict[str, str]) -> str:
    return f"{COOKIE}={SimpleCookie(headers['set-cookie'])[COOKIE].value}"


def test_a_forged_x_forwarded_for_does_not_dodge_the_sign_in_throttle(tmp_path: Path) -> None:
    with serving_gateway(tmp_path, {"alice": ["time"]}) as s:
        codes = [_login(s.base, f"guess-{n}", f"10.9.{n}.1")[0] for n in range(4 * LOGIN_FAILURES)]
        assert codes[:LOGIN_FAILURES] == [401] * LOGIN_FAILURES
        assert set(codes[LOGIN_FAILURES:]) == {429}  # one peer, whatever the header says


def test_a_configured_proxy_s_x_forwarded_for_names_the_client(tmp_path: Path) -> None:
    proxy = '[http]\nforwarded_allow_ips = ["127.0.0.1"]\n'
    with serving_gateway(tmp_path, {"alice": ["time"]}, proxy) as s:
        for n in range(LOGIN_FAILURES):
            assert _login(s.base, f"guess-{n}", "10.9.0.1")[0] == 401
        assert _login(s.base, s.tokens["alice"], "10.9.0.1")[0] == 429
        assert _login(s.base, s.tokens["alice"], "10.9.0.2")[0] == 303  # another browser


def test_one_token_s_sign_ins_do_not_end_another_client_s_session(tmp_path: Path) -> None:
    with serving_gateway(tmp_path, {"alice": ["time"], "bob": ["time"]}) as s:
        code, headers = _login(s.base, s.tokens["bob"])
        assert code == 303
        bob = _cookie(headers)
        first = None
        for n in range(MAX_SESSIONS + 1):
            code, headers = _login(s.base, s.tokens["alice"])
            assert code == 303, n
            first = first or _cookie(headers)
        assert _request(s.base, "GET", "/status/json", {"Cookie": bob})[0] == 200
        assert _request(s.base, "GET", "/status/json", {"Cookie": _cookie(headers)})[0] == 200
        assert _request(s.base, "GET", "/status/json", {"Cookie": first})[0] == 401


def test_a_client_removed_by_a_reload_loses_its_status_sessions_and_sign_in(
    tmp_path: Path,
) -> None:
    with serving_gateway(tmp_path, {"alice": ["time"], "bob": ["time"]}) as s:
        alice = _cookie(_login(s.base, s.tokens["alice"])[1])
        bob = _cookie(_login(s.base, s.tokens["bob"])[1])
        toml = s.config.with_name("toolroute.toml")
        text = toml.read_text()
        bob_table = text[text.index("[auth.clients.bob]") :]
        toml.write_text(text.replace(bob_table, ""))  # bob's token no longer configured
        deadline = time.monotonic() + 120  # the reload follows the edit
        while _login(s.base, s.tokens["bob"])[0] != 401:
            assert time.monotonic() < deadline, "bob's token still signs in"
            time.sleep(0.1)
        # bob's cookie is no session any more (it must not fall back to the operator's view)
        assert _request(s.base, "GET", "/status/json", {"Cookie": bob})[0] == 401
        assert _request(s.base, "GET", "/status/json", {"Cookie": alice})[0] == 200
