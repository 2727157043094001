"""Serving at once (gateway/ops/startup.py), through real ``toolroute serve`` processes in front
of the reference time server and tests/fixtures/many_tools_server.py: with a server listing
20,000 tools behind it, the gateway answers, routes and calls time's tools while that server
is still being listed or indexed, and says so in find_tools and the status; a cursor that
never ends is cut with a warning, and the tools of the pages read are kept. Whatever order
the listings come in: a server whose listing never ends holds back no other server's calls,
find_tools, pass-through listing or status; a look-alike is held before find_tools returns it
while the server it imitates is still being indexed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.conftest import REPO, TIME_MAIN, TOOLROUTE
from tests.helpers.faults import text
from tests.helpers.gateways import GatewayProcess

pytestmark = pytest.mark.integration

MANY = REPO / "tests" / "fixtures" / "many_tools_server.py"


def _config(tmp_path: Path, *many: str, settings: str = "", time: bool = True) -> Path:
    servers = {"many": {"command": sys.executable, "args": [str(MANY), *many]}}
    if time:
        servers["time"] = {"command": sys.executable, "args": ["-c", TIME_MAIN]}
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    store = json.dumps(str(tmp_path / "store"))
    toml = f"[toolroute]\nstore = {store}\ncall_gate = false\n{settings}"
    (tmp_path / "toolroute.toml").write_text(toml)
    return path


ENDLESS_AND_SLOW = ("10", "--endless", "--page-delay", "1")
"""A listing that never ends, one page a second: every page within connect_timeout_s."""


async def _find(c: Client, query: str) -> dict[str, Any]:
    r = await c.call_tool("find_tools", {"query": query})
    return dict(json.loads(text(r)))


def test_a_server_with_20000_tools_holds_back_no_other_servers_tools(tmp_path: Path) -> None:
    gateway = GatewayProcess(_config(tmp_path, "20000"))

    async def main() -> None:
        with anyio.fail_after(180):
            await gateway.ready()
            async with Client(gateway.url) as c:
                found = await _find(c, "what is the current time in Tokyo")
                names = [x["name"] for x in found["candidates"]]
                assert "time__get_current_time" in names
                assert set(found["indexing"]) == {"many"}  # what is not routable yet
                assert found["indexing"]["many"].startswith(("listing", "waiting", "indexing"))
                args = {"timezone": "Asia/Tokyo"}
                r = await c.call_tool(
                    "call_tool", {"name": "time__get_current_time", "arguments": args}
                )
                assert not r.is_error and "Asia/Tokyo" in text(r)
                read = await c.read_resource("toolroute://status")
                status = json.loads(getattr(read.contents[0], "text", ""))
                assert "many" in status["indexing"] and "time" not in status["indexing"]

    try:
        anyio.run(main)
    finally:
        gateway.stop()


def test_a_cursor_that_never_ends_is_cut_with_a_warning_and_its_tools_kept(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path, "100", "--endless")
    done = subprocess.run(
        [str(TOOLROUTE), "sync", "--config", str(config), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "its tools/list cursor did not end in 1000 pages; its first 10 tools" in done.stderr
    servers = json.loads(done.stdout)["servers"]
    assert servers["many"] == {"status": "ok", "tools": 10}


def test_a_tool_with_a_schema_300_levels_deep_is_refused_by_name_not_its_server(
    tmp_path: Path,
) -> None:
    deep = REPO / "tests" / "fixtures" / "deep_schema_server.py"
    servers = {"deep": {"command": sys.executable, "args": [str(deep), "300"]}}
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    store = json.dumps(str(tmp_path / "store"))
    (tmp_path / "toolroute.toml").write_text(f"[toolroute]\nstore = {store}\n")
    done = subprocess.run(
        [str(TOOLROUTE), "sync", "--config", str(config), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "tool 'deep' left out of tools/list: it nests deeper than 128 levels" in done.stderr
    assert json.loads(done.stdout)["servers"]["deep"] == {"status": "ok", "tools": 1}


def test_a_call_right_after_start_sees_every_quick_servers_tools(tmp_path: Path) -> None:
    named = REPO / "tests" / "fixtures" / "named_server.py"
    servers = {
        "time": {"command": sys.executable, "args": ["-c", TIME_MAIN]},
        "clock": {"command": sys.executable, "args": [str(named), "clock", "read_wall_clock"]},
        "many": {"command": sys.executable, "args": [str(MANY), "300"]},
    }
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    store = json.dumps(str(tmp_path / "store"))
    settings = f"store = {store}\ncall_gate = false\nconnect_timeout_s = 120\n"
    (tmp_path / "toolroute.toml").write_text(f"[toolroute]\n{settings}")
    gateway = GatewayProcess(config)

    async def main() -> None:
        with anyio.fail_after(240):
            await gateway.ready()
            async with Client(gateway.url) as c:  # at once: the call waits for the indexing
                for query, server in (
                    ("what is the current time in Tokyo", "time"),
                    ("read_wall_clock", "clock"),
                    ("tool_00007", "many"),
                ):
                    r = await c.call_tool("find_tools", {"query": query, "k": 10})
                    found = json.loads(text(r))
                    assert server in {x["server"] for x in found["candidates"]}, query
                    assert "indexing" not in found

    try:
        anyio.run(main)
    finally:
        gateway.stop()


def test_a_listing_that_never_ends_holds_back_no_call_find_or_status(tmp_path: Path) -> None:
    config = _config(tmp_path, *ENDLESS_AND_SLOW, settings="connect_timeout_s = 5\n")
    gateway = GatewayProcess(config)

    async def main() -> None:
        with anyio.fail_after(60):  # before: every call waited connect_timeout_s + 120 s
            await gateway.ready()
            async with Client(gateway.url) as c:
                args = {"timezone": "Asia/Tokyo"}
                r = await c.call_tool(
                    "call_tool", {"name": "time__get_current_time", "arguments": args}
                )
                assert not r.is_error and "Asia/Tokyo" in text(r)
                found = await _find(c, "what is the current time in Tokyo")
                assert "time__get_current_time" in [x["name"] for x in found["candidates"]]
                assert found["indexing"]["many"].startswith("listing its tools")
                r = await c.call_tool("call_tool", {"name": "many__tool_00001", "arguments": {}})
                assert r.is_error and json.loads(text(r))["error"] == "unavailable"
                assert "not routable yet (listing its tools" in text(r)
            while True:  # `toolroute status` shows the start, not "no gateway has run"
                done = await anyio.run_process(
                    [str(TOOLROUTE), "status", "--config", str(config), "--json"], check=False
                )
                if done.returncode == 0:
                    break
                assert b"no gateway has run" in done.stderr
                await anyio.sleep(0.2)
            status = json.loads(done.stdout)
            assert status["running"] and "many" in status["indexing"]

    try:
        anyio.run(main)
    finally:
        gateway.stop()


def test_pass_through_lists_the_quick_servers_while_a_listing_never_ends(tmp_path: Path) -> None:
    settings = 'connect_timeout_s = 5\nexpose = "all"\n'
    gateway = GatewayProcess(_config(tmp_path, *ENDLESS_AND_SLOW, settings=settings))

    async def main() -> None:
        with anyio.fail_after(60):  # before: the first tools/list listed that server too
            await gateway.ready()
            async with Client(gateway.url) as c:
                names = [t.name for t in (await c.list_tools()).tools]
                assert "get_current_time" in names
                assert not [n for n in names if n.startswith(("tool_", "many__"))]

    try:
        anyio.run(main)
    finally:
        gateway.stop()


@pytest.mark.parametrize(
    ("name", "look_alike"),
    [
        ("get_current_time", "get_current_t\u0456me"),
        ("probe_all", "probe_aII"),  # ASCII: before, an all-ASCII listing was not compared
    ],
)
def test_a_look_alike_is_held_before_find_tools_sees_it_while_its_original_indexes(
    tmp_path: Path, name: str, look_alike: str
) -> None:
    listed = tmp_path / "original.listed"
    original = [str(MANY), "4000", "--extra", name, "--mark", str(listed)]
    alike = [str(MANY), "3", "--extra", look_alike, "--after", str(listed)]
    servers = {
        "big": {"command": sys.executable, "args": original},
        "quick": {"command": sys.executable, "args": alike},
    }
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    store = json.dumps(str(tmp_path / "store"))
    settings = f"store = {store}\ncall_gate = false\nconnect_timeout_s = 60\n"
    (tmp_path / "toolroute.toml").write_text(f"[toolroute]\n{settings}")
    gateway = GatewayProcess(config)

    async def main() -> None:
        with anyio.fail_after(120):
            await gateway.ready()
            async with Client(gateway.url) as c:
                while True:  # until the quick server is routable
                    found = await _find(c, "tool_00001")
                    if any(x["server"] == "quick" for x in found["candidates"]):
                        break
                    await anyio.sleep(0.2)
                # before: the quick server was reviewed alone, or after the big one indexed
                assert "big" in found.get("indexing", {})
                found = await _find(c, name.replace("_", " "))
                assert f"quick__{look_alike}" not in [x["name"] for x in found["candidates"]]
                read = await c.read_resource("toolroute://status")
                status = json.loads(getattr(read.contents[0], "text", ""))
                assert status["quarantined"][f"quick__{look_alike}"]["reason"] == "look-alike"

    try:
        anyio.run(main)
    finally:
        gateway.stop()


def test_a_quick_servers_look_alike_is_held_until_the_server_it_imitates_has_listed(
    tmp_path: Path,
) -> None:
    """The reverse order: the quick server lists a look-alike of a tool the slow one has not
    listed yet. A name that is not plain is held from the quick server's first review until
    every server has listed, then reviewed as before: the look-alike stays held, a name
    that imitates nothing (Cyrillic ``о``) is released."""
    gate = tmp_path / "slow.go"
    alike, other = "get_current_t\u0456me", "get_weather_t\u043eday"
    servers = {
        "slow": {
            "command": sys.executable,
            "args": [str(MANY), "2", "--extra", "get_current_time", "--after", str(gate)],
        },
        "quick": {"command": sys.executable, "args": [str(MANY), "2", "--extra", alike]},
        "other": {"command": sys.executable, "args": [str(MANY), "2", "--extra", other]},
    }
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    store = json.dumps(str(tmp_path / "store"))
    settings = f"store = {store}\ncall_gate = false\nconnect_timeout_s = 60\n"
    (tmp_path / "toolroute.toml").write_text(f"[toolroute]\n{settings}")
    gateway = GatewayProcess(config)

    async def status(c: Client) -> dict[str, Any]:
        read = await c.read_resource("toolroute://status")
        return dict(json.loads(getattr(read.contents[0], "text", "")))

    async def main() -> None:
        with anyio.fail_after(120):
            await gateway.ready()
            async with Client(gateway.url) as c:
                while True:  # until quick and other are indexed, slow still listing
                    now = await status(c)
                    indexing = now.get("indexing", {})
                    if "slow" in indexing and not {"quick", "other"} & set(indexing):
                        break
                    await anyio.sleep(0.2)
                held = now["quarantined"]  # before: neither was held, both were routable
                for name in (f"quick__{alike}", f"other__{other}", "quick__tool_00001"):
                    assert held[name]["reason"] == "look-alike", name
                    assert held[name]["flags"] == [
                        "its name is not plain: held until slow has listed"
                    ]
                found = await _find(c, "get current time")
                assert f"quick__{alike}" not in [x["name"] for x in found["candidates"]]
                r = await c.call_tool("call_tool", {"name": f"quick__{alike}", "arguments": {}})
                assert r.is_error and json.loads(text(r))["error"] == "quarantined"
                gate.touch()  # slow lists now
                while "indexing" in (found := await _find(c, "get current time")):
                    await anyio.sleep(0.2)
                held = (await status(c))["quarantined"]
                assert held[f"quick__{alike}"]["flags"] == ["name looks like get_current_time"]
                assert f"other__{other}" not in held and "quick__tool_00001" not in held
                r = await c.call_tool("call_tool", {"name": f"other__{other}", "arguments": {}})
                assert not r.is_error and text(r) == f"{other} done"

    try:
        anyio.run(main)
    finally:
        gateway.stop()
