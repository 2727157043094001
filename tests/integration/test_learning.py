"""Learning from real executions (issue 12), end to end with real processes, no simulation.

Two providers of the same capability behind one gateway: the reference server mcp-server-time
(``clock-b``) and the same server behind ``tests/fixtures/flaky_proxy.py`` (``clock-a``: it
fails a set share of calls and adds latency). ``clock-a`` is listed first, so on equal scores
it is shown first. An agent loop — ``find_tools``, then ``call_tool`` on the first candidate —
runs through the gateway's MCP interface; every call's outcome reaches the statistics (EHRR
eq. 8) and the store. Then ``ehrr`` ranks the reliable provider first, a similarity strategy
still cannot tell the two apart, and a new gateway over the same store reads the learned
statistics back.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.conftest import REPO
from toolroute.config import load_config
from toolroute.embed.onnx import OnnxEmbedder
from toolroute.gateway.app import running_pool, sync_router
from toolroute.gateway.server import Gateway

pytestmark = pytest.mark.integration

PROXY = REPO / "tests" / "fixtures" / "flaky_proxy.py"
TIME_MAIN = (
    "import sys; sys.argv[1:] = ['--local-timezone', 'UTC']; "
    "from mcp_server_time import main; main()"
)
QUERY = "what is the current time in a given timezone"
TOOL = "get_current_time"
MAX_CALLS = 30
"""Bound of the agent loop; the flaky provider fails 60 % of its calls."""


def _config(tmp_path: Path) -> Path:
    time_server = {"command": sys.executable, "args": ["-c", TIME_MAIN]}
    flaky = {
        "command": sys.executable,
        "args": [
            str(PROXY),
            "--fail-share",
            "0.6",
            "--latency-s",
            "0.05",
            "--seed",
            "3",
            "--",
            sys.executable,
            "-c",
            TIME_MAIN,
        ],
    }
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": {"clock-a": flaky, "clock-b": time_server}}))
    (tmp_path / "toolroute.toml").write_text(
        f'[toolroute]\nstore = "{tmp_path / "store"}"\ncall_timeout_s = 20\n'
    )
    return path


def _scores(candidates: list[dict[str, Any]]) -> dict[str, float]:
    return {c["server"]: float(c["score"]) for c in candidates if c["tool"] == TOOL}


def test_ehrr_learns_the_reliable_provider_from_real_calls_and_keeps_it_after_restart(
    tmp_path: Path,
) -> None:
    cfg = load_config(_config(tmp_path))
    embedder = OnnxEmbedder()
    log: dict[str, Any] = {}

    async def first_gateway() -> None:
        async with running_pool(cfg) as pool:
            router, _ = await sync_router(cfg, pool, embedder=embedder)
            gw = Gateway(router, pool, k=2, strategy="ehrr", call_timeout_s=20)
            before = router.route(QUERY, k=4, strategy="hybrid")
            log["hybrid_before"] = [(c.server, c.tool, c.score) for c in before]
            calls: list[tuple[str, bool]] = []
            firsts: list[str] = []
            async with Client(gw.server, mode="legacy", raise_exceptions=True) as c:
                with anyio.fail_after(120):
                    for _ in range(MAX_CALLS):
                        found = await c.call_tool("find_tools", {"query": QUERY, "k": 2})
                        shown = [x for x in found.structured_content["candidates"]]
                        top = next(x for x in shown if x["tool"] == TOOL)
                        firsts.append(top["server"])
                        r = await c.call_tool(
                            "call_tool", {"name": top["name"], "arguments": {"timezone": "UTC"}}
                        )
                        calls.append((top["server"], not r.is_error))
                        if len(firsts) >= 5 and set(firsts[-5:]) == {"clock-b"}:
                            break
                    found = await c.call_tool("find_tools", {"query": QUERY, "k": 2})
            log["calls"], log["firsts"] = calls, firsts
            log["ehrr_after"] = _scores(found.structured_content["candidates"])
            after = router.route(QUERY, k=4, strategy="hybrid")
            log["hybrid_after"] = [(c.server, c.tool, c.score) for c in after]
            log["stats"] = {s: router.stats.server(s) for s in ("clock-a", "clock-b")}
            router.close()

    anyio.run(first_gateway)
    calls, firsts = log["calls"], log["firsts"]
    # The flaky provider was tried first (listed first, equal priors) and failed at least once;
    # from then on the reliable one ranks first, and stays first.
    assert firsts[0] == "clock-a"
    assert any(server == "clock-a" and not ok for server, ok in calls)
    switch = firsts.index("clock-b")
    assert set(firsts[switch:]) == {"clock-b"} and len(calls) < MAX_CALLS
    assert all(ok for server, ok in calls if server == "clock-b")
    after = log["ehrr_after"]
    assert list(after)[0] == "clock-b" and after["clock-b"] > after["clock-a"]
    # Similarity alone does not tell them apart, before or after the calls.
    for ranking in (log["hybrid_before"], log["hybrid_after"]):
        pair = {s: score for s, t, score in ranking if t == TOOL}
        assert set(pair) == {"clock-a", "clock-b"}
        assert abs(pair["clock-a"] - pair["clock-b"]) < 0.02
    assert log["hybrid_before"] == log["hybrid_after"]
    a, b = log["stats"]["clock-a"], log["stats"]["clock-b"]
    assert a.calls + b.calls == len(calls)
    assert a.success < b.success and a.latency_s > 0.0

    async def second_gateway() -> None:
        async with running_pool(cfg) as pool:
            router, sync = await sync_router(cfg, pool, embedder=embedder)
            log["resync"] = sync.index
            log["stats2"] = {s: router.stats.server(s) for s in ("clock-a", "clock-b")}
            gw = Gateway(router, pool, k=2, strategy="ehrr", call_timeout_s=20)
            async with Client(gw.server, mode="legacy", raise_exceptions=True) as c:
                with anyio.fail_after(30):
                    found = await c.call_tool("find_tools", {"query": QUERY, "k": 2})
            log["ehrr_restart"] = _scores(found.structured_content["candidates"])
            router.close()

    anyio.run(second_gateway)
    assert log["stats2"] == log["stats"]  # read back from the store, not relearned
    assert log["resync"].embedded == 0
    assert list(log["ehrr_restart"])[0] == "clock-b"
    assert log["ehrr_restart"] == pytest.approx(after)
