"""A forged GET to `toolroute auth`'s loopback callback (a code or an error without this
sign-in's ``state``, as any local process or an open web page could send) is refused with 400
and ignored: the operator's real sign-in, against a real OAuth-protected server, still ends
signed in."""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from tests.downstream.test_oauth import key_env, protected_server, write_config

pytestmark = pytest.mark.integration

TOOLROUTE = Path(sys.executable).with_name("toolroute")


def test_a_forged_callback_does_not_end_the_operator_s_sign_in(tmp_path: Path) -> None:
    with protected_server() as server:
        config = write_config(tmp_path, {"docs": {"url": server.url}})
        env = key_env()

        async def main() -> None:
            args = [str(TOOLROUTE), "auth", "docs", "--config", str(config), "--no-browser"]
            with anyio.fail_after(60):
                async with await anyio.open_process(args, env=env) as proc:
                    assert proc.stdout is not None and proc.stderr is not None
                    lines = BufferedByteReceiveStream(proc.stdout)
                    url = ""
                    while not url.startswith("http"):
                        url = (await lines.receive_until(b"\n", 65536)).decode()
                    query = parse_qs(urlsplit(url).query)
                    callback = query["redirect_uri"][0]
                    async with httpx2.AsyncClient() as attacker:
                        for forged in (
                            {"code": "forged", "state": "not-the-state"},
                            {"code": "forged"},
                            {"error": "access_denied"},
                            {"error": "access_denied", "state": query["state"][0] + "x"},
                        ):
                            r = await attacker.get(callback, params=forged)
                            assert r.status_code == 400, (forged, r.text)
                    async with httpx2.AsyncClient(follow_redirects=True) as browser:
                        page = await browser.get(url)  # the operator's own, after them
                    assert "signed in" in page.text, page.text
                    rest = b"".join([c async for c in proc.stdout])
                    err = b"".join([c async for c in proc.stderr]).decode()
                    assert await proc.wait() == 0, err
                    assert b"docs" in rest, rest

        anyio.run(main)
