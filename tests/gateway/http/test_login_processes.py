"""A browser's way onto the status page of `toolroute serve --transport http` with tokens: the
login form, the session cookie (what it holds, where it works, where it does not), the
Origin check on the login, and the one-time link of `toolroute status --open`; against a real
gateway process with two clients (alice may use the time server, bob the broken one).
Loopback only; the gateway is stopped after the module."""

from __future__ import annotations

import http.client
import json
import re
import stat
import subprocess
import sys
from collections.abc import Iterator
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest
from click.testing import CliRunner

from tests.conftest import RAW_INITIALIZE
from tests.helpers.status import Served, serving_gateway
from toolroute import cli
from toolroute.gateway.http.login import COOKIE, LOGIN_FILE, LoginBook

pytestmark = pytest.mark.integration

Reply = tuple[int, dict[str, str], str]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    clients = {"alice": ["time"], "bob": ["broken"]}
    with serving_gateway(tmp_path_factory.mktemp("status-login"), clients) as s:
        yield s


def _request(
    s: Served,
    method: str,
    path: str,
    headers: dict[str, str] | None = None,
    form: dict[str, str] | None = None,
) -> Reply:
    """One request, redirects not followed; header names lower-case."""
    conn = http.client.HTTPConnection("127.0.0.1", urlsplit(s.base).port, timeout=30)
    body = None if form is None else urlencode(form)
    sent = dict(headers or {})
    if form is not None:
        sent["Content-Type"] = "application/x-www-form-urlencoded"
    try:
        conn.request(method, path, body=body, headers=sent)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read().decode()
    finally:
        conn.close()


def _login(s: Served, form: dict[str, str], **headers: str) -> Reply:
    return _request(s, "POST", "/status/login", headers, form)


def _session(set_cookie: str) -> str:
    return f"{COOKIE}={SimpleCookie(set_cookie)[COOKIE].value}"


def _servers(s: Served, cookie: str) -> list[str]:
    code, _, body = _request(s, "GET", "/status/json", {"Cookie": cookie})
    assert code == 200, body
    return [x["name"] for x in json.loads(body)["servers"]]


def test_without_a_credential_the_status_page_is_a_login_form_showing_no_data(
    served: Served,
) -> None:
    code, headers, page = _request(served, "GET", "/status")
    assert code == 401 and headers["www-authenticate"].startswith("Bearer")
    assert '<form method="post" action="/status/login">' in page
    assert 'type="password"' in page and "set-cookie" not in headers
    assert "time" not in page.replace("one-time", "") and "broken" not in page
    assert "get_current_time" not in page
    assert headers["cache-control"] == "no-store"
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    for path in ("/status.json", "/status/json"):  # the data itself: as before, 401
        code, _, body = _request(served, "GET", path)
        assert code == 401 and "servers" not in body


def test_a_wrong_token_gets_a_401_page_and_no_cookie(served: Served) -> None:
    alice = served.tokens["alice"]
    for wrong in ("", alice[:-1], alice + "x", alice.upper(), "not-a-token"):
        code, headers, page = _login(served, {"token": wrong})
        assert code == 401, wrong
        assert "set-cookie" not in headers
        assert "not a token of this gateway" in page and alice not in page


def test_a_right_token_sets_an_opaque_httponly_strict_cookie_showing_only_its_clients_servers(
    served: Served,
) -> None:
    code, headers, _ = _login(served, {"token": served.tokens["alice"]})
    assert code == 303 and headers["location"] == "/status"
    morsel = SimpleCookie(headers["set-cookie"])[COOKIE]
    assert morsel["httponly"] and morsel["samesite"] == "strict"
    assert morsel["path"] == "/status" and int(morsel["max-age"]) > 0
    assert morsel.value not in served.tokens.values()
    assert not any(t in headers["set-cookie"] for t in served.tokens.values())
    alice = _session(headers["set-cookie"])
    code, headers, page = _request(served, "GET", "/status", {"Cookie": alice})
    assert code == 200 and "Signed in as client <code>alice</code>" in page
    assert "get_current_time" in page and "broken" not in page
    assert "Sign out" in page
    assert _servers(served, alice) == ["time"]
    code, headers, _ = _login(served, {"token": served.tokens["bob"]})
    bob = _session(headers["set-cookie"])
    assert _servers(served, bob) == ["broken"]
    code, _, body = _request(served, "GET", "/status.json", {"Cookie": bob})  # scripts too
    assert code == 200 and [x["name"] for x in json.loads(body)["servers"]] == ["broken"]


def test_sign_out_ends_the_session_on_the_server_not_only_in_the_browser(served: Served) -> None:
    _, headers, _ = _login(served, {"token": served.tokens["alice"]})
    alice = _session(headers["set-cookie"])
    assert _request(served, "GET", "/status", {"Cookie": alice})[0] == 200
    code, headers, _ = _request(served, "POST", "/status/logout", {"Cookie": alice}, {})
    assert code == 303 and SimpleCookie(headers["set-cookie"])[COOKIE]["max-age"] == "0"
    code, _, page = _request(served, "GET", "/status", {"Cookie": alice})  # the old cookie
    assert code == 401 and "get_current_time" not in page
    forged = f"{COOKIE}={served.tokens['alice']}"  # a token is not a session id
    assert _request(served, "GET", "/status", {"Cookie": forged})[0] == 401


def test_the_status_cookie_never_opens_mcp(served: Served) -> None:
    _, headers, _ = _login(served, {"token": served.tokens["alice"]})
    alice = _session(headers["set-cookie"])
    conn = http.client.HTTPConnection("127.0.0.1", urlsplit(served.base).port, timeout=30)
    try:
        conn.request(
            "POST",
            "/mcp",
            body=json.dumps(RAW_INITIALIZE),
            headers={
                "Cookie": alice,
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            },
        )
        response = conn.getresponse()
        response.read()
        assert response.status == 401
    finally:
        conn.close()
    assert _request(served, "GET", "/anything", {"Cookie": alice})[0] == 401


def test_a_login_from_a_foreign_origin_or_host_is_refused_before_any_cookie(
    served: Served,
) -> None:
    token = {"token": served.tokens["alice"]}
    for origin in (
        "http://evil.example",
        "null",
        f"http://evil.example:{urlsplit(served.base).port}",
    ):
        code, headers, _ = _login(served, token, Origin=origin)
        assert code == 403 and "set-cookie" not in headers, origin
    code, headers, _ = _login(served, token, Host="evil.example")
    assert code == 421 and "set-cookie" not in headers
    code, headers, _ = _login(served, token, Origin=served.base)  # the page's own origin
    assert code == 303 and "set-cookie" in headers


def test_status_open_prints_a_one_time_link_that_signs_in_the_operator_once(
    served: Served,
) -> None:
    store = served.config.parent / "store"
    assert stat.S_IMODE((store / LOGIN_FILE).stat().st_mode) == 0o600
    res = CliRunner().invoke(cli.main, ["status", "--open", "--config", str(served.config)])
    assert res.exit_code == 0, res.output
    link = re.search(r"(http://\S+)", res.output)
    assert link is not None and link.group(1).startswith(f"{served.base}/status/login?once=")
    once = link.group(1).partition("once=")[2]
    path = link.group(1).removeprefix(served.base)
    code, headers, page = _request(served, "GET", path)  # opening the link changes nothing
    assert code == 200 and "set-cookie" not in headers
    assert f'name="once" value="{once}"' in page and "Open the status page" in page
    assert headers["referrer-policy"] == "same-origin"
    code, headers, _ = _login(served, {"once": once})
    assert code == 303
    operator = _session(headers["set-cookie"])
    code, _, page = _request(served, "GET", "/status", {"Cookie": operator})
    assert code == 200 and "Signed in as the operator" in page
    assert sorted(_servers(served, operator)) == ["broken", "time"]
    assert "tokens shown (summaries + schemas)" in page  # and every routing decision
    code, headers, page = _login(served, {"once": once})  # a second time: spent
    assert code == 401 and "set-cookie" not in headers and "already used" in page
    tampered = once[:-2] + ("AA" if not once.endswith("AA") else "BB")
    assert _login(served, {"once": tampered})[0] == 401


def test_status_open_without_a_running_http_gateway_says_so(tmp_path: Path) -> None:
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"time": {"command": "mcp-server-time"}}}))
    (tmp_path / "toolroute.toml").write_text(f'[toolroute]\nstore = "{tmp_path / "store"}"\n')
    args = ["status", "--open", "--config", str(config)]
    res = CliRunner().invoke(cli.main, args)  # none ever ran
    assert res.exit_code == 2
    assert "no HTTP gateway is running with this config" in res.output
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
        timeout=30,
    )
    LoginBook({}).publish(tmp_path / "store", "http://127.0.0.1:1")  # left by a stopped one
    data = json.loads((tmp_path / "store" / LOGIN_FILE).read_text())
    (tmp_path / "store" / LOGIN_FILE).write_text(json.dumps({**data, "pid": int(gone.stdout)}))
    res = CliRunner().invoke(cli.main, args)
    assert res.exit_code == 2
    assert "no HTTP gateway is running with this config" in res.output
