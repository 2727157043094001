"""Learning from real executions (issue 12): how many real calls until a strategy ranks the
reliable provider first.

Two providers of one capability behind one gateway: mcp-server-time (``clock-b``) and the same
server behind tests/fixtures/flaky_proxy.py (``clock-a``, listed first: it wins ties; it fails
``--fail-share`` of its calls and adds ``--latency-s``). An agent loop through the gateway's MCP
interface calls ``find_tools`` and then ``call_tool`` on the first candidate, until the reliable
provider has been first 5 times in a row (or ``--max-calls``); with ``--workload alternate``
the calls go to both providers in turn and the ranking is only watched. One fresh store per
(strategy, proxy seed). Reported: the number of calls made before the reliable provider first ranked
first, how many of them failed, and whether it stayed first.

    .venv/bin/python -m benchmarks.learning --seeds 5 --out benchmarks/results/learning.md
    .venv/bin/python -m benchmarks.learning --seeds 5 --workload alternate \
        --out benchmarks/results/learning.md
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from toolroute.config import load_config
from toolroute.embed.onnx import OnnxEmbedder
from toolroute.gateway.ops.app import running_downstreams
from toolroute.gateway.ops.syncing import sync_router
from toolroute.gateway.shell.server import Gateway
from toolroute.settings import ToolrouteSettings

REPO = Path(__file__).resolve().parents[1]
PROXY = REPO / "tests" / "fixtures" / "flaky_proxy.py"
TIME_MAIN = (
    "import sys; sys.argv[1:] = ['--local-timezone', 'UTC']; "
    "from mcp_server_time import main; main()"
)
QUERY = "what is the current time in a given timezone"
TOOL = "get_current_time"


def _config(directory: Path, fail_share: float, latency_s: float, seed: int) -> Path:
    time_server = {"command": sys.executable, "args": ["-c", TIME_MAIN]}
    proxy = [str(PROXY), "--fail-share", str(fail_share), "--latency-s", str(latency_s)]
    child = [sys.executable, "-c", TIME_MAIN]  # the same time server, behind the proxy
    flaky = {"command": sys.executable, "args": [*proxy, "--seed", str(seed), "--", *child]}
    path = directory / "servers.json"
    path.write_text(json.dumps({"mcpServers": {"clock-a": flaky, "clock-b": time_server}}))
    (directory / "toolroute.toml").write_text(
        f'[toolroute]\nstore = "{directory / "store"}"\ncall_timeout_s = 20\n'
    )
    return path


async def run_once(
    strategy: str,
    seed: int,
    fail_share: float,
    latency_s: float,
    max_calls: int,
    embedder: Any,
    workload: str = "follow",
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        cfg = load_config(_config(Path(tmp), fail_share, latency_s, seed))
        async with running_downstreams(cfg) as downstreams:
            router, _ = await sync_router(cfg, downstreams, embedder=embedder)
            gw = Gateway(
                router, downstreams, ToolrouteSettings(k=4, strategy=strategy, call_timeout_s=20)
            )
            firsts: list[str] = []
            failures = 0
            try:
                async with Client(gw.server, mode="legacy", raise_exceptions=True) as c:
                    with anyio.fail_after(max_calls * 5):
                        for i in range(max_calls):
                            found = await c.call_tool("find_tools", {"query": QUERY, "k": 4})
                            cands = found.structured_content["candidates"]
                            top = next(x for x in cands if x["tool"] == TOOL)
                            firsts.append(top["server"])
                            name = top["name"]
                            if workload == "alternate":  # both providers, in turn
                                name = f"clock-{'ab'[i % 2]}__{TOOL}"
                            r = await c.call_tool(
                                "call_tool", {"name": name, "arguments": {"timezone": "UTC"}}
                            )
                            failures += bool(r.is_error)
                            if len(firsts) >= 5 and set(firsts[-5:]) == {"clock-b"}:
                                break
            finally:
                router.close()
    switch = firsts.index("clock-b") if "clock-b" in firsts else None
    return {
        "strategy": strategy,
        "seed": seed,
        "calls_until_reliable_first": switch,
        "failed_calls": failures,
        "calls": len(firsts),
        "stayed_first": switch is not None and set(firsts[switch:]) == {"clock-b"},
    }


def main() -> None:
    from benchmarks.variants import register_strategies

    register_strategies()  # the research variants
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--strategy", "-s", action="append", default=None)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--fail-share", type=float, default=0.6)
    ap.add_argument("--latency-s", type=float, default=0.05)
    ap.add_argument("--max-calls", type=int, default=30)
    ap.add_argument("--workload", choices=["follow", "alternate"], default="follow")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    strategies = args.strategy or ["ehrr", "ehrr-beta", "ehrr-ts", "ehrr-ucb", "hybrid"]
    embedder = OnnxEmbedder()
    rows = [
        anyio.run(
            run_once,
            s,
            seed,
            args.fail_share,
            args.latency_s,
            args.max_calls,
            embedder,
            args.workload,
        )
        for s in strategies
        for seed in range(args.seeds)
    ]
    loop = {
        "follow": "find_tools, then call_tool on the first candidate (the agent follows the "
        "ranking)",
        "alternate": "find_tools, then call_tool on clock-a and clock-b in turn (the ranking "
        "is only watched)",
    }[args.workload]
    lines = [
        f"### Learning from real executions ({args.workload}): calls until the reliable "
        "provider ranks first",
        "",
        f"clock-a = mcp-server-time behind flaky_proxy.py (fails {args.fail_share:.0%} of calls, "
        f"+{args.latency_s} s), listed first; clock-b = mcp-server-time. Each round: {loop}; "
        f"stop after clock-b is first 5 times in a row or {args.max_calls} calls. "
        f"Proxy seeds 0..{args.seeds - 1}. Command: `.venv/bin/python -m benchmarks.learning "
        f"--seeds {args.seeds} --workload {args.workload}`.",
        "",
        "| strategy | calls until reliable first (per seed) | mean | failed calls (mean) | "
        "stayed first |",
        "|---|---|---:|---:|---:|",
    ]
    for s in strategies:
        mine = [r for r in rows if r["strategy"] == s]
        until = [r["calls_until_reliable_first"] for r in mine]
        known = [u for u in until if u is not None]
        mean = f"{statistics.mean(known):.1f}" if len(known) == len(until) else "never (some)"
        lines.append(
            f"| {s} | {', '.join('never' if u is None else str(u) for u in until)} | {mean} | "
            f"{statistics.mean(r['failed_calls'] for r in mine):.1f} | "
            f"{sum(r['stayed_first'] for r in mine)}/{len(mine)} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out is not None:  # appends: one file holds both workloads
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with args.out.open("a", encoding="utf-8") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
