"""The abstention check's ``flat1`` over the strategy's pool against over the whole catalog.

    python -m benchmarks.abstain_pool [--sets union,livemcpbench,sealtools]
        [--out benchmarks/results/abstain_pool.md]

``flat1`` (route/abstain_signals.py) is the best cosine of a request to a tool's plain text.
Taken over the whole catalog it cost one more matrix-vector product per request, growing with
the catalog; it is now taken over the strategy's pool (its 256 best tools). This counts, for
every in-scope and out-of-scope request of each set under ``default``, whether the two agree.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from benchmarks import recall_suite as rs
from toolroute.catalog.loader import load_queries
from toolroute.embed.onnx import OnnxEmbedder
from toolroute.route.abstain_signals import Evidence
from toolroute.route.strategy import resolve_strategy
from toolroute.router import Router


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", default="union,livemcpbench,sealtools")
    ap.add_argument("--store", type=Path, default=rs.REPO / ".toolroute" / "bench-store")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    emb = OnnxEmbedder()
    lines = [
        f"`python -m benchmarks.abstain_pool {' '.join(sys.argv[1:])}`",
        "",
        "| set | tools | requests | flat1 equal | largest difference |",
        "|---|---:|---:|---:|---:|",
    ]
    strat = resolve_strategy("default")
    for name in args.sets.split(","):
        cat, qf = rs.SETS[name]
        texts = [q.text for q in load_queries(qf)]
        oos = rs.REPO / "benchmarks" / "out_of_scope" / f"{name}.jsonl"
        if oos.exists():
            texts += [json.loads(x)["query"] for x in oos.read_text().splitlines() if x.strip()]
        with Router(cat, store=args.store, embedder=emb) as r:
            r.index()
            ix = r.built
            diffs = []
            for t in texts:
                ctx = replace(r.query_context(t, True), embed=emb.embed, notes={})
                e = Evidence(ix, ctx, strat.score(ix, ctx, r.params), None)
                whole = float((ix.flat_vectors @ ctx.vector).max())
                pool = float((ix.flat_vectors[e.pool] @ ctx.vector).max()) if e.pool.size else 0
                diffs.append(whole - pool)
        d = np.abs(np.array(diffs))
        lines.append(
            f"| {name} | {ix.size} | {len(texts)} | {int((d < 1e-6).sum())} | {d.max():.4f} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
