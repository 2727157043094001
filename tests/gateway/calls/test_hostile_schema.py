"""A downstream tool's input schema as an attack, through a real `toolroute serve` process (a
ReDoS pattern or a $ref that hangs would freeze the gateway's event loop, so the gateway runs
apart from the test's loop and every wait is bounded): nothing in a schema is fetched, a
catastrophic regex costs nothing, a $ref loop refuses its one tool in one log line, and the
server's other tools stay usable.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.conftest import TOOLROUTE
from tests.helpers.faults import sdk, text, write_config
from toolroute.gateway.calls.arguments import argument_errors, schema_problem

pytestmark = pytest.mark.integration

SECRET = "SECRET-7f3a"


@asynccontextmanager
async def served(tmp_path: Path, state: dict[str, str] | None = None) -> AsyncIterator[Client]:
    """`toolroute serve` over stdio with the hostile-schema server beside the reference ones."""
    state_file = tmp_path / "schemas-state.json"
    state_file.write_text(json.dumps(state or {}))
    path = write_config(tmp_path, {"schemas": sdk("schemas", "--state", str(state_file))})
    params = StdioServerParameters(
        command=str(TOOLROUTE),
        args=["serve", "--config", str(path)],
        env={"PYTHONPATH": os.environ.get("PYTHONPATH", "")},  # this tree's code, not main's
    )
    with (tmp_path / "serve.err").open("w") as err:
        async with Client(stdio_client(params, errlog=err), read_timeout_seconds=120) as c:
            yield c


async def call(c: Client, name: str, arguments: dict[str, Any]) -> Any:
    with anyio.fail_after(30):  # the old resolver held the loop for as long as the peer did
        return await c.call_tool("call_tool", {"name": name, "arguments": arguments})


async def others_fine(c: Client) -> None:
    r = await call(c, "schemas__echo", {"text": "still here"})
    assert not r.is_error and text(r) == "still here"
    r = await call(c, "time__get_current_time", {"timezone": "UTC"})
    assert not r.is_error


def test_a_ref_to_a_peer_that_never_answers_is_not_followed(tmp_path: Path) -> None:
    with socket.socket() as peer:  # listens, never accepts or answers
        peer.bind(("127.0.0.1", 0))
        peer.listen(8)
        peer.setblocking(False)
        url = f"http://127.0.0.1:{peer.getsockname()[1]}/schema.json"

        async def main() -> None:
            async with served(tmp_path, {"url": url}) as c:
                r = await call(c, "schemas__remote_ref", {"s": "x"})
                assert r.is_error and r.structured_content["error"] == "invalid_schema"
                assert r.structured_content["tool"] == "schemas__remote_ref"
                assert "outside the schema" in r.structured_content["message"]
                await others_fine(c)

        anyio.run(main)
        with pytest.raises(BlockingIOError):
            peer.accept()  # nobody ever connected


def test_a_ref_to_a_local_file_never_reaches_the_client(tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"enum": [SECRET]}))

    async def main() -> None:
        async with served(tmp_path, {"file": secret.as_uri()}) as c:
            r = await call(c, "schemas__file_ref", {"s": "guess"})
            assert r.is_error and r.structured_content["error"] == "invalid_schema"
            assert SECRET not in json.dumps(r.structured_content) + text(r)

    anyio.run(main)


def test_a_catastrophic_pattern_answers_at_once_and_others_go_on(tmp_path: Path) -> None:
    """``^(a+)+$`` on 40 a's and a '!' is 2^40 steps for a backtracking engine."""

    async def main() -> None:
        async with served(tmp_path) as c:
            r = await call(c, "schemas__redos", {"s": "a" * 40 + "!"})
            assert r.is_error and r.structured_content["error"] == "invalid_arguments"
            assert r.structured_content["errors"][0]["path"] == "s"
            r = await call(c, "schemas__redos", {"s": "aaaa"})
            assert not r.is_error and text(r) == "called redos"
            await others_fine(c)

    anyio.run(main)


def test_a_ref_loop_refuses_its_tool_in_one_log_line(tmp_path: Path) -> None:
    async def main() -> None:
        async with served(tmp_path) as c:
            for _ in range(3):
                r = await call(c, "schemas__ref_loop", {"s": "x"})
                assert r.is_error and r.structured_content["error"] == "invalid_schema"
                assert "schemas__ref_loop" in r.structured_content["message"]
            await others_fine(c)

    anyio.run(main)
    log = (tmp_path / "serve.err").read_text()
    assert "Traceback" not in log
    assert log.count("schemas__ref_loop") == 1, log[-3000:]


def test_schema_bounds_refuse_what_cannot_be_checked_and_keep_what_can() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(100):
        deep = {"type": "object", "properties": {"a": deep}}
    assert "deeper than" in (schema_problem(deep) or "")
    assert "larger than" in (schema_problem({"enum": ["x" * 300_000]}) or "")
    assert "not a valid JSON schema" in (schema_problem({"type": "strin"}) or "")
    mutual = {
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"anyOf": [{"$ref": "#/$defs/a"}]}},
        "$ref": "#/$defs/a",
    }
    assert "loops back" in (schema_problem(mutual) or "")
    tree = {
        "type": "object",
        "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}, "n": {"type": "integer"}},
    }
    assert schema_problem(tree) is None  # recursion through the arguments ends with them
    errors = argument_errors(tree, {"kids": [{"kids": [{"n": "x"}]}]})
    assert errors == [{"path": "kids/0/kids/0/n", "message": "'x' is not of type 'integer'"}]
    closed = {
        "type": "object",
        "patternProperties": {"^(x+)+$": {"type": "integer"}},
        "additionalProperties": False,
    }
    errors = argument_errors(closed, {"xx": "s", "x" * 40 + "!": 1})
    assert [e["path"] for e in errors] == ["(root)", "xx"]
