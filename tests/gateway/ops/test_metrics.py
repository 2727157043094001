"""/metrics of a real HTTP gateway over the reference time server (mcp-server-time): after
real calls through the official SDK client, the Prometheus text parsed by prometheus_client's
own parser holds exactly the counts and histograms of what was done; behind the bearer token."""

from __future__ import annotations

import json
import secrets
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import TIME_MAIN
from tests.helpers.gateways import http_gateway
from toolroute.config import load_config
from toolroute.embed.onnx import OnnxEmbedder
from toolroute.gateway.ops._metrics import GatewayMetrics

pytestmark = pytest.mark.integration


def _config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, dict[str, str]]:
    """The time server behind a gateway with two token clients: ``ops`` (everything) and
    ``narrow`` (an allow-list); the call gate on, in its strict per-connection scope."""
    servers = {"time": {"command": sys.executable, "args": ["-c", TIME_MAIN]}}
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    tokens = {"ops": secrets.token_urlsafe(24), "narrow": secrets.token_urlsafe(24)}
    for client, token in tokens.items():
        monkeypatch.setenv(f"TR_METRICS_{client.upper()}", token)
    (tmp_path / "toolroute.toml").write_text(
        f'[toolroute]\nstore = "{tmp_path / "store"}"\ncall_gate = "connection"\n'
        '[auth.clients.ops]\ntoken_env = "TR_METRICS_OPS"\n'
        '[auth.clients.narrow]\ntoken_env = "TR_METRICS_NARROW"\nservers = ["time"]\n'
    )
    return config, tokens


def _samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of the exposition, by (name, labels)."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _value(samples: dict[Any, float], name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_metrics_count_the_calls_made_through_a_real_gateway(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, onnx: OnnxEmbedder
) -> None:
    config, tokens = _config(tmp_path, monkeypatch)
    cfg = load_config(config)
    ops = {"Authorization": f"Bearer {tokens['ops']}"}

    async def main() -> None:
        with anyio.fail_after(120):
            async with http_gateway(cfg, onnx) as (url, _gateway):
                metrics_url = url.removesuffix("/mcp") + "/metrics"
                async with create_mcp_http_client(ops) as http:
                    transport = streamable_http_client(url, http_client=http)
                    async with Client(transport, mode="legacy") as c:
                        for query in ("what time is it in Tokyo", "current time"):
                            found = await c.call_tool("find_tools", {"query": query, "k": 2})
                            assert not found.is_error
                        name = "time__get_current_time"
                        for zone in ("Asia/Tokyo", "Europe/Paris", "UTC"):
                            ok = await c.call_tool(
                                "call_tool", {"name": name, "arguments": {"timezone": zone}}
                            )
                            assert not ok.is_error
                        bad = await c.call_tool(
                            "call_tool", {"name": name, "arguments": {"timezone": 5}}
                        )
                        assert bad.structured_content["error"] == "invalid_arguments"
                        typo = await c.call_tool("call_tool", {"name": "time__get_time"})
                        assert typo.structured_content["error"] == "unknown_tool"
                    # a new connection: find_tools has promoted nothing in it yet
                    transport = streamable_http_client(url, http_client=http)
                    async with Client(transport, mode="legacy") as c:
                        gated = await c.call_tool(
                            "call_tool", {"name": name, "arguments": {"timezone": "UTC"}}
                        )
                        assert gated.structured_content["error"] == "tool_not_available"
                async with httpx2.AsyncClient(timeout=20) as plain:
                    assert (await plain.get(metrics_url)).status_code == 401
                    wrong = {"Authorization": "Bearer " + "x" * 32}
                    assert (await plain.get(metrics_url, headers=wrong)).status_code == 401
                    narrow = {"Authorization": f"Bearer {tokens['narrow']}"}
                    assert (await plain.get(metrics_url, headers=narrow)).status_code == 403
                    response = await plain.get(metrics_url, headers=ops)
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/plain; version=")
        m = _samples(response.text)
        time_tool = {"server": "time", "tool": "get_current_time"}
        assert _value(m, "toolroute_find_tools_total", outcome="ok") == 2
        assert _value(m, "toolroute_find_tools_seconds_count") == 2
        assert _value(m, "toolroute_find_tools_seconds_sum") > 0
        assert _value(m, "toolroute_tool_calls_total", **time_tool, outcome="ok") == 3
        # the invalid arguments and the gate's refusal: errors of a catalogued tool
        assert _value(m, "toolroute_tool_calls_total", **time_tool, outcome="error") == 2
        assert _value(m, "toolroute_tool_call_seconds_count", **time_tool) == 5
        assert _value(m, "toolroute_tool_call_seconds_bucket", **time_tool, le="+Inf") == 5
        assert _value(m, "toolroute_tool_calls_total", server="-", tool="-", outcome="error") == 1
        assert _value(m, "toolroute_errors_total", kind="invalid_arguments") == 1
        assert _value(m, "toolroute_errors_total", kind="unknown_tool") == 1
        assert _value(m, "toolroute_errors_total", kind="tool_not_available") == 1
        assert _value(m, "toolroute_call_gate_refusals_total", reason="tool_not_available") == 1
        assert _value(m, "toolroute_downstream_up", server="time") == 1
        assert _value(m, "toolroute_downstream_tools", server="time") == 2
        assert _value(m, "toolroute_index_tools") == 2
        assert _value(m, "toolroute_quarantined_tools") == 0
        # one outcome per executed call, one routing event per find_tools
        assert _value(m, "toolroute_store_seconds_count", operation="record_outcome") == 3
        assert _value(m, "toolroute_store_seconds_count", operation="record_event") == 2
        found = _value(m, "toolroute_tools_found_total", server="time")
        assert 2 <= found <= 4

    anyio.run(main)


def test_metrics_are_off_when_the_config_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, onnx: OnnxEmbedder
) -> None:
    config, tokens = _config(tmp_path, monkeypatch)
    with (tmp_path / "toolroute.toml").open("a") as f:
        f.write("[metrics]\nenabled = false\n")
    cfg = load_config(config)

    async def main() -> None:
        with anyio.fail_after(120):
            async with http_gateway(cfg, onnx) as (url, _gateway):
                ops = {"Authorization": f"Bearer {tokens['ops']}"}
                async with httpx2.AsyncClient(timeout=20) as plain:
                    got = await plain.get(url.removesuffix("/mcp") + "/metrics", headers=ops)
                    assert got.status_code == 404

    anyio.run(main)


def test_two_gateways_in_one_process_keep_their_own_counts() -> None:
    def gateway() -> Any:
        shared = SimpleNamespace(
            downstreams=SimpleNamespace(servers={}),
            router=SimpleNamespace(catalog=SimpleNamespace(tool_count=0)),
            quarantined={},
            presenter=SimpleNamespace(tools_by_name={}),
        )
        return SimpleNamespace(shared=shared)

    first, second = GatewayMetrics(gateway()), GatewayMetrics(gateway())
    first.errors.labels("timeout").inc()
    one = _samples(first.exposition().decode())
    other = _samples(second.exposition().decode())
    assert _value(one, "toolroute_errors_total", kind="timeout") == 1
    assert _value(other, "toolroute_errors_total", kind="timeout") == 0


def test_pass_through_calls_are_counted_under_their_server_and_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, onnx: OnnxEmbedder
) -> None:
    config, tokens = _config(tmp_path, monkeypatch)
    toml = (tmp_path / "toolroute.toml").read_text()
    (tmp_path / "toolroute.toml").write_text(
        toml.replace("[toolroute]\n", '[toolroute]\nexpose = "all"\n')
    )
    cfg = load_config(config)
    ops = {"Authorization": f"Bearer {tokens['ops']}"}

    async def main() -> None:
        with anyio.fail_after(120):
            async with (
                http_gateway(cfg, onnx) as (url, _gateway),
                create_mcp_http_client(ops) as http,
            ):
                transport = streamable_http_client(url, http_client=http)
                async with Client(transport, mode="legacy") as c:
                    listed = {t.name for t in (await c.list_tools()).tools}
                    assert "get_current_time" in listed  # exposed without its server
                    for _ in range(2):
                        r = await c.call_tool("get_current_time", {"timezone": "UTC"})
                        assert not r.is_error
                got = await http.get(url.removesuffix("/mcp") + "/metrics")
        m = _samples(got.text)
        time_tool = {"server": "time", "tool": "get_current_time"}
        assert _value(m, "toolroute_tool_calls_total", **time_tool, outcome="ok") == 2
        assert _value(m, "toolroute_tool_call_seconds_count", **time_tool) == 2

    anyio.run(main)
