"""Code mode through real `toolroute serve` processes: the official client runs find_tools then
one execute whose script calls two tools (stdio and streamable HTTP, both protocol eras), and
every way out of the sandbox is refused or ended within its limit, with the gateway alive and
another client's call answered meanwhile. Downstream: the reference time server and
tests/fixtures/codemode_server.py (a tool with an output schema, a large result, a slow tool
and a poisoned one the gateway holds in quarantine)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.conftest import REPO, TIME_MAIN, TOOLROUTE
from tests.helpers.gateways import GatewayProcess

pytestmark = pytest.mark.integration

MODES = ["auto", "legacy"]
"""The official client's default mode (2026-07-28 here) and the 2025-11-25 handshake."""
CALC = REPO / "tests" / "fixtures" / "codemode_server.py"
FULL = "code-mode-full-token-0123456789"
NARROW = "code-mode-narrow-token-0123456789"
LIMITS = {
    "wall_s": 4,
    "cpu_s": 1,
    "memory_mb": 32,
    "max_calls": 30,
    "result_bytes": 200_000,
    "preview_bytes": 4096,
    "page_bytes": 4096,
}
TWO_TOOLS = (
    's = await call_tool("calc__add", {"a": 2, "b": 40})\n'
    't = await call_tool("time__get_current_time", {"timezone": "Asia/Tokyo"})\n'
    '{"sum": s["sum"], "zone": t["timezone"]}'
)


def _config(directory: Path, auth: bool) -> Path:
    servers = {
        "time": {"command": sys.executable, "args": ["-c", TIME_MAIN]},
        "calc": {"command": sys.executable, "args": [str(CALC)]},
    }
    path = directory / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    toml = [
        "[toolroute]",
        f"store = {json.dumps(str(directory / 'store'))}",
        "code_mode = true",
        # the strict scope: tests below check the gate per connection, whatever other tests
        # of the module (same token, same gateway) found before
        'call_gate = "connection"',
        "[code_mode]",
        *(f"{k} = {v}" for k, v in LIMITS.items()),
    ]
    if auth:
        toml += [
            "[auth.clients.full]",
            'token_env = "CODE_MODE_FULL_TOKEN"',
            "[auth.clients.narrow]",
            'token_env = "CODE_MODE_NARROW_TOKEN"',
            'servers = ["time"]',
        ]
    (directory / "toolroute.toml").write_text("\n".join(toml) + "\n")
    return path


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One `toolroute serve --transport http` with code mode on, two clients: ``full`` may
    call every tool, ``narrow`` only the time server's."""
    saved = {k: os.environ.get(k) for k in ("CODE_MODE_FULL_TOKEN", "CODE_MODE_NARROW_TOKEN")}
    os.environ.update(CODE_MODE_FULL_TOKEN=FULL, CODE_MODE_NARROW_TOKEN=NARROW)
    proc = GatewayProcess(_config(tmp_path_factory.mktemp("codemode"), auth=True))
    try:
        anyio.run(proc.ready)
        yield proc.url
    finally:
        proc.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@asynccontextmanager
async def client(url: str, token: str = FULL, mode: str = "auto") -> AsyncIterator[Client]:
    """The official client at ``url`` with ``token``, in ``mode``."""
    async with create_mcp_http_client({"Authorization": f"Bearer {token}"}) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode) as c:  # type: ignore[arg-type]
            yield c


async def _find(c: Client, query: str) -> list[dict[str, Any]]:
    found = await c.call_tool("find_tools", {"query": query, "k": 3})
    assert not found.is_error, found
    return found.structured_content["candidates"]  # type: ignore[index,no-any-return]


async def _two_tools(c: Client) -> dict[str, Any]:
    """find_tools for both needs, then one execute calling both tools; its structured result."""
    listed = [t.name for t in (await c.list_tools()).tools]
    assert "execute" in listed, listed
    adding = await _find(c, "add two numbers")
    assert "calc__add" in [x["name"] for x in adding]
    add = next(x for x in adding if x["name"] == "calc__add")
    assert add["signature"].startswith('def calc__add(a: float, b: float) -> {"sum": float}:')
    assert set(add) == {"name", "signature"}  # the signature stands in for the JSON schema
    await _find(c, "what time is it in a timezone")
    r = await c.call_tool("execute", {"code": TWO_TOOLS})
    assert not r.is_error, r.content
    return r.structured_content  # type: ignore[return-value]


@pytest.mark.parametrize("mode", MODES)
def test_execute_runs_a_script_calling_two_tools_over_http_in_either_era(
    url: str, mode: str
) -> None:
    async def main() -> None:
        with anyio.fail_after(60):
            async with client(url, mode=mode) as c:
                out = await _two_tools(c)
        assert out == {"result": {"sum": 42, "zone": "Asia/Tokyo"}, "calls": 2}

    anyio.run(main)


@pytest.mark.parametrize("mode", MODES)
def test_execute_runs_a_script_calling_two_tools_over_stdio_in_either_era(
    tmp_path: Path, mode: str
) -> None:
    params = StdioServerParameters(
        command=str(TOOLROUTE),
        args=["serve", "--config", str(_config(tmp_path, auth=False))],
        env=dict(os.environ),  # this checkout's sources (PYTHONPATH), as the HTTP gateway has
    )

    async def main() -> None:
        with anyio.fail_after(180):
            async with Client(params, mode=mode) as c:  # type: ignore[arg-type]
                out = await _two_tools(c)
        assert out["result"] == {"sum": 42, "zone": "Asia/Tokyo"}

    anyio.run(main)


ESCAPES = {
    # name: (script, error, what the message or the limit says)
    "import os": ('import os\nos.listdir("/")', "script_error", "PermissionError"),
    "open": ('open("/etc/passwd").read()', "script_error", "PermissionError"),
    "socket": ('import socket\nsocket.create_connection(("127.0.0.1", 22))', "script_error",
               "No module named 'socket'"),
    "subprocess": ('import subprocess\nsubprocess.run(["id"])', "script_error",
                   "No module named 'subprocess'"),
    "__import__": ('__import__("os").system("id")', "script_error", "'__import__' is not defined"),
    "attribute walk": ("().__class__.__base__.__subclasses__()", "script_error", "AttributeError"),
    "globals walk": ("(lambda: 0).__globals__['__builtins__']", "script_error", "AttributeError"),
    "environment": ("import os\nos.environ['HOME']", "script_error", "not supported"),
    "endless loop": ("while True:\n    pass", "script_limit", "cpu_s"),
    "memory bomb": ('x = []\nwhile True:\n    x.append("a" * 1_000_000)', "script_limit",
                    "memory_mb"),
    "deep recursion": ("def f(n):\n    return f(n + 1)\nf(0)", "script_limit", "recursion"),
    "huge return": ('"x" * 300_000', "script_limit", "result_bytes"),
    "10,000 calls": ('for i in range(10_000):\n    await call_tool("calc__add", {"a": i, "b": 1})',
                     "script_limit", "max_calls"),
    "slow tool": ('await call_tool("calc__wait", {"seconds": 60})', "script_limit", "wall_s"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(ESCAPES))
def test_each_way_out_of_the_sandbox_is_refused_or_ended_and_the_gateway_stays_up(
    url: str, case: str
) -> None:
    code, error, says = ESCAPES[case]

    async def main() -> None:
        with anyio.fail_after(60):
            async with client(url) as c:
                await _find(c, "add two numbers")
                await _find(c, "wait a number of seconds")
                r = await c.call_tool("execute", {"code": code})
                out = r.structured_content
                assert r.is_error and out is not None, r.content
                assert out["error"] == error, out
                assert says in (out.get("limit", "") + out["message"]), out
                if error == "script_limit":  # the message names the setting to raise
                    assert f"{out['limit']} = " in out["message"], out
                # the gateway is alive: the same client's next script runs
                again = await c.call_tool("execute", {"code": TWO_TOOLS.replace("time", "x")[:60]})
                assert again.structured_content is not None
                ok = await c.call_tool(
                    "call_tool", {"name": "calc__add", "arguments": {"a": 1, "b": 1}}
                )
                assert not ok.is_error and ok.structured_content == {"sum": 2}

    anyio.run(main)


def test_another_clients_call_is_answered_while_a_script_spins(url: str) -> None:
    """A script burning its whole CPU limit runs in its own worker process: another client's
    call_tool is answered while it still runs (benchmarks/codemode_sandbox.py measures how
    fast)."""
    done: list[str] = []

    async def spin() -> None:
        async with client(url) as c:
            r = await c.call_tool("execute", {"code": "while True:\n    pass"})
            assert (r.structured_content or {}).get("limit") == "cpu_s"
            done.append("script")

    async def other() -> None:
        async with client(url, NARROW) as c:
            await _find(c, "what time is it in a timezone")
            await anyio.sleep(0.2)  # let the script start spinning first
            r = await c.call_tool(
                "call_tool", {"name": "time__get_current_time", "arguments": {"timezone": "UTC"}}
            )
            assert not r.is_error, r.content
            done.append("other")

    async def main() -> None:
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(spin)
                tg.start_soon(other)
        assert done == ["other", "script"]

    anyio.run(main)


def test_a_script_reaches_only_what_its_caller_could(url: str) -> None:
    """The allow-list, the call gate and quarantine hold inside a script as for call_tool."""

    async def main() -> None:
        with anyio.fail_after(60):
            async with client(url, NARROW) as c:  # the time server only
                assert "calc__add" not in [x["name"] for x in await _find(c, "add two numbers")]
                r = await c.call_tool(
                    "execute", {"code": 'await call_tool("calc__add", {"a": 1, "b": 2})'}
                )
                assert r.is_error and "unknown_tool" in r.structured_content["message"]  # type: ignore[index]
                assert "is available to this client" in r.structured_content["message"]  # type: ignore[index]
            # a new handshake-era connection (the call gate's scope): nothing promoted in it yet
            async with client(url, mode="legacy") as c:
                args = {"source_timezone": "UTC", "time": "10:00", "target_timezone": "UTC"}
                code = f'await call_tool("time__convert_time", {args!r})'
                r = await c.call_tool("execute", {"code": code})
                assert r.is_error and "tool_not_available" in r.structured_content["message"]  # type: ignore[index]
                r = await c.call_tool(
                    "execute", {"code": 'await call_tool("calc__exfiltrate", {})'}
                )
                message = r.structured_content["message"]  # type: ignore[index]
                assert r.is_error and "quarantined" in message, message

    anyio.run(main)


def test_a_large_result_comes_back_as_a_preview_and_pages_only_its_client_can_read(
    url: str,
) -> None:
    async def main() -> None:
        with anyio.fail_after(60):
            async with client(url) as c:
                await _find(c, "return a block of text of a size")
                r = await c.call_tool(
                    "execute", {"code": 'await call_tool("calc__blob", {"kb": 40})'}
                )
                out = r.structured_content
                assert not r.is_error and out is not None, r.content
                assert out["pages"] == 10 and out["total_bytes"] == 40 * 1024
                assert len(out["preview"].encode()) <= LIMITS["page_bytes"]
                pages = [out["preview"]]
                for n in range(1, out["pages"]):
                    page = await c.call_tool("execute", {"handle": out["handle"], "page": n})
                    pages.append(page.structured_content["text"])  # type: ignore[index]
                assert len("".join(pages).encode()) == 40 * 1024
            async with client(url, NARROW) as other:
                stolen = await other.call_tool("execute", {"handle": out["handle"], "page": 1})
                assert stolen.structured_content["error"] == "unknown_handle"  # type: ignore[index]

    anyio.run(main)


def test_a_large_call_tool_result_in_code_mode_is_a_preview_and_a_handle(url: str) -> None:
    """call_tool, too, keeps a result larger than the preview out of the context: its
    first page and a handle that execute reads further."""

    async def main() -> None:
        with anyio.fail_after(60):
            async with client(url) as c:
                await _find(c, "return a block of text of a size")
                r = await c.call_tool("call_tool", {"name": "calc__blob", "arguments": {"kb": 40}})
                out = r.structured_content
                assert not r.is_error and out is not None, r.content
                assert out["pages"] > 1 and "handle" in out and "preview" in out
                page = await c.call_tool("execute", {"handle": out["handle"], "page": 1})
                assert not page.is_error and page.structured_content["text"]  # type: ignore[index]
                small = await c.call_tool(
                    "call_tool", {"name": "calc__blob", "arguments": {"kb": 1}}
                )
                assert small.structured_content is None or "handle" not in small.structured_content

    anyio.run(main)


EXIT_AFTER_SCRIPT = """
import anyio
from toolroute.codemode.limits import CodeModeLimits
from toolroute.codemode.sandbox import Sandbox

async def call(name, arguments):
    return {}

async def main():
    end = await Sandbox(CodeModeLimits(cpu_s=0.2)).run("while True:\\n    pass", call)
    assert end.limit == "cpu_s", end

anyio.run(main)
"""


def test_a_process_exits_cleanly_right_after_a_script() -> None:
    """pydantic-monty's pool threads can abort an interpreter that exits just after a worker
    closed (about one exit in four, measured); the sandbox waits that moment out at exit."""
    import subprocess

    for _ in range(8):
        done = subprocess.run(
            [sys.executable, "-c", EXIT_AFTER_SCRIPT], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr[-500:]


def test_metrics_count_each_call_of_a_script_as_a_tool_call(url: str) -> None:
    """/metrics counts the calls inside a script per tool (as call_tool's), and execute
    itself as no tool call."""
    import httpx2
    from prometheus_client.parser import text_string_to_metric_families

    def calls(text: str, **labels: str) -> float:
        return sum(
            s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
            if s.name == "toolroute_tool_calls_total"
            and all(s.labels.get(k) == v for k, v in labels.items())
        )

    async def main() -> None:
        with anyio.fail_after(60):
            async with httpx2.AsyncClient(timeout=20) as plain:
                auth = {"Authorization": f"Bearer {FULL}"}
                metrics = url.removesuffix("/mcp") + "/metrics"
                before = (await plain.get(metrics, headers=auth)).text
                async with client(url) as c:
                    await _two_tools(c)
                after = (await plain.get(metrics, headers=auth)).text
        add = {"server": "calc", "tool": "add", "outcome": "ok"}
        now = {"server": "time", "tool": "get_current_time", "outcome": "ok"}
        assert calls(after, **add) == calls(before, **add) + 1
        assert calls(after, **now) == calls(before, **now) + 1
        assert calls(after, tool="-") == calls(before, tool="-")  # execute is no tool call

    anyio.run(main)
