"""The gateway's HTTP transport options (gateway/ops/serving.py) with the real time server
behind it: SSE replies by default, one JSON body per reply with ``[http] json_response``, and
the SDK's per-request OpenTelemetry span only when ``otel`` is on."""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.server._otel import OpenTelemetryMiddleware

from tests.conftest import TIME_MAIN
from tests.helpers.gateways import http_gateway
from tests.helpers.stdio import HELLO
from toolroute.config import load_config
from toolroute.embed.onnx import OnnxEmbedder
from toolroute.gateway.ops.app import gateway_embedder, make_gateway

pytestmark = pytest.mark.integration

INITIALIZE = HELLO[0]  # the raw initialize request a client sends first


def _config(tmp_path: Path, toml: str) -> Any:
    tmp_path.mkdir(parents=True, exist_ok=True)
    servers = {"time": {"command": sys.executable, "args": ["-c", TIME_MAIN]}}
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    store = json.dumps(str(tmp_path / "store"))
    (tmp_path / "toolroute.toml").write_text(f"[toolroute]\nstore = {store}\n{toml}")
    return load_config(path)


async def _content_type(url: str) -> str:
    headers = {"Accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(timeout=20) as http:
        r = await http.post(url, json=INITIALIZE, headers=headers)
        assert r.status_code == 200, r.text
        return r.headers["content-type"]


async def _find_and_call(url: str) -> None:
    async with Client(url, mode="legacy") as c:
        r = await c.call_tool("find_tools", {"query": "what time is it in Tokyo", "k": 2})
        assert not r.is_error
        r = await c.call_tool(
            "call_tool",
            {"name": "time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}},
        )
        assert not r.is_error and "Asia/Tokyo" in r.content[0].text  # type: ignore[union-attr]


def test_json_response_answers_with_one_json_body_and_calls_still_work(
    tmp_path: Path, onnx: OnnxEmbedder
) -> None:
    cfg = _config(tmp_path, "[http]\njson_response = true\n")
    assert cfg.http.json_response

    async def main() -> None:
        with anyio.fail_after(120):
            async with http_gateway(cfg, onnx) as (url, _):
                assert (await _content_type(url)).startswith("application/json")
                await _find_and_call(url)

    anyio.run(main)


def test_replies_are_sse_by_default_and_sdk_request_spans_follow_the_otel_setting(
    tmp_path: Path, onnx: OnnxEmbedder
) -> None:
    cfg = _config(tmp_path, "")
    assert not cfg.settings.otel and not cfg.http.json_response

    async def main() -> None:
        with anyio.fail_after(120):
            async with http_gateway(cfg, onnx) as (url, gateway):
                middleware = gateway.server.middleware
                assert not any(isinstance(m, OpenTelemetryMiddleware) for m in middleware)
                assert (await _content_type(url)).startswith("text/event-stream")
                await _find_and_call(url)
                traced = make_gateway(
                    _config(tmp_path / "otel", "otel = true\n"),
                    gateway.shared.router,
                    gateway.shared.downstreams,
                )
                middleware = traced.server.middleware
                assert any(isinstance(m, OpenTelemetryMiddleware) for m in middleware)

    anyio.run(main)


def test_a_serving_gateway_embeds_on_one_thread_behind_the_query_memo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOOLROUTE_THREADS", raising=False)
    cfg = _config(tmp_path, "query_cache = 7\n")
    embedder = gateway_embedder(cfg)
    assert embedder.size == 7 and embedder.inner._threads == 1
    v = embedder.embed(["what time is it in Tokyo"])
    assert v.shape == (1, 384) and embedder.misses == 1
    monkeypatch.setenv("TOOLROUTE_THREADS", "2")
    assert gateway_embedder(cfg).inner._threads == 2


def test_a_closed_session_leaves_nothing_behind_in_the_gateway(
    tmp_path: Path, onnx: OnnxEmbedder
) -> None:
    """Per-connection state (the relay's session handle) goes when the client closes, and
    the call gate's promotions are the client's, not its sessions': 20 sessions one after
    another leave one client's state, not twenty."""
    cfg = _config(tmp_path, "")

    async def main() -> None:
        with anyio.fail_after(120):
            async with http_gateway(cfg, onnx) as (url, gateway):
                for _ in range(20):
                    async with Client(url, mode="legacy") as c:
                        r = await c.call_tool("find_tools", {"query": "time in Tokyo", "k": 2})
                        assert not r.is_error
                    assert len(gateway.relay.sessions) <= 1  # at most the one just closing
                while gateway.relay.sessions:  # its teardown runs after the DELETE answer
                    await anyio.sleep(0.05)
                gc.collect()
                assert (
                    len(gateway.shared.sessions) == 1
                )  # the client's (its name), per-session none

    anyio.run(main)
