"""The fit models against today's "no tool fits" check, on the big catalogs' requests.

    python -m benchmarks.fit_compare --model .toolroute/adapter-onnx --fit .toolroute/fit.npz
        [--sets union,livemcpbench,mcpbench,metatool] [--store DIR] [--out FILE.md]
    python -m benchmarks.fit_compare --cross .toolroute/cross-onnx [--cross-top 5] [--sets ...]

Per set, in one run: ``default`` over today's model with its abstention (``abstain default``)
against, with ``--fit``, ``default`` over the fine-tuned model with the abstention off and the
fit head (benchmarks/train_fit.py) deciding over its top 10; with ``--cross``, the cross-encoder
(benchmarks/train_cross.py, run by benchmarks/cross_fit.py) scoring ``default``'s top
``--cross-top``: reordering them by ``logit - w * position`` with today's abstention kept
(``cross rerank``; ``w`` calibrated on dev, or ``--cross-rank-weight``), and deciding "no tool
fits" alone, the router's order kept, with the abstention off (``cross decides``: refused when
no candidate's logit reaches its threshold).
Reported: servable requests refused (the set's queries), R@5 and MRR of what is answered (a
refusal counts as a miss), the out-of-scope requests of benchmarks/out_of_scope answered with a
tool (the set's file, and union_test for the union), and the fit stage's own p50 per request
(over every pass it made so far in the run: the cross-encoder's arms share their passes).
Paired intervals on R@5 and MRR against the first arm.
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
    from toolroute.route.exact import names_a_tool
    from toolroute.router import top_k

    ix = router.built
    order = top_k(router.scores(text, "default"), 10)
    # a request naming a tool is never refused (as the abstention check: router.scores)
    if fit is not None and order and not names_a_tool(ix, text):
        order = fit.keep(text, [ix.tools[j] for j in order], order)
    return [ix.keys[j] for j in order]


def _arms(args: argparse.Namespace) -> list[tuple[str, Any, str, Any]]:
    """(label, embedder, abstain, fit stage) per arm; the first is the baseline."""
    from toolroute.embed.onnx import OnnxEmbedder

    today = OnnxEmbedder()
    arms: list[tuple[str, Any, str, Any]] = [("default (abstain default)", today, "default", None)]
    if args.fit is not None:
        from benchmarks.train_adapter import fast_model
        from benchmarks.train_fit import FitModel

        if args.model is None:
            raise SystemExit("--fit needs --model (the embedder its head was trained over)")
        tuned = fast_model(args.model, args.store)
        arms.append(("default@tuned + fit", tuned, "off", FitModel.load(args.fit, tuned)))
    if args.cross is not None:
        from benchmarks.cross_fit import CrossFit

        cross = CrossFit(args.cross, top=args.cross_top, max_tokens=args.cross_tokens)
        n = args.cross_top
        rerank = cross.mode(True, False, args.cross_rank_weight)
        label = f"cross rerank top {n}, w {rerank.rank_weight:g} (abstain default)"
        arms += [
            (label, today, "default", rerank),
            (f"cross decides top {n} (abstain off)", today, "off", cross.mode(False, True)),
        ]
    return arms


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", type=Path, default=None, help="the fine-tuned embedder (--fit)")
    ap.add_argument("--fit", type=Path, default=None, help="the fit head (train_fit.py)")
    ap.add_argument("--cross", type=Path, default=None, help="the cross-encoder's ONNX folder")
    ap.add_argument("--cross-top", type=int, default=5, help="candidates the cross-encoder scores")
    ap.add_argument("--cross-tokens", type=int, default=None, help="cut pairs shorter than trained")
    ap.add_argument(
        "--cross-rank-weight",
        type=float,
        default=None,
        help="the router's order's weight in the rerank (logit - w * position); else fit.json's",
    )
    ap.add_argument("--sets", default="union,livemcpbench,mcpbench,metatool")
    ap.add_argument("--store", type=Path, default=rs.REPO / ".toolroute" / "bench-store")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if missing(rs.SHARED):
        return 2

    from toolroute.bench.metrics import query_metrics
    from toolroute.bench.paired import paired_bootstrap
    from toolroute.catalog import load_queries
    from toolroute.route.strategy import RouteParams
    from toolroute.router import Router

    arms = _arms(args)
    lines = [
        f"`python -m benchmarks.fit_compare {' '.join(sys.argv[1:])}`",
        "",
        "| set | arm | servable refused | R@5 | MRR | ΔR@5 [95 % CI] | ΔMRR [95 % CI] "
        "| out-of-scope answered | fit p50 ms |",
        "|---|---|---:|---:|---:|---|---|---|---:|",
    ]
    examples: list[str] = []
    lost: list[str] = []  # the cross-encoder's rerank: requests whose tool it moved off the top
    t_start = time.perf_counter()
    for name in args.sets.split(","):
        cat, qf = rs.SETS[name]
        files = [OOS / f"{name}.jsonl"] + ([OOS / "union_test.jsonl"] if name == "union" else [])
        per: dict[str, dict[str, Any]] = {}
        ranks: dict[str, list[list[tuple[str, str]]]] = {}
        for label, emb, abstain, fit in arms:
            with Router(
                cat, store=args.store, embedder=emb, params=RouteParams(abstain=abstain)
            ) as r:
                r.index()
                queries = load_queries(qf, r.catalog)
                r5, mrr, refused = [], [], 0
                last = label == arms[-1][0]
                ranks[label] = []
                for q in queries:
                    ranked = _ranked(r, q.text, fit)
                    ranks[label].append(ranked)
                    refused += not ranked
                    m = query_metrics(ranked, list(q.groups))
                    r5.append(m["recall@5"])
                    mrr.append(m["mrr"])
                    if not ranked and last and fit is not None and len(examples) < 12:
                        examples.append(f"- {name}: refused a servable request: {q.text[:120]!r}")
                oos = {}
                for f in files:
                    rows = [json.loads(x) for x in f.read_text().splitlines() if x.strip()]
                    answered = 0
                    for row in rows:
                        got = _ranked(r, row["query"], fit)
                        answered += bool(got)
                        if got and last and fit is not None and len(examples) < 24:
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
                    "fit_ms": sorted(fit.head_ms)[len(fit.head_ms) // 2]
                    if fit is not None and fit.head_ms
                    else None,
                }
                if label.startswith("cross rerank"):  # what the reordering lost: its top 1
                    base_mrr = per[arms[0][0]]["mrr"]
                    worse = [
                        (q, got)
                        for q, got, b, a in zip(queries, ranks[label], base_mrr, mrr, strict=True)
                        if b == 1.0 and a < 1.0
                    ]
                    lost += [
                        f"- {name}: {q.text[:90]!r}: {sorted(q.groups[0])[0][1]!r} fell behind "
                        f"{got[0][1]!r}"
                        for q, got in worse[:4]
                    ]
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
            ms = "—" if p["fit_ms"] is None else f"{p['fit_ms']:.1f}"
            lines.append(
                f"| {name} | {label} | {p['refused'] / p['n']:.3f} ({p['refused']}/{p['n']}) "
                f"| {p['r5'].mean():.3f} | {p['mrr'].mean():.3f} | {d5} | {dm} | {oos_txt} "
                f"| {ms} |"
            )
        print(f"{name}: done at {time.perf_counter() - t_start:.0f} s", file=sys.stderr, flush=True)
    text = "\n".join(lines) + "\n\nExamples (fit arm):\n\n" + "\n".join(examples) + "\n"
    if lost:
        head = "\nThe rerank moved the right tool off the top (4 a set):\n\n"
        text += head + "\n".join(lost) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
