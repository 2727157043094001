"""Remote servers behind OAuth 2.1, against a real protected MCP server and its authorization
server on loopback (tests/fixtures/oauth_server.py: the SDK's resource-server and
authorization-server support): `toolroute auth` signs in (the browser's part played by httpx
following the authorize redirect), a real `toolroute serve` gateway uses and refreshes the
token, a revoked sign-in is reported with the command that fixes it while another server
keeps serving, and no token ever shows up where it should not."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from cryptography.fernet import Fernet
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.conftest import REPO
from tests.helpers.gateways import free_port
from tests.helpers.net import stop
from toolroute.config import load_config
from toolroute.downstream.oauth import SECRET_KEY_ENV, StoredCredentials
from toolroute.downstream.sync import list_all
from toolroute.gateway.ops.app import running_downstreams
from toolroute.store import open_store

pytestmark = pytest.mark.integration

TOOLROUTE = Path(sys.executable).with_name("toolroute")
FIXTURES = REPO / "tests" / "fixtures"


@dataclass(frozen=True)
class Protected:
    issuer: str
    url: str

    def stats(self) -> dict[str, Any]:
        return dict(httpx2.get(f"{self.issuer}/admin/stats", timeout=10).json())

    def revoke_all(self) -> None:
        httpx2.post(f"{self.issuer}/admin/revoke-all", timeout=10).raise_for_status()


def _lines(proc: subprocess.Popen[bytes], n: int, timeout_s: float = 60) -> list[str]:
    """The first ``n`` lines a child prints, waiting at most ``timeout_s``."""
    assert proc.stdout is not None
    fd, buf = proc.stdout.fileno(), b""
    while buf.count(b"\n") < n:
        ready, _, _ = select.select([fd], [], [], timeout_s)
        if not ready:
            raise TimeoutError(f"no line from {proc.args!r} in {timeout_s} s")
        chunk = os.read(fd, 4096)
        if not chunk:
            raise RuntimeError(f"{proc.args!r} exited with {proc.wait(10)}")
        buf += chunk
    return [line.strip() for line in buf.decode().splitlines()[:n]]


@contextmanager
def _process(args: list[str]) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
    try:
        yield proc
    finally:
        stop(proc)
        if proc.stdout is not None:
            proc.stdout.close()


@contextmanager
def protected_server(ttl_s: int = 3600) -> Iterator[Protected]:
    """The OAuth-protected MCP server and its authorization server (tokens live ``ttl_s``)."""
    with _process([sys.executable, str(FIXTURES / "oauth_server.py"), "--ttl", str(ttl_s)]) as p:
        as_line, mcp_line = _lines(p, 2)
        yield Protected(
            f"http://127.0.0.1:{as_line.split()[1]}", f"http://127.0.0.1:{mcp_line.split()[1]}/mcp"
        )


@contextmanager
def header_server(log: Path) -> Iterator[str]:
    """Another url server (no OAuth) that records the headers of every request in ``log``."""
    with _process([sys.executable, str(FIXTURES / "header_server.py"), str(log)]) as p:
        (line,) = _lines(p, 1)
        yield f"http://127.0.0.1:{line.split()[1]}/mcp"


class Gateway:
    """`toolroute -vv serve --transport http` on a free loopback port, stderr kept in a file."""

    def __init__(self, config: Path, env: dict[str, str]) -> None:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.port = port
        self.log = config.with_name("gateway.log")
        args = [str(TOOLROUTE), "-vv", "serve", "--config", str(config)]
        with self.log.open("w") as err:
            self.proc = subprocess.Popen(
                [*args, "--transport", "http", "--port", str(port)],
                stdout=subprocess.DEVNULL,
                stderr=err,
                env=env,
            )

    async def ready(self) -> None:
        with anyio.fail_after(180):  # the model loads and the servers are listed first
            while True:
                try:
                    await (await anyio.connect_tcp("127.0.0.1", self.port)).aclose()
                    return
                except OSError:
                    assert self.proc.poll() is None, self.log.read_text()
                    await anyio.sleep(0.2)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=20)


def write_config(directory: Path, servers: dict[str, Any]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    store = json.dumps(str(directory / "store"))
    settings = f"[toolroute]\nstore = {store}\ncall_gate = false\nconnect_timeout_s = 10\n"
    (directory / "toolroute.toml").write_text(settings)
    return path


def key_env() -> dict[str, str]:
    return {**os.environ, SECRET_KEY_ENV: Fernet.generate_key().decode()}


async def sign_in(config: Path, name: str, env: dict[str, str]) -> str:
    """`toolroute auth NAME --no-browser`, its authorize URL followed as a browser would
    (the fixture approves at once and redirects to toolroute's loopback port); its output."""
    args = [str(TOOLROUTE), "auth", name, "--config", str(config), "--no-browser"]
    with anyio.fail_after(60):
        async with await anyio.open_process(args, env=env) as proc:
            assert proc.stdout is not None and proc.stderr is not None
            lines = BufferedByteReceiveStream(proc.stdout)
            printed = [(await lines.receive_until(b"\n", 65536)).decode()]
            while not printed[-1].startswith("http"):
                printed.append((await lines.receive_until(b"\n", 65536)).decode())
            async with httpx2.AsyncClient(follow_redirects=True) as browser:
                page = await browser.get(printed[-1])
            assert "signed in" in page.text, page.text
            rest = b""
            async for chunk in proc.stdout:
                rest += chunk
            err = b"".join([c async for c in proc.stderr]).decode()
            assert await proc.wait() == 0, err
    return "\n".join(printed) + rest.decode() + err


def status_of(directory: Path) -> dict[str, Any]:
    try:
        return dict(json.loads((directory / "store" / "status.json").read_text()))
    except (FileNotFoundError, json.JSONDecodeError):
        return {}


async def until_status(directory: Path, server: str, want: str) -> dict[str, Any]:
    """The server's entry in status.json once its status is ``want`` (bounded)."""
    with anyio.fail_after(60):
        while True:
            entry = status_of(directory).get("servers", {}).get(server, {})
            if entry.get("status") == want and (want != "up" or entry.get("tools")):
                return dict(entry)
            await anyio.sleep(0.1)


@asynccontextmanager
async def agent(url: str) -> AsyncIterator[Any]:
    async with (
        create_mcp_http_client() as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        yield client


def text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def test_a_protected_server_signed_in_with_toolroute_auth_serves_refreshes_and_lapses_alone(
    tmp_path: Path,
) -> None:
    env = key_env()
    with (
        protected_server(ttl_s=10) as protected,
        header_server(tmp_path / "other-headers.jsonl") as other,
    ):
        config = write_config(tmp_path, {"prot": {"url": protected.url}, "other": {"url": other}})
        gateway_env = {**env, "TOOLROUTE_THREADS": "1"}
        seen: list[str] = []  # everything the operator and the agent were shown

        async def main() -> None:
            gateway = Gateway(config, gateway_env)
            try:
                await gateway.ready()
                # never signed in: down with the exact fix, the other server serves
                prot = await until_status(tmp_path, "prot", "down")
                fix = f"toolroute auth prot --config {config}"
                assert "run `toolroute auth prot`" in prot["error"], prot
                assert prot["fix"].startswith(fix), prot  # the exact command, for the operator
                await until_status(tmp_path, "other", "up")
                async with agent(gateway.url) as client:
                    ok = await client.call_tool(
                        "call_tool", {"name": "other__whisper", "arguments": {"text": "hi"}}
                    )
                    assert "whispered: hi" in text(ok)

                    seen.append(await sign_in(config, "prot", env))
                    await until_status(tmp_path, "prot", "up")  # picked up, no restart
                    found = await client.call_tool("find_tools", {"query": "echo a text", "k": 5})
                    seen.append(text(found))
                    assert "prot__echo" in text(found)

                    # the 10 s token is refreshed 2 s before it expires (a loaded machine can hold a
                    # request for longer than the 0.8 s a 4 s token left): every call succeeds
                    calls = 0
                    with anyio.fail_after(60):
                        while protected.stats()["refreshes"] < 2:
                            got = await client.call_tool(
                                "call_tool", {"name": "prot__echo", "arguments": {"text": "x"}}
                            )
                            seen.append(text(got))
                            assert not got.is_error and "echo: x" in text(got), text(got)
                            calls += 1
                            await anyio.sleep(0.2)
                    assert calls > 1

                    protected.revoke_all()  # the user disconnects toolroute at the provider
                    with anyio.fail_after(30):
                        while True:  # a call in flight on the old token may still pass
                            refused = await client.call_tool(
                                "call_tool", {"name": "prot__echo", "arguments": {"text": "y"}}
                            )
                            seen.append(text(refused))
                            if refused.is_error:
                                break
                            await anyio.sleep(0.2)
                    body = json.loads(text(refused))
                    assert body["error"] == "auth_required", body
                    assert "`toolroute auth prot`" in body["message"], body
                    assert str(tmp_path) not in text(refused)  # the agent sees no paths
                    lapsed = await until_status(tmp_path, "prot", "down")
                    assert "lapsed" in lapsed["error"] and lapsed["fix"].startswith(fix), lapsed
                    shown = subprocess.run(
                        [str(TOOLROUTE), "status", "--config", str(config)],
                        capture_output=True,
                        text=True,
                        timeout=60,
                    )
                    assert f"fix: {lapsed['fix']}" in shown.stdout, shown.stdout
                    seen.append(shown.stdout)
                    ok = await client.call_tool(
                        "call_tool", {"name": "other__whisper", "arguments": {"text": "still"}}
                    )
                    assert "whispered: still" in text(ok)
                    seen.append(json.dumps(status_of(tmp_path)))
            finally:
                gateway.stop()
            seen.append(gateway.log.read_text())

        anyio.run(main)
        issued = protected.stats()["issued"]
    assert len(issued) >= 6  # the sign-in's pair and at least two refreshed pairs
    everything = "\n".join(seen)
    assert "DEBUG" in seen[-1]  # the gateway logged at debug level throughout
    assert "Traceback" not in seen[-1]  # a lapsed sign-in is a status line, not a stack
    headers = (tmp_path / "other-headers.jsonl").read_text()
    store_bytes = b"".join(p.read_bytes() for p in (tmp_path / "store").rglob("toolroute.db*"))
    for token in issued:
        assert token not in everything  # logs, status, tool results, auth's output
        assert token not in headers  # never sent to another server
        assert token.encode() not in store_bytes  # encrypted at rest


def test_a_stored_token_past_its_expiry_is_refreshed_when_the_gateway_connects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = key_env()
    monkeypatch.setenv(SECRET_KEY_ENV, env[SECRET_KEY_ENV])
    with protected_server() as protected:
        config = write_config(tmp_path, {"prot": {"url": protected.url}})
        anyio.run(sign_in, config, "prot", env)
        with open_store(tmp_path / "store") as st:  # the gateway was off while the token expired
            row = st.get_oauth("prot", protected.url)
            assert row is not None and row.tokens is not None
            st.put_oauth_tokens("prot", protected.url, row.tokens, expires_at=1.0)
        cfg = load_config(config)

        async def main() -> None:
            with anyio.fail_after(30):
                async with running_downstreams(cfg) as downstreams:
                    listed = (await list_all(downstreams, 10))["prot"]
                    assert not isinstance(listed, Exception), listed
                    result, _ = await downstreams["prot"].call_tool("echo", {"text": "back"})
                    assert "echo: back" in text(result)

        anyio.run(main)
        assert protected.stats()["refreshes"] == 1
        with open_store(tmp_path / "store") as st:
            row = st.get_oauth("prot", protected.url)
            assert row is not None and (row.expires_at or 0) > 1.0  # the new token was kept


def test_a_token_is_never_sent_to_a_server_at_another_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = key_env()
    monkeypatch.setenv(SECRET_KEY_ENV, env[SECRET_KEY_ENV])
    with protected_server() as protected, header_server(tmp_path / "h.jsonl") as other:
        config = write_config(tmp_path, {"prot": {"url": protected.url}})
        anyio.run(sign_in, config, "prot", env)
        # the same name now points elsewhere (an edited config, a hijacked entry)
        config = write_config(tmp_path, {"prot": {"url": other}})

        async def main() -> None:
            with anyio.fail_after(30):
                async with running_downstreams(load_config(config)) as downstreams:
                    assert downstreams["prot"].status == "up", downstreams["prot"].error

        anyio.run(main)
        issued = protected.stats()["issued"]
    headers = (tmp_path / "h.jsonl").read_text()
    assert headers and not any(t in headers for t in issued)


def test_stored_credentials_cannot_be_read_with_another_key(tmp_path: Path) -> None:
    from mcp.shared.auth import OAuthToken

    from toolroute.downstream.oauth import AuthorizationNeeded

    token = OAuthToken(access_token="at-secret", token_type="Bearer", expires_in=60)

    async def main() -> None:
        mine = StoredCredentials(tmp_path, "s", "http://x/mcp", Fernet(Fernet.generate_key()))
        await mine.set_tokens(token)
        assert (await mine.get_tokens()) == token
        other = StoredCredentials(tmp_path, "s", "http://x/mcp", Fernet(Fernet.generate_key()))
        with pytest.raises(AuthorizationNeeded, match="cannot be decrypted"):
            await other.get_tokens()
        elsewhere = StoredCredentials(tmp_path, "s", "http://y/mcp", mine.box)
        assert await elsewhere.get_tokens() is None  # bound to the URL it was issued for

    anyio.run(main)
    assert b"at-secret" not in (tmp_path / "toolroute.db").read_bytes()


def test_credentials_round_trip_through_a_postgresql_store(pg: Any) -> None:
    from mcp.shared.auth import OAuthToken

    url = pg.create_database(f"t_{uuid.uuid4().hex[:12]}")
    token = OAuthToken(access_token="at-pg", token_type="Bearer", expires_in=60)
    box = Fernet(Fernet.generate_key())

    async def main() -> None:
        stored = StoredCredentials(url, "s", "http://x/mcp", box)
        await stored.set_tokens(token)
        again = StoredCredentials(url, "s", "http://x/mcp", box)
        assert await again.get_tokens() == token
        assert again.expires_at is not None

    anyio.run(main)
    with open_store(url) as st:
        row = st.get_oauth("s", "http://x/mcp")
        assert row is not None and row.tokens is not None and b"at-pg" not in row.tokens


def test_toolroute_auth_without_a_secret_key_says_how_to_make_one(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"prot": {"url": "http://127.0.0.1:9/mcp"}})
    env = {k: v for k, v in os.environ.items() if k != SECRET_KEY_ENV}
    done = subprocess.run(
        [str(TOOLROUTE), "auth", "prot", "--config", str(config), "--no-browser"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and SECRET_KEY_ENV in done.stderr
    assert "Fernet.generate_key()" in done.stderr


def test_a_url_server_with_a_header_from_the_environment_sends_it_and_no_oauth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TR_API_TOKEN", "static-token-from-env")
    log = tmp_path / "h.jsonl"
    with header_server(log) as url:
        entry = {"url": url, "headers": {"Authorization": "Bearer ${TR_API_TOKEN}"}}
        config = write_config(tmp_path, {"keyed": entry})

        async def main() -> None:
            with anyio.fail_after(30):
                async with running_downstreams(load_config(config)) as downstreams:
                    assert downstreams["keyed"].auth is None  # its own token: no OAuth flow
                    result, _ = await downstreams["keyed"].call_tool("whisper", {"text": "psst"})
                    assert "whispered: psst" in text(result)

        anyio.run(main)
    sent = [json.loads(line) for line in log.read_text().splitlines()]
    assert sent and all(h["authorization"] == "Bearer static-token-from-env" for h in sent)


def test_toolroute_auth_on_a_server_without_oauth_fails_in_one_line(tmp_path: Path) -> None:
    from tests.helpers.net import denying_server

    with denying_server() as url:  # 401 to everything: no metadata, no registration
        config = write_config(tmp_path, {"locked": {"url": url}})
        done = subprocess.run(
            [str(TOOLROUTE), "auth", "locked", "--config", str(config), "--no-browser"],
            capture_output=True,
            text=True,
            env=key_env(),
            timeout=60,
        )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: signing in to locked failed: "), done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_a_second_sign_in_reuses_the_registration_and_a_configured_client_id_registers_none(
    tmp_path: Path,
) -> None:
    env = key_env()
    with protected_server() as protected:
        config = write_config(tmp_path / "dynamic", {"prot": {"url": protected.url}})
        anyio.run(sign_in, config, "prot", env)
        anyio.run(sign_in, config, "prot", env)  # same loopback port: same client
        assert protected.stats()["registrations"] == 1

        # a client registered by hand (here through /register, as an admin would)
        port = free_port()
        registered = httpx2.post(
            f"{protected.issuer}/register",
            json={
                "redirect_uris": [f"http://127.0.0.1:{port}/callback"],
                "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"],
                "client_name": "by hand",
            },
            timeout=10,
        ).json()
        entry = {
            "url": protected.url,
            "oauth": {"clientId": registered["client_id"], "callbackPort": port},
        }
        config = write_config(tmp_path / "configured", {"prot": entry})
        anyio.run(sign_in, config, "prot", env)
        stats = protected.stats()
    assert stats["registrations"] == 2  # the dynamic one and the admin's; none by toolroute
    assert stats["authorizations"] == 3
