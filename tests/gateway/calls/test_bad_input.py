"""Bad input to the gateway's meta-tools, through a real MCP client, in front of a real
downstream server that records every call it receives (tests/fixtures/recording_server.py).

- find_tools / request_capability: an invalid ``k``, ``query`` or ``subtask`` is an isError
  naming what is accepted, never silently replaced;
- call_tool: schema-violating or hostile argument sets (seeded, so a failure can be replayed;
  300 by default, 10,000 in the slow tier) reach the downstream server 0 times, and each is
  answered by an isError without internal detail.
"""

from __future__ import annotations

import json
import random
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import Client

from tests.conftest import REPO
from toolroute.config import load_config
from toolroute.embed.onnx import OnnxEmbedder
from toolroute.gateway.ops.app import running_downstreams
from toolroute.gateway.ops.syncing import sync_router
from toolroute.gateway.shell.server import Gateway
from toolroute.settings import ToolrouteSettings

pytestmark = pytest.mark.integration

RECORDER = REPO / "tests" / "fixtures" / "recording_server.py"
CASES = [300, pytest.param(10_000, marks=[pytest.mark.slow, pytest.mark.timeout(1800)])]
SEED = 11
VALID: dict[str, dict[str, Any]] = {
    "rec__stamp": {"label": "fragile"},
    "rec__wait_for": {"amount": 5, "unit": "s"},
    "rec__ship_order": {"order": {"items": [{"sku": "A1", "qty": 2}], "express": True}},
}
INTERNAL = re.compile(
    r"Traceback|File \"|\w+Error\b|\w+Exception\b|jsonschema|pydantic|toolroute\.|mcp\.|"
    r"<\w+ object at 0x"
)
ODD = [
    "\u202e",  # right-to-left override
    "\u200b",  # zero-width space
    "\ufeff",  # byte-order mark
    "\x00",
    "e\u0301",  # combining accent
    "\U0001f4a5",
    "\uff53\uff54\uff41\uff4d\uff50",  # full-width "stamp"
    "\u0455",  # Cyrillic dze, looks like s
]


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    return {float: "number", str: "string", list: "array", dict: "object"}[type(v)]


def _value(rnd: random.Random, avoid: str = "") -> Any:
    """A JSON value of a random type other than ``avoid`` (a JSON Schema type name)."""
    while True:
        v = rnd.choice(
            [
                None,
                True,
                False,
                0,
                -1,
                2**64,
                1.5,
                -1e308,
                "",
                "x" * rnd.randint(1, 50),
                rnd.choice(ODD),
                [],
                [rnd.randint(0, 9)],
                {},
                {"k": rnd.choice(ODD)},
            ]
        )
        if _json_type(v) != avoid:
            return v


def _deep(depth: int, rnd: random.Random) -> Any:
    v: Any = rnd.choice(["end", 1, None])
    for _ in range(depth):
        v = [v] if rnd.random() < 0.5 else {"d": v}
    return v


def _hostile_name(rnd: random.Random) -> Any:
    real = rnd.choice(list(VALID))
    server, _, tool = real.partition("__")
    return rnd.choice(
        [
            "../../etc/passwd",
            f"{server}__../../{tool}",
            f"{server}__{tool}/../{tool}",
            f"{server}/../{real}",
            f"{real}\x00",
            f"{real}; rm -rf /",
            f"{real}' OR '1'='1",
            f"{real}$(id)",
            f"{real}`id`",
            real.upper(),
            f" {real}",
            f"{real} ",
            f"{real}\n",
            f"{server}____{tool}",
            f"__{tool}",
            f"{server}__",
            "",
            "__",
            real.replace("e", "\u0435"),  # Cyrillic homoglyph
            real + rnd.choice(ODD),
            rnd.choice(ODD) + real,
            f"{server}\u2063__{tool}",
            real.replace("_", "\uff3f"),
            real * 5000,  # 50-80 kB of name
            "a" * rnd.randint(300, 5000),
            f"%2e%2e%2f{real}",
            f"{real}%00",
            "{{7*7}}",
            "${jndi:ldap://127.0.0.1/x}",
            "<script>alert(1)</script>",
            f"file:///{real}",
            5,
            None,
            ["x"],
            {"name": real},
            True,
        ]
    )


def _cases(rnd: random.Random, count: int) -> list[tuple[Any, Any]]:
    """``count`` (name, arguments) pairs, each hostile or against the named tool's schema."""
    kinds: list[Callable[[], tuple[Any, Any]]] = []

    def wrong_type() -> tuple[Any, Any]:
        name = rnd.choice(list(VALID))
        args = json.loads(json.dumps(VALID[name]))
        if name == "rec__stamp":
            args["label"] = _value(rnd, "string")
        elif name == "rec__wait_for":
            key = rnd.choice(["amount", "unit"])
            args[key] = _value(rnd, "integer" if key == "amount" else "string")
        else:
            spot = rnd.randrange(4)
            if spot == 0:
                args["order"] = _value(rnd, "object")
            elif spot == 1:
                args["order"]["items"] = _value(rnd, "array")
            elif spot == 2:
                args["order"]["items"][0]["qty"] = rnd.choice(["2", 2.5, None, [2], True])
            else:
                args["order"]["express"] = rnd.choice(["yes", 1, None, [], {}])
        return name, args

    def missing() -> tuple[Any, Any]:
        name = rnd.choice(list(VALID))
        args = dict(VALID[name])
        args.pop(rnd.choice(list(args)) if name != "rec__ship_order" else "order")
        return name, args

    def extra() -> tuple[Any, Any]:
        name = rnd.choice(list(VALID))
        key = rnd.choice(["extra", "__proto__", "constructor", "$ref", "label" + rnd.choice(ODD)])
        if name == "rec__stamp" and key == "label":
            key = "labels"
        value = rnd.choice([_value(rnd), _deep(rnd.randint(2, 20), rnd), "y" * 10_000])
        return name, {**VALID[name], key: value}

    def out_of_range() -> tuple[Any, Any]:
        name = rnd.choice(list(VALID))
        if name == "rec__stamp":
            return name, {"label": rnd.choice(["", "z" * rnd.randint(101, 200_000)])}
        if name == "rec__wait_for":
            return name, rnd.choice(
                [
                    {"amount": rnd.choice([-1, 1001, 2**70, -(2**70)]), "unit": "s"},
                    {"amount": 5, "unit": rnd.choice(["S", "sec", "", " s", "s\u200b", "m"])},
                ]
            )
        items = rnd.choice([[], [{"sku": "A", "qty": 1}] * rnd.randint(21, 500)])
        return name, {"order": {"items": items}}

    def huge() -> tuple[Any, Any]:
        name = rnd.choice(list(VALID))
        blob = "h" * rnd.randint(1_000_001, 1_500_000)
        return name, ({**VALID[name], "blob": blob} if rnd.random() < 0.5 else {"label": blob})

    def deep() -> tuple[Any, Any]:
        name = rnd.choice(list(VALID))
        nested = _deep(rnd.randint(33, 240), rnd)  # the SDK client sends at most ~250 levels
        if name == "rec__ship_order" and rnd.random() < 0.5:
            return name, {"order": {"items": [{"sku": "A", "qty": 1, "more": nested}]}}
        return name, {**VALID[name], "nested": nested}

    def not_an_object() -> tuple[Any, Any]:
        name = rnd.choice(list(VALID))
        # (the object written as JSON text is not among them: call_tool reads it as the object)
        shapes = [[VALID[name]], list(VALID[name]), "label=fragile", json.dumps([VALID[name]])]
        return name, rnd.choice([*shapes, 5, 1.5, True, False, 0, ""])

    def hostile_name() -> tuple[Any, Any]:
        name = _hostile_name(rnd)
        return name, dict(VALID[rnd.choice(list(VALID))])

    kinds = [wrong_type, missing, extra, out_of_range, deep, not_an_object, hostile_name]
    cases = [kinds[i % len(kinds)]() for i in range(count - 20)]
    cases += [huge() for _ in range(20)]  # 20 of 1-1.5 MB each: enough to show the cap
    rnd.shuffle(cases)
    return cases


def _config(tmp_path: Path, log: Path) -> Any:
    servers = {
        "rec": {"command": sys.executable, "args": [str(RECORDER), str(log)]},
        "time": {
            "command": sys.executable,
            "args": ["-c", "from mcp_server_time import main; main()", "--local-timezone", "UTC"],
        },
    }
    (tmp_path / "servers.json").write_text(json.dumps({"mcpServers": servers}))
    (tmp_path / "toolroute.toml").write_text(
        f'[toolroute]\nstore = "{tmp_path / "store"}"\ncall_gate = "off"\n'
    )
    return load_config(tmp_path / "servers.json")


def _text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


@pytest.mark.parametrize("count", CASES)
def test_hostile_argument_sets_reach_the_server_zero_times(
    tmp_path: Path, onnx: OnnxEmbedder, count: int
) -> None:
    log = tmp_path / "received.jsonl"
    cfg = _config(tmp_path, log)
    cases = _cases(random.Random(SEED), count)
    assert len(cases) == count
    validators = {n: None for n in VALID}
    leaks: list[tuple[int, str]] = []

    async def main() -> None:
        async with running_downstreams(cfg) as downstreams:
            router, _ = await sync_router(cfg, downstreams, embedder=onnx)
            gw = Gateway(router, downstreams, ToolrouteSettings(call_gate="off"))
            schemas = {n: gw.shared.presenter.tools_by_name[n].input_schema for n in VALID}
            for n, s in schemas.items():
                validators[n] = jsonschema.Draft202012Validator(s)  # type: ignore[assignment]
            async with Client(gw.server) as c:
                with anyio.fail_after(900):
                    for i, (name, arguments) in enumerate(cases):
                        if isinstance(name, str) and name in VALID and isinstance(arguments, dict):
                            assert not _fits(validators[name], arguments), (i, name)
                        r = await c.call_tool("call_tool", {"name": name, "arguments": arguments})
                        text = _text(r)
                        if not r.is_error or INTERNAL.search(text) or len(text) > 20_000:
                            leaks.append((i, text[:300]))
                    assert not log.exists(), log.read_text()[:2000]
                    # the recorder does record: one valid call gets through
                    r = await c.call_tool(
                        "call_tool", {"name": "rec__stamp", "arguments": VALID["rec__stamp"]}
                    )
                    assert not r.is_error and _text(r) == "ok"
            router.close()

    anyio.run(main)
    assert leaks == []
    assert [json.loads(line) for line in log.read_text().splitlines()] == [
        {"name": "stamp", "arguments": VALID["rec__stamp"]}
    ]


def _fits(validator: Any, arguments: dict[str, Any]) -> bool:
    try:
        return bool(validator.is_valid(arguments))
    except RecursionError:  # nested deeper than jsonschema can walk: not a fit either
        return False


def test_invalid_k_query_or_subtask_is_an_error_naming_what_is_accepted(
    tmp_path: Path, onnx: OnnxEmbedder
) -> None:
    cfg = _config(tmp_path, tmp_path / "received.jsonl")

    async def main() -> None:
        async with running_downstreams(cfg) as downstreams:
            router, _ = await sync_router(cfg, downstreams, embedder=onnx)
            gw = Gateway(router, downstreams)
            async with Client(gw.server) as c:
                with anyio.fail_after(120):
                    for k in (2.5, True, False, [3], {"k": 3}, "three"):
                        r = await c.call_tool("find_tools", {"query": "stamp a label", "k": k})
                        assert r.is_error, k
                        assert "`k` must be an integer from 1 to 50" in _text(r), (k, _text(r))
                    # what models send for a number: clamped to 1..50, text and 3.0 read
                    for k, most in ((1, 1), (50, 50), (0, 1), (-1, 1), ("3", 3), (2.0, 2)):
                        r = await c.call_tool("find_tools", {"query": "stamp a label", "k": k})
                        assert not r.is_error, (k, _text(r))
                        assert 1 <= len(r.structured_content["candidates"]) <= most
                    for k in (51, 10**20, None):
                        r = await c.call_tool("find_tools", {"query": "stamp a label", "k": k})
                        assert not r.is_error, (k, _text(r))
                    r = await c.call_tool("find_tools", {"query": "stamp a label"})
                    assert len(r.structured_content["candidates"]) == 5  # the default
                    for bad in (
                        {"query": 5},
                        {"query": ["stamp"]},
                        {"query": {"q": "stamp"}},
                        {"query": True},
                        {"query": "stamp " * 3000},
                        {"subtask": "stamp a label"},
                        {"subtask": ["stamp"]},
                        {"subtask": {"operation": 5}},
                        {"subtask": {"operation": "stamp", "target": ["label"]}},
                        {},
                        {"query": "   "},
                    ):
                        r = await c.call_tool("find_tools", bad)
                        assert r.is_error and r.structured_content["error"] == "invalid_arguments"
                        assert not INTERNAL.search(_text(r)), _text(r)
                    for k in (2.5, True, "x", [2]):
                        r = await c.call_tool("request_capability", {"need": "stamp", "k": k})
                        assert r.is_error
                        assert "`k` must be an integer from 1 to 20" in _text(r), _text(r)
                    for need in (None, 5, ["x"], ""):
                        r = await c.call_tool("request_capability", {"need": need})
                        assert r.is_error and "request_capability needs `need`" in _text(r)
                    r = await c.call_tool("request_capability", {"need": "stamp", "k": 2})
                    assert not r.is_error
            router.close()

    anyio.run(main)
