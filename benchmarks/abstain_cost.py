"""What the abstention check adds to a route: ``default`` with abstention off and on, the two
interleaved query by query in one process (so a busy machine slows both alike).

    python -m benchmarks.abstain_cost [--sets union,sealtools] [--queries 100] [--store DIR]
        [--out benchmarks/results/abstain_cost.md]

Per set: p50 and p95 of ``Router.scores`` in ms for each, over the set's in-scope queries and
its out-of-scope requests (the first ``--queries`` of each), warm.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
# ../shared beside the repo; TOOLROUTE_SHARED names it from a checkout elsewhere
SHARED = Path(os.environ.get("TOOLROUTE_SHARED", REPO.parent / "shared")) / "benchmarks"
SETS = ("livemcpbench", "mcpbench", "tool_attention", "sealtools", "metatool", "union")


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sets", default="union,sealtools")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--store", type=Path, default=REPO / ".toolroute" / "bench-store")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    names = args.sets.split(",")
    if not SHARED.is_dir() or any(n not in SETS for n in names):
        print(f"error: sets are {', '.join(SETS)} under {SHARED}", file=sys.stderr)
        return 2

    from toolroute.embed.onnx import OnnxEmbedder
    from toolroute.router import Router

    embedder = OnnxEmbedder()
    lines = [
        f"`python -m benchmarks.abstain_cost {' '.join(sys.argv[1:])}` (MiniLM int8, "
        "interleaved, warm)",
        "",
        "| set | tools | requests | off p50 ms | on p50 ms | off p95 ms | on p95 ms |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name in names:
        queries = (
            REPO / "benchmarks" / "union_queries.jsonl"
            if name == "union"
            else SHARED / name / "queries.jsonl"
        )
        texts = [json.loads(x)["query"] for x in queries.read_text().splitlines()][: args.queries]
        oos = REPO / "benchmarks" / "out_of_scope" / f"{name}.jsonl"
        texts += [json.loads(x)["query"] for x in oos.read_text().splitlines()][: args.queries]
        with Router(SHARED / name / "catalog.json", store=args.store, embedder=embedder) as r:
            r.index()
            on, off = r.params, replace(r.params, abstain="off")
            r.scores(texts[0], "default")  # warm: model sessions, the no-tool vectors
            times: dict[str, list[float]] = {"off": [], "on": []}
            for i, text in enumerate(texts):
                pair = [("off", off), ("on", on)]
                for mode, params in pair if i % 2 else pair[::-1]:  # each goes first half the time
                    r.params = params
                    t0 = time.perf_counter()
                    r.scores(text, "default")
                    times[mode].append((time.perf_counter() - t0) * 1000)
            r.params = on
            n = r.built.size

        def pct(mode: str, q: int, times: dict[str, list[float]] = times) -> str:
            return f"{float(np.percentile(times[mode], q)):.1f}"

        lines.append(
            f"| {name} | {n} | {len(texts)} | {pct('off', 50)} | {pct('on', 50)} "
            f"| {pct('off', 95)} | {pct('on', 95)} |"
        )
        print(f"{name}: done", file=sys.stderr)
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
