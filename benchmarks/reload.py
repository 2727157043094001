"""Live reconfiguration: how long a config edit takes to reach the agent, against a restart.

    nice -n 10 python -m benchmarks.reload [--rounds 5] [--catalog FILE] [--out F]

Serves each server of a catalog file (default: shared/benchmarks/tool_attention/catalog.json,
6 servers, 120 tools) as a real stdio MCP server (this script with ``--serve SERVER``), starts
``toolroute serve --transport http`` over all of them but the last, then, ``--rounds`` times,
adds the last server to servers.json and times from the file write to the first find_tools
(official SDK client) that returns one of its tools, then removes it again and times until
none comes back. The gateway's own log gives what each reload re-indexed and embedded. The
baseline, measured in the same run: a fresh ``toolroute serve`` over the full config (store
and embedding cache warm) from spawn to the same find_tools answer — what a restart costs.
Writes a markdown table (benchmarks/results/reload.md with --out).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
CATALOG = SHARED / "benchmarks" / "tool_attention" / "catalog.json"
TOOLROUTE = Path(sys.executable).with_name("toolroute")


def serve(catalog: Path, server_id: str) -> None:
    """One catalog server as a stdio MCP server: its tools listed, every call answered ok."""
    import mcp.types as types
    from mcp.server import Server
    from mcp.server.stdio import stdio_server

    data = json.loads(catalog.read_text())
    entry = next(s for s in data["servers"] if s["id"] == server_id)
    tools = [
        types.Tool(name=t["name"], description=t["description"], input_schema=t["input_schema"])
        for t in entry["tools"]
    ]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text="ok")])

    async def main() -> None:
        server = Server(server_id, on_list_tools=list_tools, on_call_tool=call_tool)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


def write_servers(path: Path, catalog: Path, ids: list[str]) -> None:
    servers = {
        i: {
            "command": sys.executable,
            "args": ["-m", "benchmarks.reload", "--catalog", str(catalog), "--serve", i],
            "cwd": str(REPO),
        }
        for i in ids
    }
    path.write_text(json.dumps({"mcpServers": servers}))


class Serve:
    """One ``toolroute serve --transport http`` on a free port, its stderr in a file."""

    def __init__(self, config: Path, log: Path) -> None:
        self.log = log
        self.started = time.perf_counter()
        with log.open("w") as err:
            self.proc = subprocess.Popen(
                [str(TOOLROUTE), "serve", "--config", str(config), "--transport", "http",
                 "--port", "0"],
                stdout=subprocess.DEVNULL,
                stderr=err,
            )  # fmt: skip

    async def url(self) -> str:
        with anyio.fail_after(600):
            while not (m := re.search(r"listening on (\S+)", self.log.read_text())):
                if self.proc.poll() is not None:
                    raise RuntimeError(self.log.read_text())
                await anyio.sleep(0.02)
        return m.group(1)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


async def routable(c: Any, query: str, server: str, present: bool) -> None:
    """Until find_tools returns (``present``) or no longer returns a tool of ``server``."""
    with anyio.fail_after(300):
        while True:
            r = await c.call_tool("find_tools", {"query": query, "k": 10})
            names = [x["name"] for x in json.loads(r.content[0].text)["candidates"]]
            if any(n.startswith(f"{server}__") for n in names) == present:
                return
            await anyio.sleep(0.01)


REINDEXED = re.compile(r"config reloaded in ([\d.]+) s: (\d+) of (\d+) tools re-indexed, (\d+)")


async def measure(catalog: Path, rounds: int) -> dict[str, Any]:
    from mcp import Client

    data = json.loads(catalog.read_text())
    ids = [s["id"] for s in data["servers"]]
    added = data["servers"][-1]
    query = f"{added['tools'][0]['name']}: {added['tools'][0]['description']}"
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="toolroute-reload-") as tmp:
        d = Path(tmp)
        config = d / "servers.json"
        (d / "toolroute.toml").write_text(f"[toolroute]\nstore = {json.dumps(str(d / 'store'))}\n")
        write_servers(config, catalog, ids[:-1])
        gw = Serve(config, d / "serve.err")
        try:
            async with Client(await gw.url()) as c:
                await routable(c, query, ids[0], True)  # up and indexed
                for i in range(rounds):
                    start = time.perf_counter()
                    write_servers(config, catalog, ids)
                    await routable(c, query, added["id"], True)
                    add_s = time.perf_counter() - start
                    start = time.perf_counter()
                    write_servers(config, catalog, ids[:-1])
                    await routable(c, query, added["id"], False)
                    remove_s = time.perf_counter() - start
                    rows.append({"round": i + 1, "add_s": add_s, "remove_s": remove_s})
        finally:
            gw.stop()
        reloads = REINDEXED.findall((d / "serve.err").read_text())
        pairs = list(zip(reloads[::2], reloads[1::2], strict=False))
        for row, (add, remove) in zip(rows, pairs, strict=False):
            row["reindexed"], row["total"], row["embedded"] = int(add[1]), int(add[2]), int(add[3])
            row["gateway_add_s"], row["gateway_remove_s"] = float(add[0]), float(remove[0])
        # baseline: a restart over the full config, store and embedding cache warm
        write_servers(config, catalog, ids)
        gw = Serve(config, d / "restart.err")
        try:
            async with Client(await gw.url()) as c:
                await routable(c, query, added["id"], True)
                restart_s = time.perf_counter() - gw.started
        finally:
            gw.stop()
    return {
        "catalog": str(catalog.relative_to(SHARED) if catalog.is_relative_to(SHARED) else catalog),
        "servers": len(ids),
        "tools": sum(len(s["tools"]) for s in data["servers"]),
        "added_tools": len(added["tools"]),
        "rounds": rows,
        "restart_s": restart_s,
    }


def table(r: dict[str, Any]) -> str:
    lines = [
        "# Live reconfiguration (benchmarks/reload.py)",
        "",
        f"{r['servers']} real stdio servers from `{r['catalog']}` ({r['tools']} tools); each round "
        f"adds the last server ({r['added_tools']} tools) to servers.json, then removes it. "
        "Times are from the file write to the first find_tools (SDK client, HTTP) that returns "
        "(or no longer returns) one of its tools; *gateway* is the reload as the gateway logs "
        "it (the new server's start, listing, re-index and swap).",
        "",
        "| round | add → routable (s) | gateway add (s) | tools re-indexed / total | texts "
        "embedded | remove → gone (s) | gateway remove (s) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {x['round']} | {x['add_s']:.2f} | {x.get('gateway_add_s', float('nan')):.2f} | "
        f"{x.get('reindexed', '?')} / {x.get('total', '?')} | {x.get('embedded', '?')} | "
        f"{x['remove_s']:.2f} | {x.get('gateway_remove_s', float('nan')):.2f} |"
        for x in r["rounds"]
    ]
    adds = sorted(x["add_s"] for x in r["rounds"])
    median = adds[len(adds) // 2]
    lines += [
        "",
        f"Baseline, same run: a restart over the full config (warm store) is routable after "
        f"{r['restart_s']:.2f} s; the median add above is {median:.2f} s, "
        f"{median / r['restart_s']:.2f}x of it.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--catalog", type=Path, default=CATALOG)
    p.add_argument("--serve", help=argparse.SUPPRESS)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--out", type=Path)
    args = p.parse_args()
    if args.serve:
        serve(args.catalog, args.serve)
        return
    result = anyio.run(measure, args.catalog, args.rounds)
    text = table(result)
    print(text)
    if args.out:
        args.out.write_text(text)
        args.out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
