"""Tool curation from toolroute.toml (catalog/curation.py) through a real gateway with real
servers behind it (the reference time server, the latch and rug fixtures) and the official SDK
client: a renamed and re-described tool is what find_tools returns and call_tool runs, a hidden
tool is never shown and refused, a pinned tool is in every shortlist, and a rug pull on a
curated tool is still caught against the server's original description."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.conftest import REPO, TIME_MAIN
from tests.helpers.faults import rug, run_gateway, text
from tests.helpers.faults import write_config as write_fault_config
from tests.helpers.gateways import http_gateway
from toolroute.config import load_config
from toolroute.downstream.servers import Downstreams
from toolroute.embed.onnx import OnnxEmbedder
from toolroute.gateway.ops.syncing import resync, watch_changes
from toolroute.gateway.shell.server import Gateway

pytestmark = pytest.mark.integration

LATCH = REPO / "tests" / "fixtures" / "latch_server.py"
CURATION = """
[tools."time__get_current_time"]
name = "clock_now"
description = "Tell the wall-clock time in a city's IANA timezone, e.g. Asia/Tokyo."
annotations = { readOnlyHint = true, title = "Clock" }
[tools."time__convert_time"]
hidden = true
[tools."latch__hold"]
pin = true
"""


def _config(tmp_path: Path, **settings: Any) -> Any:
    servers = {
        "time": {"command": sys.executable, "args": ["-c", TIME_MAIN]},
        "latch": {"command": sys.executable, "args": [str(LATCH), str(tmp_path)]},
    }
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    lines = [f"store = {json.dumps(str(tmp_path / 'store'))}"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in settings.items()]
    (tmp_path / "toolroute.toml").write_text("[toolroute]\n" + "\n".join(lines) + CURATION)
    return load_config(path)


async def _find(c: Client, query: str, k: int = 5) -> list[dict[str, Any]]:
    r = await c.call_tool("find_tools", {"query": query, "k": k})
    return list(json.loads(text(r))["candidates"])


async def _call(c: Client, name: str, arguments: dict[str, Any]) -> Any:
    return await c.call_tool("call_tool", {"name": name, "arguments": arguments})


def test_curated_tools_are_what_find_tools_shows_and_call_tool_runs(
    tmp_path: Path, onnx: OnnxEmbedder
) -> None:
    cfg = _config(tmp_path)

    async def main() -> None:
        with anyio.fail_after(180):
            async with http_gateway(cfg, onnx) as (url, _), Client(url) as c:
                listed = {t.name: t for t in (await c.list_tools()).tools}
                described = listed["find_tools"].description or ""
                assert "Behind it: 2 servers, 2 tools: latch (1), time (1)." in described

                found = await _find(c, "what time is it in Tokyo")
                names = [x["name"] for x in found]
                assert names[:2] == ["latch__hold", "time__clock_now"]  # pinned first
                clock = found[1]
                assert clock["description"].startswith("Tell the wall-clock time")
                assert "time__get_current_time" not in names
                r = await _call(c, "time__clock_now", {"timezone": "Asia/Tokyo"})
                assert not r.is_error and "Asia/Tokyo" in text(r)
                r = await _call(c, "time__get_current_time", {"timezone": "Asia/Tokyo"})
                assert r.is_error and "unknown_tool" in text(r)  # the original name is gone

                for query in ("convert a time between two timezones", "convert_time"):
                    names = [x["name"] for x in await _find(c, query, 10)]
                    assert "time__convert_time" not in names
                    assert "latch__hold" in names  # pinned: in every shortlist
                r = await _call(
                    c,
                    "time__convert_time",
                    {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
                )
                assert r.is_error and "unknown_tool" in text(r)

    anyio.run(main)


def test_pass_through_lists_curated_names_descriptions_and_annotations(
    tmp_path: Path, onnx: OnnxEmbedder
) -> None:
    cfg = _config(tmp_path, expose="all")

    async def main() -> None:
        with anyio.fail_after(180):
            async with http_gateway(cfg, onnx) as (url, _), Client(url) as c:
                listed = {t.name: t for t in (await c.list_tools()).tools}
                assert "convert_time" not in listed and "get_current_time" not in listed
                clock = listed["clock_now"]
                assert (clock.description or "").startswith("Tell the wall-clock time")
                assert clock.annotations is not None and clock.annotations.read_only_hint
                assert clock.annotations.title == "Clock"
                r = await c.call_tool("clock_now", {"timezone": "Asia/Tokyo"})
                assert not r.is_error and "Asia/Tokyo" in text(r)
                r = await c.call_tool("convert_time", {})
                assert r.is_error

    anyio.run(main)


def test_a_rug_pull_on_a_curated_tool_is_caught_against_the_original(tmp_path: Path) -> None:
    forecast = {
        "description": "Weather forecast for a city.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
    path = write_fault_config(tmp_path, {"rug": rug(tmp_path, forecast)}, relist_interval_s=1)
    with (tmp_path / "toolroute.toml").open("a") as f:
        f.write('[tools."rug__get_forecast"]\nname = "outlook"\ndescription = "Local outlook."\n')
    cfg = load_config(path)
    state = tmp_path / "rug-state.json"

    async def body(gw: Gateway, downstreams: Downstreams) -> None:
        assert "rug__outlook" in gw.shared.presenter.tools_by_name
        await resync(cfg, downstreams, gw)  # the override alone is no change of the server's tool
        assert not gw.shared.quarantined
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch_changes, cfg, downstreams, gw)
            state.write_text(json.dumps({**forecast, "description": "Forecast, now better."}))
            with anyio.fail_after(60):
                while "rug__outlook" not in gw.shared.quarantined:
                    await anyio.sleep(0.1)
            assert gw.shared.quarantined["rug__outlook"].changed == ("description",)
            assert "rug__outlook" not in gw.shared.presenter.tools_by_name
            r = await gw.calls.checked("rug__outlook", {"city": "Oslo"})
            assert r.is_error and r.structured_content is not None
            assert r.structured_content["error"] == "quarantined"
            tg.cancel_scope.cancel()

    run_gateway(cfg, body)
