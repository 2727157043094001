"""Scale benchmark: index build rate, memory and route latency at 10k and 100k tools.

Catalogs are built from shared/benchmarks/union (904 tools) as namespaced copies with light,
seeded perturbation: each copy gets a namespace prefix on its server ids, and each tool
description one of four variants (as is, one word dropped, two words swapped, a suffix). Tool
and server names stay real, so copies compete with each other as mirrors of a server would.

    python benchmarks/scale.py --sizes 10000 100000 [--store DIR] [--json]

Reports per size: tools, build seconds (cold: texts not in the cache are embedded; the cache
is then reused by the larger size, as a live deployment would), texts embedded, tools/s, peak
RSS, dense matrix bytes, and route latency p50/p95 per strategy over the union queries
(warm, query embedding included). Latency is measured, never asserted.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "benchmarks"
NAMESPACES = [
    "acme",
    "globex",
    "initech",
    "umbrella",
    "hooli",
    "stark",
    "wayne",
    "wonka",
    "tyrell",
    "cyberdyne",
    "aperture",
    "soylent",
    "vandelay",
    "dunder",
    "pied",
    "oscorp",
    "gringotts",
    "monarch",
    "nakatomi",
    "weyland",
]


def perturb(text: str, variant: int, seed: str) -> str:
    """Variant 0 is the text as is; 1 drops a word, 2 swaps two, 3 adds a suffix.

    The edit position depends only on (seed, variant), so a tool has at most four distinct
    descriptions however many copies are made: the embedding work stays bounded (~4x the
    union catalog) and the 100k build measures the index, not just the model.
    """
    words = text.split()
    rng = random.Random(f"{seed}/{variant}")
    if variant == 1 and len(words) > 4:
        del words[rng.randrange(len(words))]
    elif variant == 2 and len(words) > 4:
        i = rng.randrange(len(words) - 1)
        words[i], words[i + 1] = words[i + 1], words[i]
    elif variant == 3:
        words.append("(mirror)")
    return " ".join(words)


def make_catalog(size: int, seed: int = 7) -> dict[str, Any]:
    base = json.loads((SHARED / "union" / "catalog.json").read_text(encoding="utf-8"))
    rng = random.Random(seed)
    servers: list[dict[str, Any]] = []
    count, copy = 0, 0
    while count < size:
        ns = NAMESPACES[copy % len(NAMESPACES)]
        for s in base["servers"]:
            if count >= size:
                break
            tools = [
                {
                    **t,
                    "description": perturb(
                        t.get("description") or "", rng.randrange(4), f"{s['id']}/{t['name']}"
                    ),
                }
                for t in s["tools"][: size - count]
            ]
            servers.append(
                {
                    "id": f"{ns}{copy}/{s['id']}",
                    "name": s.get("name") or s["id"],
                    "description": s.get("description") or "",
                    "tools": tools,
                }
            )
            count += len(tools)
        copy += 1
    return {"servers": servers}


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument(
        "--strategies",
        nargs="+",
        default=["default", "hybrid", "dense", "bm25", "cascade", "baseline-dense"],
    )
    ap.add_argument(
        "--store", type=Path, default=None, help="store dir (reuse it to skip embedding)"
    )
    ap.add_argument("--queries", type=Path, default=REPO / "benchmarks" / "union_queries.jsonl")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not (SHARED / "union" / "catalog.json").is_file():
        print(f"error: {SHARED}/union/catalog.json not found (../shared missing)", file=sys.stderr)
        return 2

    from toolroute.catalog import load_queries
    from toolroute.router import Router, top_k

    texts = [q.text for q in load_queries(args.queries)]
    store = args.store or Path(tempfile.mkdtemp(prefix="toolroute-scale-"))
    results: dict[str, Any] = {}
    for size in args.sizes:
        work = Path(tempfile.mkdtemp(prefix=f"scale-{size}-"))
        cat_path = work / "catalog.json"
        cat_path.write_text(json.dumps(make_catalog(size)), encoding="utf-8")
        with Router(cat_path, store=store) as router:
            t0 = time.perf_counter()
            report = router.index(
                progress=lambda d, t, n=size: print(
                    f"\r  {n}: embedded {d}/{t}", end="", file=sys.stderr
                )
            )
            build_s = time.perf_counter() - t0
            print(file=sys.stderr)
            ix = router.built
            row: dict[str, Any] = {
                "tools": ix.size,
                "build_s": round(build_s, 2),
                "embedded": report.embedded,
                "tools_per_s": round(ix.size / build_s, 1),
                "peak_rss_mb": round(rss_mb(), 1),
                "dense_mb": round(
                    (ix.tool_vectors.nbytes + ix.flat_vectors.nbytes + ix.server_vectors.nbytes)
                    / 2**20,
                    1,
                ),
                "latency_ms": {},
            }
            lat = []
            for q in texts:  # the query embedding alone: the floor under every dense strategy
                t = time.perf_counter()
                router.embedder.embed([q])
                lat.append((time.perf_counter() - t) * 1000)
            row["embed_ms"] = {
                "p50": round(float(np.percentile(lat, 50)), 2),
                "p95": round(float(np.percentile(lat, 95)), 2),
            }
            for strat in args.strategies:
                router.route(texts[0], k=10, strategy=strat)
                lat = []
                for q in texts:
                    t = time.perf_counter()
                    top_k(router.scores(q, strat), 10)
                    lat.append((time.perf_counter() - t) * 1000)
                row["latency_ms"][strat] = {
                    "p50": round(float(np.percentile(lat, 50)), 2),
                    "p95": round(float(np.percentile(lat, 95)), 2),
                }
            results[str(size)] = row
            print(f"  {size}: {json.dumps(row)}", file=sys.stderr)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(
            "| tools | build s | embedded | tools/s | peak RSS MB | dense MB "
            "| query embed p50/p95 ms | "
            + " | ".join(f"{s} p50/p95 ms" for s in args.strategies)
            + " |"
        )
        print("|" + "---:|" * (7 + len(args.strategies)))
        for r in results.values():
            lat = " | ".join(
                f"{r['latency_ms'][s]['p50']:.1f} / {r['latency_ms'][s]['p95']:.1f}"
                for s in args.strategies
            )
            print(
                f"| {r['tools']} | {r['build_s']} | {r['embedded']} | {r['tools_per_s']} | "
                f"{r['peak_rss_mb']} | {r['dense_mb']} | "
                f"{r['embed_ms']['p50']:.1f} / {r['embed_ms']['p95']:.1f} | {lat} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
