"""openai-agents' strict-mode converter over the gateway's meta-tools, with a real gateway.

With ``convert_schemas_to_strict`` the Agents SDK rewrites each MCP tool's input schema so that
every property is required (an optional one must accept ``null``) and closes every object; a
schema it cannot close stays non-strict. A model under a strict schema then sends every field,
``null`` for the ones it leaves out. This runs the library's own converter
(``MCPUtil.to_function_tool``) in the interop venv on what ``toolroute serve`` lists, and sends
the gateway exactly what a strict model would: ``find_tools`` must convert and accept the nulls;
``call_tool`` (free-form ``arguments``) falls back to non-strict and still works.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, TIME_MAIN, TOOLROUTE

pytestmark = pytest.mark.integration

INTEROP = REPO / ".toolroute" / "interop-venv" / "bin" / "python"

SCRIPT = r"""
import asyncio, json, sys
from agents.mcp import MCPServerStdio
from agents.mcp.util import MCPUtil

async def main(command, args):
    async with MCPServerStdio(
        params={"command": command, "args": args}, cache_tools_list=False,
        client_session_timeout_seconds=60,
    ) as server:
        tools = {t.name: t for t in await server.list_tools()}
        out = {}
        for name in ("find_tools", "call_tool"):
            ft = MCPUtil.to_function_tool(tools[name], server, True)
            out[name] = {"strict": ft.strict_json_schema, "schema": ft.params_json_schema}
        # what a model under find_tools' strict schema sends: every field, null where unused
        fields = out["find_tools"]["schema"]["properties"]
        args = {k: None for k in fields}
        args["query"] = "what time is it in Tokyo"
        found = await server.call_tool("find_tools", args)
        out["find"] = {"error": bool(found.is_error), "text": found.content[0].text}
        names = [c["name"] for c in json.loads(found.content[0].text)["candidates"]]
        called = await server.call_tool(
            "call_tool",
            {"name": "time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}},
        )
        out["call"] = {"error": bool(called.is_error), "text": called.content[0].text}
        out["names"] = names
        print(json.dumps(out))

asyncio.run(main(sys.argv[1], json.loads(sys.argv[2])))
"""


def _accepts_null(spec: dict[str, object]) -> bool:
    kinds = spec.get("type")
    if kinds == "null" or (isinstance(kinds, list) and "null" in kinds):
        return True
    options = spec.get("anyOf") or spec.get("oneOf") or []
    return isinstance(options, list) and any(
        isinstance(o, dict) and _accepts_null(o) for o in options
    )


@pytest.mark.skipif(
    not INTEROP.exists(),
    reason="the interop venv is absent (bash .ci/interop or .ci/run installs openai-agents there)",
)
def test_openai_agents_strict_converter_over_the_meta_tools(tmp_path: Path) -> None:
    servers = tmp_path / "servers.json"
    servers.write_text(
        json.dumps({"mcpServers": {"time": {"command": sys.executable, "args": ["-c", TIME_MAIN]}}})
    )
    (tmp_path / "toolroute.toml").write_text(f'[toolroute]\nstore = "{tmp_path / "store"}"\n')
    args = ["serve", str(servers)]
    proc = subprocess.run(
        [str(INTEROP), "-c", SCRIPT, str(TOOLROUTE), json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    find = out["find_tools"]
    assert find["strict"] is True, find["schema"]
    assert set(find["schema"]["required"]) == set(find["schema"]["properties"])
    assert find["schema"]["additionalProperties"] is False
    for name, spec in find["schema"]["properties"].items():  # a strict model may send null
        if name != "query":
            assert _accepts_null(spec), (name, spec)
    assert not out["find"]["error"], out["find"]["text"]
    assert "time__get_current_time" in out["names"]
    # free-form arguments cannot be closed: the converter keeps call_tool non-strict
    assert out["call_tool"]["strict"] is False
    assert not out["call"]["error"], out["call"]["text"]
    assert "Asia/Tokyo" in out["call"]["text"]
