"""A reload of a real `toolroute serve --transport http` fails closed: every state an edit can
leave the config files in (empty, deleted, truncated, invalid, partially valid, not UTF-8, a
directory, a dangling symlink, a FIFO nobody writes) is refused with its reason in the log and
in status, while a call stays in flight and other calls go on; the tokens keep being asked for
throughout. A symlink swapped to a complete new file is applied, swap after swap. Dropping
``[auth]`` takes an explicit ``enabled = false``, logged and shown."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import REPO, TIME_MAIN
from tests.helpers.gateways import GatewayProcess, client_as
from tests.helpers.net import post_initialize

pytestmark = pytest.mark.integration

LATCH = REPO / "tests" / "fixtures" / "latch_server.py"
WAIT_S = 180  # the first start loads the model and indexes; the machine may be busy
TOKEN = "fail-closed-token-0123456789"


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def _servers(latches: Path) -> str:
    return json.dumps(
        {
            "mcpServers": {
                "keep": {"command": sys.executable, "args": [str(LATCH), str(latches)]},
                "time": {"command": sys.executable, "args": ["-c", TIME_MAIN]},
            }
        }
    )


def _status(port: int, token: str | None) -> int:
    return post_initialize(port, {"Authorization": f"Bearer {token}"} if token else {})


def _replace(path: Path, make: Callable[[Path], None]) -> None:
    """Put what ``make`` creates at ``path`` in one rename (as editors and config tools do)."""
    tmp = path.with_name(f".{path.name}.new")
    if tmp.is_dir() and not tmp.is_symlink():
        tmp.rmdir()
    else:
        tmp.unlink(missing_ok=True)
    make(tmp)
    if tmp.is_dir() and not tmp.is_symlink():
        path.unlink(missing_ok=True)  # a directory cannot be renamed over a file
    os.replace(tmp, path)


async def _status_until(store: Path, wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The gateway's status.json once ``wanted`` holds for it (written as it changes)."""
    with anyio.fail_after(WAIT_S):
        while True:
            try:
                status = json.loads((store / "status.json").read_text())
            except (OSError, ValueError):
                status = {}
            if wanted(status):
                return status
            await anyio.sleep(0.05)


def _states(latches: Path, store: str) -> list[tuple[str, str, Callable[[Path], None], str]]:
    """(what, which file, how it is made, a word of the refusal's reason)."""
    good_servers = _servers(latches)
    half_toml = f"[toolroute]\nstore = {store}\ncall_gate = false\n"  # cut before [auth]
    partly = json.loads(good_servers)
    partly["mcpServers"]["bad"] = {"command": ""}
    return [
        ("empty settings", "toml", lambda p: p.write_text(""), "missing or empty"),
        ("deleted settings", "toml", lambda p: None, "missing or empty"),
        ("truncated settings", "toml", lambda p: p.write_text(half_toml), "enabled = false"),
        ("invalid settings", "toml", lambda p: p.write_text("[toolroute\n"), "invalid TOML"),
        ("empty servers", "json", lambda p: p.write_text(""), "empty"),
        ("deleted servers", "json", lambda p: None, "no such file"),
        ("truncated servers", "json", lambda p: p.write_text(good_servers[:40]), "invalid JSON"),
        ("partly valid servers", "json", lambda p: p.write_text(json.dumps(partly)), "bad"),
        ("servers not UTF-8", "json", lambda p: p.write_bytes(b"\xff\xfe{}"), "not UTF-8"),
        ("servers a directory", "json", lambda p: p.mkdir(), "directory"),
        (
            "servers a dangling symlink",
            "json",
            lambda p: p.symlink_to(p.with_name("nowhere.json")),
            "no such file",
        ),
        ("servers a FIFO", "json", lambda p: os.mkfifo(p), "not a regular file"),
    ]


async def _wait_for(log: Path, text: str, count: int) -> str:
    with anyio.fail_after(WAIT_S):
        while True:
            lines = [x for x in log.read_text(errors="replace").splitlines() if text in x]
            if len(lines) >= count:
                return lines[count - 1]
            await anyio.sleep(0.05)


def test_every_broken_state_of_the_config_files_is_refused_and_auth_stays_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAIL_CLOSED_TOKEN", TOKEN)  # the gateway inherits it when spawned
    latches = tmp_path / "latches"
    latches.mkdir()
    config = tmp_path / "servers.json"
    config.write_text(_servers(latches))
    toml = tmp_path / "toolroute.toml"
    store = json.dumps(str(tmp_path / "store"))
    good_toml = f"[toolroute]\nstore = {store}\ncall_gate = false\n"
    good_toml += '[auth]\nbearer_token_env = "FAIL_CLOSED_TOKEN"\n'
    toml.write_text(good_toml)
    refused = "config not reloaded, still serving the previous one"

    async def main() -> None:
        gw = GatewayProcess(config)
        try:
            await gw.ready(WAIT_S)
            headers = {"Authorization": f"Bearer {TOKEN}"}
            async with client_as(gw.url, headers) as c:
                held: dict[str, Any] = {}

                async def hold() -> None:
                    args = {"name": "keep__hold", "arguments": {"key": "keep"}}
                    held["result"] = await c.call_tool("call_tool", args)

                async with anyio.create_task_group() as tg:
                    tg.start_soon(hold)
                    with anyio.fail_after(WAIT_S):
                        while not (latches / "keep.started").exists():
                            await anyio.sleep(0.02)
                    for n, (what, which, make, why) in enumerate(_states(latches, store), 1):
                        path = toml if which == "toml" else config
                        if what.startswith("deleted"):
                            path.unlink()
                        else:
                            _replace(path, make)
                        line = await _wait_for(gw.log, refused, n)
                        assert why in line, (what, line)
                        # tokens still asked for, and a new client is answered (no hang)
                        assert await anyio.to_thread.run_sync(_status, gw.port, None) == 401
                        assert await anyio.to_thread.run_sync(_status, gw.port, TOKEN) == 200
                        r = await c.call_tool(
                            "call_tool",
                            {"name": "time__get_current_time", "arguments": {"timezone": "UTC"}},
                        )
                        assert not r.is_error, (what, _text(r))
                        status = await _status_until(
                            tmp_path / "store", lambda s: "reload" in s.get("config", {})
                        )
                        assert why in status["config"]["reload"], what
                        restore = good_toml if which == "toml" else _servers(latches)
                        if path.is_dir() and not path.is_symlink():
                            shutil.rmtree(path)
                        _replace(path, lambda p, text=restore: p.write_text(text))
                    assert "result" not in held  # still in flight through every refusal
                    (latches / "keep").touch()
                assert _text(held["result"]) == "released keep"

                # a symlink swapped to a complete new file is an edit like any other, and so
                # is the next swap of the same link (the link itself is watched)
                servers = json.loads(_servers(latches))
                for n, extra in enumerate(({"time2": servers["mcpServers"]["time"]}, {}), 2):
                    target = tmp_path / f"servers-v{n}.json"
                    target.write_text(
                        json.dumps({"mcpServers": {**servers["mcpServers"], **extra}})
                    )
                    _replace(config, lambda p, t=target: p.symlink_to(t))
                    line = "added server time2" if extra else "removed server time2"
                    await _wait_for(gw.log, f"config reloaded: {line}", 1)

                # turning [auth] off is explicit, logged as a warning and shown in status
                _replace(
                    toml,
                    lambda p: p.write_text(
                        good_toml.split("[auth]")[0] + "[auth]\nenabled = false\n"
                    ),
                )
                await _wait_for(gw.log, "authentication off ([auth] enabled = false", 1)
                assert await anyio.to_thread.run_sync(_status, gw.port, None) == 200
                status = await _status_until(
                    tmp_path / "store", lambda s: "auth" in s.get("config", {})
                )
                assert "reload" not in status["config"]  # the last reload was taken
            text = gw.log.read_text(errors="replace")
            assert "Traceback" not in text
        finally:
            gw.stop()

    anyio.run(main)
