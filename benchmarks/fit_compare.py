"""The fit model against today's "no tool fits" check, on the big catalogs' requests.

    python -m benchmarks.fit_compare --model .toolroute/adapter-onnx --fit .toolroute/fit.npz
        [--sets union,livemcpbench,mcpbench,metatool] [--store DIR] [--out FILE.md]

Per set, in one run: ``default`` over today's model with its abstention (``abstain default``)
against ``default`` over the fine-tuned model with the abstention off and the fit model
(benchmarks/train_fit.py) deciding over its top 10 (refusing when no candidate reaches the
head's threshold, else reordering them by the head's probability). Reported: servable requests
refused (the set's queries), R@5 and MRR of what is answered (a refusal counts as a miss),
and the out-of-scope requests of benchmarks/out_of_scope answered with a tool (the set's file,
and union_test for the union). Paired intervals on R@5 and MRR.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import recall_suite as rs
from benchmarks._report import missing

OOS = rs.REPO / "benchmarks" / "out_of_scope"


def _ranked(router: Any, text: str, fit: Any | None) -> list[tuple[str, str]]:
    from toolroute.router import top_k

    ix = router.built
    order = top_k(router.scores(text, "default"), 10)
    if fit is not None and order:
        order = fit.keep(text, [ix.tools[j] for j in order], order)
    return [ix.keys[j] for j in order]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--fit", type=Path, required=True)
    ap.add_argument("--sets", default="union,livemcpbench,mcpbench,metatool")
    ap.add_argument("--store", type=Path, default=rs.REPO / ".toolroute" / "bench-store")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if missing(rs.SHARED):
        return 2

    from benchmarks.train_adapter import fast_model
    from benchmarks.train_fit import FitModel
    from toolroute.bench.metrics import query_metrics
    from toolroute.bench.paired import paired_bootstrap
    from toolroute.catalog import load_queries
    from toolroute.embed.onnx import OnnxEmbedder
    from toolroute.route.strategy import RouteParams
    from toolroute.router import Router

    tuned = fast_model(args.model, args.store)
    arms = [
        ("default (abstain default)", OnnxEmbedder(), "default", None),
        ("default@tuned + fit", tuned, "off", FitModel.load(args.fit, tuned)),
    ]
    lines = [
        f"`python -m benchmarks.fit_compare {' '.join(sys.argv[1:])}`",
        "",
        "| set | arm | servable refused | R@5 | MRR | ΔR@5 [95 % CI] | ΔMRR [95 % CI] "
        "| out-of-scope answered |",
        "|---|---|---:|---:|---:|---|---|---|",
    ]
    examples: list[str] = []
    t_start = time.perf_counter()
    for name in args.sets.split(","):
        cat, qf = rs.SETS[name]
        files = [OOS / f"{name}.jsonl"] + ([OOS / "union_test.jsonl"] if name == "union" else [])
        per: dict[str, dict[str, Any]] = {}
        for label, emb, abstain, fit in arms:
            with Router(
                cat, store=args.store, embedder=emb, params=RouteParams(abstain=abstain)
            ) as r:
                r.index()
                queries = load_queries(qf, r.catalog)
                r5, mrr, refused = [], [], 0
                for q in queries:
                    ranked = _ranked(r, q.text, fit)
                    refused += not ranked
                    m = query_metrics(ranked, list(q.groups))
                    r5.append(m["recall@5"])
                    mrr.append(m["mrr"])
                    if not ranked and fit is not None and len(examples) < 12:
                        examples.append(f"- {name}: refused a servable request: {q.text[:120]!r}")
                oos = {}
                for f in files:
                    rows = [json.loads(x) for x in f.read_text().splitlines() if x.strip()]
                    answered = 0
                    for row in rows:
                        got = _ranked(r, row["query"], fit)
                        answered += bool(got)
                        if got and fit is not None and len(examples) < 24:
                            examples.append(
                                f"- {name}/{f.stem}: answered {got[0][1]!r} to "
                                f"{row['query'][:100]!r} ({row.get('kind', '')})"
                            )
                    oos[f.stem] = (answered, len(rows))
                per[label] = {
                    "r5": np.array(r5),
                    "mrr": np.array(mrr),
                    "refused": refused,
                    "n": len(queries),
                    "oos": oos,
                }
        base = per[arms[0][0]]
        for label, *_ in arms:
            p = per[label]
            if p is base:
                d5 = dm = "—"
            else:
                i5 = paired_bootstrap(p["r5"], base["r5"])
                im = paired_bootstrap(p["mrr"], base["mrr"])
                d5, dm = f"{i5} {i5.verdict}", f"{im} {im.verdict}"
            oos_txt = "; ".join(f"{k} {a / n:.3f} ({a}/{n})" for k, (a, n) in p["oos"].items())
            lines.append(
                f"| {name} | {label} | {p['refused'] / p['n']:.3f} ({p['refused']}/{p['n']}) "
                f"| {p['r5'].mean():.3f} | {p['mrr'].mean():.3f} | {d5} | {dm} | {oos_txt} |"
            )
        print(f"{name}: done at {time.perf_counter() - t_start:.0f} s", file=sys.stderr, flush=True)
    text = "\n".join(lines) + "\n\nExamples (fit arm):\n\n" + "\n".join(examples) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
