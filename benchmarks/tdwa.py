"""Tool documents: concat vs TDWA presets (seed 001 §5.3), and what each component buys.

    python -m benchmarks.tdwa [--store DIR] [--out benchmarks/results/tdwa.md]

For every dataset (livemcpbench, mcpbench, union with our own queries) and every document
config, runs the `dense` strategy (pure document quality) and `default`, and prints one
markdown table of R@5 / R@10 / MRR / nDCG@10.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks._report import missing, write_report
from benchmarks.recall_suite import REPO, SETS, SHARED

DATASETS = {name: SETS[name] for name in ("livemcpbench", "mcpbench")}
DATASETS["union (ours)"] = SETS["union"]


def configs() -> dict[str, object]:
    from toolroute.index.tdwa import PRESETS, DocConfig

    return {
        "concat (flat text)": PRESETS["concat"],
        "concat + questions": DocConfig("concat-q", {"concat": 0.6, "questions": 0.4}),
        "TDWA var-1": PRESETS["var-1"],
        "TDWA var-2": PRESETS["var-2"],
        "toolroute (default)": PRESETS["toolroute"],
        "toolroute - questions": DocConfig("no-q", {"concat": 0.5, "server": 0.25, "name": 0.25}),
        "toolroute - server": DocConfig(
            "no-server", {"concat": 0.5, "name": 0.25, "questions": 0.25}
        ),
        "toolroute - name": DocConfig(
            "no-name", {"concat": 0.5, "server": 0.25, "questions": 0.25}
        ),
    }


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--store", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if missing(SHARED):
        return 2

    from toolroute.bench.runner import bench
    from toolroute.catalog import load_queries
    from toolroute.embed.onnx import OnnxEmbedder
    from toolroute.router import Router

    embedder = OnnxEmbedder()
    lines = [
        "| dataset | documents | dense R@5 | dense R@10 | dense MRR | dense nDCG@10 "
        "| default R@5 | default MRR | default nDCG@10 |",
        "|---|---|" + "---:|" * 7,
    ]
    for dname, (cat, qf) in DATASETS.items():
        for cname, cfg in configs().items():
            with Router(
                cat,
                store=args.store or REPO / ".toolroute" / "bench-store",
                embedder=embedder,
                documents=cfg,
            ) as r:  # type: ignore[arg-type]
                r.index()
                res = bench(r, load_queries(qf, r.catalog), ["dense", "default"])
            d, m = res["dense"], res["default"]
            lines.append(
                f"| {dname} | {cname} | {d['recall@5']:.3f} | {d['recall@10']:.3f} | "
                f"{d['mrr']:.3f} | {d['ndcg@10']:.3f} | {m['recall@5']:.3f} | {m['mrr']:.3f} | "
                f"{m['ndcg@10']:.3f} |"
            )
            print(lines[-1], file=sys.stderr)
    table = "\n".join(lines) + "\n"
    write_report(table, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
