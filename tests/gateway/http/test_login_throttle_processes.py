"""Guessing tokens at the status page's login of a real `toolroute serve --transport http`
(issue 23): after LOGIN_FAILURES wrong tokens one address gets 429 with Retry-After, even for
a right token; a right token from another address signs in as before. Two loopback source
addresses (127.0.0.2, 127.0.0.3) stand for two clients."""

from __future__ import annotations

import http.client
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest

from tests.helpers.status import serving_gateway
from toolroute.gateway.http.login import LOGIN_FAILURES

pytestmark = pytest.mark.integration


def _login(base: str, source: str, token: str) -> tuple[int, dict[str, str], str]:
    conn = http.client.HTTPConnection(
        "127.0.0.1", urlsplit(base).port, timeout=30, source_address=(source, 0)
    )
    try:
        conn.request(
            "POST",
            "/status/login",
            body=urlencode({"token": token}),
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read().decode()
    finally:
        conn.close()


def test_wrong_tokens_from_one_address_get_429_while_another_address_signs_in(
    tmp_path: Path,
) -> None:
    with serving_gateway(tmp_path, {"alice": ["time"]}) as s:
        right = s.tokens["alice"]
        for n in range(LOGIN_FAILURES):
            assert _login(s.base, "127.0.0.2", f"guess-{n}")[0] == 401, n
        code, headers, page = _login(s.base, "127.0.0.2", "guess-again")
        assert code == 429 and 1 <= int(headers["retry-after"]) <= 300
        assert "Too many failed sign-ins" in page and "set-cookie" not in headers
        code, headers, _ = _login(s.base, "127.0.0.2", right)  # guessing must not go on
        assert code == 429 and "set-cookie" not in headers
        code, headers, _ = _login(s.base, "127.0.0.3", right)
        assert code == 303 and "set-cookie" in headers
