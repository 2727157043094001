"""The gateway with real reference MCP servers (PyPI: mcp-server-time, mcp-server-git; npm:
server-memory, server-filesystem, server-everything), driven by real MCP clients: the SDK
client in memory and over stdio / streamable HTTP, and the npm MCP Inspector CLI. What needs no
process (the call gate, preconditions, bind mode, request_capability, re-listing on
list_changed) is tested against in-memory servers in tests/gateway/test_find.py.

`.ci/run` installs the npm servers into .toolroute/npm; the tests skip with the reason when
node or those packages are absent.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import (
    INSPECTOR,
    NPM_SERVERS,
    REPO,
    TIME_MAIN,
    TOOLROUTE,
    needs_npm,
)
from toolroute.config import load_config
from toolroute.embed.onnx import OnnxEmbedder
from toolroute.gateway.ops.app import running_downstreams
from toolroute.gateway.ops.syncing import sync_once, sync_router
from toolroute.gateway.shell.server import Gateway
from toolroute.settings import ToolrouteSettings

pytestmark = pytest.mark.integration


@pytest.fixture
def config_file(tmp_path: Path) -> Iterator[Path]:
    """The five reference servers; the time server carries a unique marker to find its pid."""
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "-c",
            "user.email=t@t",
            "-c",
            "user.name=t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "init",
        ],
        check=True,
    )
    marker = f"toolroute-test-{uuid.uuid4().hex}"
    servers: dict[str, Any] = {
        "time": {"command": sys.executable, "args": ["-c", TIME_MAIN, marker]},
        "git": {
            "command": sys.executable,
            "args": ["-m", "mcp_server_git", "--repository", str(repo)],
        },
        "memory": {
            "command": "node",
            "args": [str(NPM_SERVERS["memory"])],
            "env": {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")},
        },
        "filesystem": {"command": "node", "args": [str(NPM_SERVERS["filesystem"]), str(tmp_path)]},
        "everything": {"command": "node", "args": [str(NPM_SERVERS["everything"])]},
    }
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    # These tests call tools without find_tools first (the Inspector CLI is one call per
    # process), so the per-session call gate is off here; its own tests turn it on.
    (tmp_path / "toolroute.toml").write_text(
        f'[toolroute]\nstore = "{tmp_path / "store"}"\ncall_timeout_s = 20\ncall_gate = false\n'
    )
    path.with_suffix(".marker").write_text(marker)
    yield path


def _text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


@needs_npm
def test_second_sync_finds_every_tool_unchanged(config_file: Path) -> None:
    cfg = load_config(config_file)
    first = anyio.run(sync_once, cfg)
    assert {s.name: s.status for s in first.servers} == dict.fromkeys(cfg.servers, "ok")
    assert first.index.added > 30 and first.index.embedded > 0
    second = anyio.run(sync_once, cfg)
    assert second.index.unchanged == first.index.added
    assert (
        second.index.added,
        second.index.updated,
        second.index.removed,
        second.index.embedded,
    ) == (0, 0, 0, 0)


@needs_npm
def test_gateway_finds_and_calls_through_a_real_client(
    config_file: Path, onnx: OnnxEmbedder
) -> None:
    cfg = load_config(config_file)

    async def main() -> None:
        async with running_downstreams(cfg) as downstreams:
            router, _ = await sync_router(cfg, downstreams, embedder=onnx)
            gw = Gateway(router, downstreams, ToolrouteSettings(call_timeout_s=20, call_gate=False))
            async with Client(gw.server, raise_exceptions=True) as c:
                names = [t.name for t in (await c.list_tools()).tools]
                assert names == ["find_tools", "call_tool", "request_capability"]
                r = await c.call_tool(
                    "find_tools", {"query": "what time is it in Tokyo right now", "k": 3}
                )
                top3 = [x["name"] for x in r.structured_content["candidates"]]
                assert "time__get_current_time" in top3
                assert json.loads(_text(r)) == r.structured_content
                r = await c.call_tool(
                    "find_tools",
                    {
                        "subtask": {
                            "domain": "time",
                            "operation": "get current time",
                            "target": "Tokyo",
                        }
                    },
                )
                assert (
                    "time__get_current_time"
                    in [x["name"] for x in r.structured_content["candidates"]][:3]
                )
                r = await c.call_tool(
                    "call_tool",
                    {"name": "time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}},
                )
                assert not r.is_error and "Asia/Tokyo" in _text(r)
                entity = {"name": "Ada", "entityType": "person", "observations": ["wrote code"]}
                r = await c.call_tool(
                    "call_tool",
                    {"name": "memory__create_entities", "arguments": {"entities": [entity]}},
                )
                assert not r.is_error
                r = await c.call_tool(
                    "call_tool", {"name": "memory__open_nodes", "arguments": {"names": ["Ada"]}}
                )
                assert "wrote code" in _text(r)
                r = await c.call_tool(
                    "call_tool", {"name": "time__get_curent_time", "arguments": {}}
                )
                assert r.is_error
                assert r.structured_content["error"] == "unknown_tool"
                assert "time__get_current_time" in r.structured_content["closest"]
                r = await c.call_tool(
                    "call_tool", {"name": "time__get_current_time", "arguments": {"tz": 1}}
                )
                assert r.is_error and r.structured_content["error"] == "invalid_arguments"
                assert "timezone" in r.structured_content["errors"][0]["message"]
            assert router.store.outcome_count() == 3  # executed calls, not refused ones
            assert router.stats.tool(("time", "get_current_time")).calls == 1
            router.close()

    anyio.run(main)


@needs_npm
def test_killed_downstream_errors_cleanly_then_works_after_restart(
    config_file: Path, onnx: OnnxEmbedder
) -> None:
    cfg = load_config(config_file)
    marker = config_file.with_suffix(".marker").read_text()
    call = {"name": "time__get_current_time", "arguments": {"timezone": "Europe/Paris"}}

    async def main() -> None:
        async with running_downstreams(cfg) as downstreams:
            router, _ = await sync_router(cfg, downstreams, embedder=onnx)
            gw = Gateway(router, downstreams, ToolrouteSettings(call_timeout_s=10, call_gate=False))
            async with Client(gw.server, raise_exceptions=True) as c:
                assert not (await c.call_tool("call_tool", call)).is_error
                subprocess.run(["pkill", "-9", "-f", marker], check=True)
                with anyio.fail_after(10):
                    r = await c.call_tool("call_tool", call)
                # a clean error names the failure and what to do; on a loaded machine the
                # owner task may restart the server before the call arrives, and then the
                # restarted server answers it
                if r.is_error:
                    assert r.structured_content["error"] in ("crashed", "unavailable")
                    assert "hint" in r.structured_content
                else:
                    assert downstreams["time"].restarts >= 1 and "Europe/Paris" in _text(r)
                with anyio.fail_after(30):  # the owner task restarts it with backoff
                    while (r := await c.call_tool("call_tool", call)).is_error:
                        await anyio.sleep(0.2)
                assert "Europe/Paris" in _text(r)
                assert downstreams["time"].restarts >= 1
            router.close()

    anyio.run(main)


def _serve_params(config_file: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=str(TOOLROUTE), args=["serve", "--config", str(config_file), *extra]
    )


@needs_npm
def test_serve_over_stdio_with_the_sdk_client(config_file: Path) -> None:
    async def main() -> None:
        async with Client(_serve_params(config_file), read_timeout_seconds=120) as c:
            r = await c.call_tool(
                "find_tools", {"query": "what time is it in Tokyo right now", "k": 3}
            )
            assert "time__get_current_time" in [
                x["name"] for x in r.structured_content["candidates"]
            ]
            r = await c.call_tool(
                "call_tool",
                {"name": "time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}},
            )
            assert not r.is_error and "Asia/Tokyo" in _text(r)

    anyio.run(main)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@needs_npm
def test_serve_over_streamable_http(config_file: Path) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [
            str(TOOLROUTE),
            "serve",
            "--config",
            str(config_file),
            "--transport",
            "http",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        async def main() -> None:
            with anyio.fail_after(120):  # model load + sync, then the port opens
                while True:
                    try:
                        stream = await anyio.connect_tcp("127.0.0.1", port)
                        await stream.aclose()
                        break
                    except OSError:
                        assert proc.poll() is None, "toolroute serve exited"
                        await anyio.sleep(0.3)
            async with Client(f"http://127.0.0.1:{port}/mcp") as c:
                r = await c.call_tool("find_tools", {"query": "what time is it in Tokyo", "k": 3})
                assert "time__get_current_time" in [
                    x["name"] for x in r.structured_content["candidates"]
                ]
                r = await c.call_tool(
                    "call_tool",
                    {"name": "time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}},
                )
                assert "Asia/Tokyo" in _text(r)
                entity = {"name": "Bo", "entityType": "cat", "observations": ["naps"]}
                await c.call_tool(
                    "call_tool",
                    {"name": "memory__create_entities", "arguments": {"entities": [entity]}},
                )
                r = await c.call_tool(
                    "call_tool", {"name": "memory__search_nodes", "arguments": {"query": "Bo"}}
                )
                assert "naps" in _text(r)

        anyio.run(main)
    finally:
        proc.terminate()
        proc.wait(timeout=15)


@needs_npm
@pytest.mark.skipif(
    not INSPECTOR.exists(), reason="npm MCP Inspector missing (.ci/run installs it)"
)
def test_mcp_inspector_cli_calls_through_the_gateway(config_file: Path) -> None:
    out = subprocess.run(
        [
            str(INSPECTOR),
            "--cli",
            "--connect-timeout",  # its 15 s default is less than a start-up under load
            "150000",
            "--method",
            "tools/call",
            "--tool-name",
            "call_tool",
            "--tool-arg",
            "name=time__get_current_time",
            "--tool-arg",
            'arguments={"timezone": "Asia/Tokyo"}',
            "--",
            str(TOOLROUTE),
            "serve",
            "--config",
            str(config_file),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Asia/Tokyo" in out.stdout
    listed = subprocess.run(
        [
            str(INSPECTOR),
            "--cli",
            "--connect-timeout",  # its 15 s default is less than a start-up under load
            "150000",
            "--method",
            "tools/list",
            "--",
            str(TOOLROUTE),
            "serve",
            "--config",
            str(config_file),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert '"find_tools"' in listed.stdout and '"call_tool"' in listed.stdout
    assert '"request_capability"' in listed.stdout


FIXTURE = REPO / "tests" / "fixtures" / "changing_server.py"


def _write_config(tmp_path: Path, servers: dict[str, Any], **settings: Any) -> Path:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    lines = [f'store = "{tmp_path / "store"}"'] + [
        f"{k} = {json.dumps(v)}" for k, v in settings.items()
    ]
    (tmp_path / "toolroute.toml").write_text("[toolroute]\n" + "\n".join(lines) + "\n")
    return path


def _time_server() -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-c", TIME_MAIN, "x"]}


def test_a_broken_or_hanging_server_does_not_block_the_others(tmp_path: Path) -> None:
    cfg = load_config(
        _write_config(
            tmp_path,
            {
                "time": _time_server(),
                "missing": {"command": str(tmp_path / "no-such-binary")},
                "hangs": {"command": "sleep", "args": ["60"]},
                "pager": {"command": sys.executable, "args": [str(FIXTURE), "--loop-cursor"]},
            },
            connect_timeout_s=3.0,
        )
    )
    result = anyio.run(sync_once, cfg)
    status = {s.name: s for s in result.servers}
    assert status["time"].status == "ok" and status["time"].tools == 2
    assert status["missing"].status == "error" and status["missing"].error
    assert status["hangs"].status == "error"
    # a cursor that never ends is cut at the first repeat; repeated tools are listed once
    assert status["pager"].status == "ok" and status["pager"].tools == 1
    assert result.index.added == 3


@needs_npm
def test_streamable_http_downstream_syncs_and_calls(tmp_path: Path, onnx: OnnxEmbedder) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        ["node", str(NPM_SERVERS["everything"]), "streamableHttp"],
        env={"PATH": "/usr/local/bin:/usr/bin:/bin", "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        cfg = load_config(
            _write_config(
                tmp_path, {"web": {"url": f"http://127.0.0.1:{port}/mcp"}, "time": _time_server()}
            )
        )

        async def main() -> None:
            with anyio.fail_after(30):
                while True:
                    try:
                        await (await anyio.connect_tcp("127.0.0.1", port)).aclose()
                        break
                    except OSError:
                        assert proc.poll() is None, "the everything server exited"
                        await anyio.sleep(0.2)
            async with running_downstreams(cfg) as downstreams:
                router, result = await sync_router(cfg, downstreams, embedder=onnx)
                assert {s.name: s.status for s in result.servers} == {"web": "ok", "time": "ok"}
                gw = Gateway(router, downstreams)
                r = await gw.calls.checked("web__get-sum", {"a": 2, "b": 40})
                assert not r.is_error and "42" in _text(r)
                router.close()

        anyio.run(main)
    finally:
        proc.terminate()
        proc.wait(timeout=15)


RAW = REPO / "tests" / "fixtures" / "raw_server.py"


def test_malformed_replies_are_contained_to_their_server(
    tmp_path: Path, onnx: OnnxEmbedder
) -> None:
    cfg = load_config(
        _write_config(
            tmp_path,
            {
                "time": _time_server(),
                "badlist": {"command": sys.executable, "args": [str(RAW), "--bad-list"]},
                "badcall": {"command": sys.executable, "args": [str(RAW)]},
            },
            call_gate=False,
        )
    )

    async def main() -> None:
        async with running_downstreams(cfg) as downstreams:
            router, result = await sync_router(cfg, downstreams, embedder=onnx)
            status = {s.name: (s.status, s.tools) for s in result.servers}
            # badlist's one tool has a non-object inputSchema: that tool is skipped (by name,
            # in the log), the server is not failed for it
            assert status == {"time": ("ok", 2), "badlist": ("ok", 0), "badcall": ("ok", 1)}
            gw = Gateway(router, downstreams, ToolrouteSettings(call_gate=False))
            r = await gw.calls.checked("badcall__oops", {})
            assert r.is_error and r.structured_content["error"] == "protocol"
            assert router.stats.tool(("badcall", "oops")).calls == 1  # recorded as a failure
            r = await gw.calls.checked("time__get_current_time", {"timezone": "UTC"})
            assert not r.is_error
            router.close()

    anyio.run(main)
