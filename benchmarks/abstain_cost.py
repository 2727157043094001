"""What the abstention check adds to a route: ``default`` with abstention off and on, the two
interleaved query by query in one process (so a busy machine slows both alike), and the check
alone, here and in another source tree.

    python -m benchmarks.abstain_cost [--sets union,sealtools] [--queries 100] [--store DIR]
        [--compare-src DIR] [--rounds 3] [--out benchmarks/results/abstain_cost.md]

Per set: p50 and p95 of ``Router.scores`` in ms with abstention off and on, over the set's
in-scope queries and its out-of-scope requests (the first ``--queries`` of each), warm; and
the p50 and p95 of the check itself (``route.abstain.decide`` on the strategy's scores, after
the strategy ran on the same query context, as in a route) in µs.

``--compare-src DIR`` (a worktree of an earlier commit: ``git worktree add --detach DIR
COMMIT``) times the check of that tree's code too: this script runs once per tree in a child
process, alternating trees for ``--rounds`` rounds so that machine noise hits both alike, and
reports each tree's median over its rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._report import write_report

REPO = Path(__file__).resolve().parents[1]
# ../shared beside the repo; TOOLROUTE_SHARED names it from a checkout elsewhere
SHARED = Path(os.environ.get("TOOLROUTE_SHARED", REPO.parent / "shared")) / "benchmarks"
SETS = ("livemcpbench", "mcpbench", "tool_attention", "sealtools", "metatool", "union")


def requests(name: str, n: int) -> list[str]:
    queries = (
        REPO / "benchmarks" / "union_queries.jsonl"
        if name == "union"
        else SHARED / name / "queries.jsonl"
    )
    texts = [json.loads(x)["query"] for x in queries.read_text().splitlines()][:n]
    oos = REPO / "benchmarks" / "out_of_scope" / f"{name}.jsonl"
    return texts + [json.loads(x)["query"] for x in oos.read_text().splitlines()][:n]


def measure(names: list[str], n: int, store: Path) -> dict[str, dict[str, Any]]:
    """Per set: route times off and on (ms) and the check's own times (µs)."""
    from threadpoolctl import ThreadpoolController

    from toolroute.embed.onnx import OnnxEmbedder
    from toolroute.route.abstain import decide
    from toolroute.route.strategy import resolve_strategy
    from toolroute.router import Router

    blas = ThreadpoolController()
    embedder = OnnxEmbedder()
    strat = resolve_strategy("default")
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        texts = requests(name, n)
        with Router(SHARED / name / "catalog.json", store=store, embedder=embedder) as r:
            r.index()
            ix = r.built
            on, off = r.params, replace(r.params, abstain="off")
            r.scores(texts[0], "default")  # warm: model sessions, the no-tool vectors
            times: dict[str, list[float]] = {"off": [], "on": [], "check": []}
            for i, text in enumerate(texts):
                pair = [("off", off), ("on", on)]
                for mode, params in pair if i % 2 else pair[::-1]:  # each goes first half the time
                    r.params = params
                    t0 = time.perf_counter()
                    r.scores(text, "default")
                    times[mode].append((time.perf_counter() - t0) * 1000)
                r.params = off
                ctx = replace(
                    r.query_context(text, strat.embeds),
                    embed=lambda texts: r.embedder.embed(texts),
                )
                with blas.limit(limits=1, user_api="blas"):  # as the router runs both
                    scores = strat.score(ix, ctx, r.params)
                    decide(ix, ctx, scores, "default")  # warm this query's memos
                    t0 = time.perf_counter()
                    decide(ix, ctx, scores, "default")
                    times["check"].append((time.perf_counter() - t0) * 1e6)
            r.params = on
            out[name] = {"tools": ix.size, "requests": len(texts), "times": times}
        print(f"{name}: done", file=sys.stderr)
    return out


def pct(values: list[float], q: int) -> float:
    return float(np.percentile(values, q))


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sets", default="union,sealtools")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--store", type=Path, default=REPO / ".toolroute" / "bench-store")
    ap.add_argument("--compare-src", type=Path, default=None)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    names = args.sets.split(",")
    if not SHARED.is_dir() or any(n not in SETS for n in names):
        print(f"error: sets are {', '.join(SETS)} under {SHARED}", file=sys.stderr)
        return 2
    if args.child:
        print(json.dumps(measure(names, args.queries, args.store)))
        return 0

    trees = {"this tree": REPO}
    if args.compare_src is not None:
        trees[f"{args.compare_src.name} (--compare-src)"] = args.compare_src
    runs: dict[str, list[dict[str, Any]]] = {t: [] for t in trees}
    for _ in range(max(1, args.rounds if args.compare_src else 1)):
        for tree, src in trees.items():
            env = {**os.environ, "PYTHONPATH": str(src / "src")}
            child = [sys.executable, "-m", "benchmarks.abstain_cost", "--child"]
            child += ["--sets", args.sets, "--queries", str(args.queries)]
            child += ["--store", str(args.store)]
            done = subprocess.run(child, env=env, cwd=REPO, capture_output=True, text=True)
            if done.returncode:
                print(done.stderr[-2000:], file=sys.stderr)
                return 2
            runs[tree].append(json.loads(done.stdout.splitlines()[-1]))
    lines = [
        f"`python -m benchmarks.abstain_cost {' '.join(sys.argv[1:])}` (MiniLM int8, warm; "
        "route times interleaved off/on in one process; each tree's median over its rounds)",
        "",
        "| tree | set | tools | requests | off p50 ms | on p50 ms | off p95 ms | on p95 ms "
        "| check p50 µs | check p95 µs |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for tree, rounds in runs.items():
        for name in names:

            def med(mode: str, q: int, name: str = name, rounds: Any = rounds) -> float:
                return float(np.median([pct(r[name]["times"][mode], q) for r in rounds]))

            first = rounds[0][name]
            lines.append(
                f"| {tree} | {name} | {first['tools']} | {first['requests']} "
                f"| {med('off', 50):.1f} | {med('on', 50):.1f} | {med('off', 95):.1f} "
                f"| {med('on', 95):.1f} | {med('check', 50):.0f} | {med('check', 95):.0f} |"
            )
    text = "\n".join(lines) + "\n"
    write_report(text, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
