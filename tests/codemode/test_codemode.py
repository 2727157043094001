"""Code mode's pure parts: Python signatures from schemas, the bounded expiring page store, the
settings, and the sandbox itself on small scripts (a real monty worker process each)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import anyio
import mcp.types as types
import pytest

from toolroute.codemode import CodeModeLimits
from toolroute.codemode.execute import CodeMode
from toolroute.codemode.pages import Owner, Pages
from toolroute.codemode.sandbox import Sandbox
from toolroute.codemode.stubs import signature, type_of
from toolroute.config import load_config
from toolroute.errors import ConfigError
from toolroute.gateway.calls.pipeline import Call
from toolroute.gateway.shared import NoMetrics
from toolroute.present.tokens import TokenCounter, tool_json
from toolroute.route.preconditions import SessionState

DIRECTORY = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "Where to look."},
        "depth": {"type": "integer"},
        "sort": {"type": "string", "enum": ["name", "size"]},
        "filter": {
            "type": "object",
            "properties": {"glob": {"type": "string"}, "hidden": {"type": "boolean"}},
            "required": ["glob"],
        },
        "class": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["path"],
}


def test_a_signature_has_required_parameters_first_and_the_output_schema_as_return_type() -> None:
    out = {
        "type": "object",
        "properties": {"entries": {"type": "array", "items": {"type": "string"}}},
    }
    stub = signature("fs__list", "List a directory. Slow on big trees.", DIRECTORY, out)
    assert stub == (
        'def fs__list(path: str, depth: int = None, sort: Literal["name", "size"] = None, '
        'filter: {"glob": str, "hidden"?: bool} = None, "class": list[str] = None) '
        '-> {"entries"?: list[str]}:\n    """List a directory."""'
    )


def test_a_signature_costs_fewer_tokens_than_the_json_schema() -> None:
    tokens = TokenCounter()
    stub = signature("fs__list", "List a directory.", DIRECTORY)
    assert tokens(stub) < tokens(tool_json("fs__list", "List a directory.", DIRECTORY)) / 2


def test_types_of_unusual_schemas_never_fail() -> None:
    assert type_of({"type": ["string", "null"]}) == "str | None"
    assert type_of({"anyOf": [{"type": "integer"}, {"type": "string"}]}) == "int | str"
    assert type_of({"type": "object", "additionalProperties": {"type": "number"}}) == (
        "dict[str, float]"
    )
    assert type_of("not a schema") == "Any" and type_of({}) == "Any"
    refs = {
        "type": "object",
        "properties": {"at": {"$ref": "#/$defs/Time"}, "gone": {"$ref": "#/$defs/Nope"}},
        "$defs": {"Time": {"type": "object", "properties": {"iso": {"type": "string"}}}},
    }
    assert type_of(refs) == '{"at"?: {"iso"?: str}, "gone"?: Any}'
    loop = {"$ref": "#"}  # a schema that refers to itself ends, at the depth limit
    assert type_of(loop) == "Any"
    deep: dict[str, Any] = {"type": "object", "properties": {}}
    node = deep
    for _ in range(10):
        child: dict[str, Any] = {"type": "object", "properties": {}}
        node["properties"]["x"] = child
        node = child
    assert "dict" in type_of(deep)


def test_pages_are_read_by_their_owner_only_and_expire() -> None:
    now = [0.0]
    pages = Pages(page_bytes=10, ttl_s=60, max_bytes=1000, clock=lambda: now[0])
    owner, other = Owner("token:a"), Owner("token:b")
    first = pages.put(owner, "0123456789abcdefghijé")
    assert first is not None
    assert (first.page, first.pages, first.text) == (0, 3, "0123456789")
    assert pages.read(owner, first.handle, 2).text == "é"  # type: ignore[union-attr]
    assert pages.read(other, first.handle, 1) is None
    assert pages.read(Owner("anonymous"), first.handle, 1) is None
    now[0] = 61
    assert pages.read(owner, first.handle, 1) is None and pages.bytes_held == 0


def test_the_page_store_drops_the_oldest_handles_past_its_size() -> None:
    pages = Pages(page_bytes=100, ttl_s=60, max_bytes=250)
    a = Owner("token:a")
    first, second = pages.put(a, "a" * 200), pages.put(a, "b" * 200)
    assert first is not None and second is not None
    assert pages.read(a, first.handle, 0) is None
    assert pages.read(a, second.handle, 1) is not None and pages.bytes_held == 200
    huge = pages.put(a, "c" * 1000)  # larger than the store: as many pages as fit
    assert huge is not None and huge.pages == 2 and huge.total_bytes == 1000
    assert pages.bytes_held <= 250


def test_code_mode_is_off_unless_switched_on_and_its_limits_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": {"t": {"command": "true"}}}))
    toml = tmp_path / "toolroute.toml"
    assert not load_config(path).settings.code_mode
    toml.write_text("[toolroute]\ncode_mode = true\n[code_mode]\nwall_s = 9\nmax_calls = 7\n")
    on = load_config(path)
    assert on.settings.code_mode
    assert on.code_mode_limits == CodeModeLimits(wall_s=9, max_calls=7)
    toml.write_text("[toolroute]\ncode_mode = true\n[code_mode]\nmemory_mb = 0\n")
    with pytest.raises(ConfigError, match=r"code_mode\.memory_mb"):
        load_config(path)
    toml.write_text("[code_mode]\nwal_s = 9\n")
    with pytest.raises(ConfigError, match=r"code_mode\.wal_s"):
        load_config(path)


def test_a_script_awaits_host_calls_in_order_and_at_once() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    async def call(name: str, arguments: dict[str, Any]) -> Any:
        seen.append((name, arguments))
        return {"echo": arguments}

    code = (
        "import asyncio\n"
        'a = await call_tool("s__one", {"n": 1})\n'
        'b, c = await asyncio.gather(call_tool("s__two"), call_tool("s__three", {"n": 3}))\n'
        'print("done")\n'
        "(a, b, c, {1, 2})"
    )

    async def main() -> None:
        with anyio.fail_after(30):
            end = await Sandbox(CodeModeLimits()).run(code, call)
        assert end.error is None and end.calls == 3 and end.printed == "done\n"
        assert end.value is not None
        assert json.loads(end.value) == [
            {"echo": {"n": 1}},
            {"echo": {}},
            {"echo": {"n": 3}},
            [1, 2],
        ]

    anyio.run(main)
    assert [n for n, _ in seen][0] == "s__one" and len(seen) == 3


def test_a_script_that_calls_with_a_wrong_argument_type_gets_a_type_error() -> None:
    async def call(name: str, arguments: dict[str, Any]) -> Any:
        raise AssertionError("never called")

    async def main() -> None:
        with anyio.fail_after(30):
            end = await Sandbox(CodeModeLimits()).run('await call_tool("s__x", [1, 2])', call)
        assert end.kind == "runtime" and end.error is not None
        assert "arguments must be a dict" in end.error and end.calls == 0

    anyio.run(main)


def test_a_scripts_tool_calls_carry_the_requests_caller_and_identity() -> None:
    seen: list[Call] = []

    class Calls:
        async def call(self, call: Call) -> Any:
            seen.append(call)
            return types.CallToolResult(content=[types.TextContent(type="text", text="ok")])

    caller = object()
    state = SessionState()
    mode = CodeMode(Calls(), NoMetrics())

    async def main() -> None:
        with anyio.fail_after(30):
            result = await mode.execute(
                {"code": 'await call_tool("s__t", {})'},
                state,
                None,
                "ci",
                caller=cast(Any, caller),
                identity="token:ci",
            )
        assert not result.is_error

    anyio.run(main)
    assert [(c.name, c.arguments, c.allowed, c.client, c.caller, c.identity) for c in seen] == [
        ("s__t", {}, None, "ci", caller, "token:ci")
    ]
    assert seen[0].state is state
