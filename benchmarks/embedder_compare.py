"""Today's embedder against a fine-tuned one, on every set, in one run, with paired intervals.

    python -m benchmarks.embedder_compare --model .toolroute/embedder-onnx [--sets a,b]
        [--steps 100] [--exact 100] [--abstain default] [--tuned-abstain FILE] [--store DIR]
        [--out benchmarks/results/embedder_compare.md] [--json FILE]

``--model`` is a folder as ``TOOLROUTE_EMBED_MODEL`` takes it (model.onnx, tokenizer.json,
model.onnx.sha256; benchmarks/export_embedder.py writes it). Each set is indexed under both
models (vectors cached in the store under each model's own id) and answers the same cases:
recall_suite's views (whole requests, oracle and clause steps, exact names; the planner's steps
come from today's model for both). ``S@tuned`` is strategy ``S`` over the fine-tuned model,
compared with ``S`` over today's. Then the out-of-scope requests of benchmarks/out_of_scope (the
set's own file, and union_test for the union): the share each answers with a tool; and the
in-scope requests each arm refused ("no tool fits": no tool at all).

The abstention model is the shipped one in both arms, which applies only over the model it was
fitted on (today's); ``--tuned-abstain FILE`` gives the fine-tuned arm its own
(``benchmarks.abstain_train --write-model --model-out DIR`` over the fine-tuned vectors).

No set here was trained on (benchmarks/train_data.py reads ../shared/benchmarks only to leave
its tools and requests out).
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
from benchmarks._report import missing, write_report

REPO = rs.REPO
OOS = REPO / "benchmarks" / "out_of_scope"


def _answered(router: Any, strategy: str, path: Path) -> np.ndarray:
    """Per out-of-scope request of ``path``: 1.0 where it got a tool."""
    from toolroute.router import top_k

    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return np.array([bool(top_k(router.scores(r["query"], strategy), 10)) for r in rows], float)


def _shares(per: dict[str, np.ndarray], names: list[str]) -> str:
    """Each arm's share (count/n), then each tuned arm against its base: the paired bootstrap
    95 % interval of the difference."""
    from toolroute.bench.paired import paired_bootstrap

    cells = [f"{per[n].mean():.3f} ({int(per[n].sum())}/{per[n].size})" for n in names]
    for n in names:
        if n.endswith("@tuned"):
            iv = paired_bootstrap(per[n], per[n.removesuffix("@tuned")])
            word = "more" if iv.low > 0 else "fewer" if iv.high < 0 else "tie"
            cells.append(f"{iv} {word}")
    return " | ".join(cells)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--sets", default=",".join(rs.SETS))
    ap.add_argument("--strategy", action="append", default=None)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--exact", type=int, default=100)
    ap.add_argument("--abstain", choices=("default", "strict", "off"), default="default")
    ap.add_argument(
        "--tuned-abstain",
        type=Path,
        default=None,
        help="the fine-tuned arm's abstention model (an abstain.json fitted on its vectors)",
    )
    ap.add_argument("--store", type=Path, default=REPO / ".toolroute" / "bench-store")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    if missing(rs.SHARED):
        return 2

    from toolroute.catalog import load_queries
    from toolroute.embed.onnx import OnnxEmbedder
    from toolroute.route.abstain_model import load_model
    from toolroute.route.strategy import RouteParams
    from toolroute.router import Router

    base = OnnxEmbedder()
    from benchmarks.train_adapter import fast_model

    tuned = fast_model(args.model, args.store)
    tuned_abstain = load_model(args.tuned_abstain) if args.tuned_abstain else None
    if tuned_abstain is not None and tuned_abstain.embedder not in ("", tuned.model_id):
        print(
            f"error: {args.tuned_abstain} was fitted on {tuned_abstain.embedder}, "
            f"not on {tuned.model_id}",
            file=sys.stderr,
        )
        return 2
    strategies = args.strategy or ["default", "dense"]
    names = [n for s in strategies for n in (s, f"{s}@tuned")]
    for s in strategies:
        rs.DEVELOPED_ON[f"{s}@tuned"] = ()  # trained on none of these sets
    results: dict[str, dict[str, dict[str, Any]]] = {}
    oos: list[str] = []
    refusals: list[str] = []
    t_start = time.perf_counter()
    for name in args.sets.split(","):
        cat, qf = rs.SETS[name]
        files = [OOS / f"{name}.jsonl"] + ([OOS / "union_test.jsonl"] if name == "union" else [])
        rates: dict[str, dict[str, np.ndarray]] = {}
        cases = None
        for model, suffix in ((base, ""), (tuned, "@tuned")):
            own = tuned_abstain if suffix else None
            params = RouteParams(abstain=args.abstain, abstain_model=own)
            with Router(cat, store=args.store, embedder=model, params=params) as r:
                r.index()
                if cases is None:
                    queries = load_queries(qf, r.catalog)
                    cases = rs.suite_cases(r.catalog, queries, base.embed, args.steps, args.exact)
                got = rs.run_set(r, cases, strategies)
                for view, per in got.items():
                    for s, v in per.items():
                        results.setdefault(name, {}).setdefault(view, {})[s + suffix] = v
                for f in files:
                    for s in strategies:
                        rates.setdefault(f.stem, {})[s + suffix] = _answered(r, s, f)
        whole = results[name]["whole"]
        refusals.append(f"| {name} | {_shares({n: whole[n]['refused'] for n in names}, names)} |")
        for stem, per in rates.items():
            oos.append(f"| {name} | {stem} | {_shares(per, names)} |")
        print(f"{name}: done at {time.perf_counter() - t_start:.0f} s", file=sys.stderr, flush=True)
    blocks = []
    summary: dict[str, Any] = {}
    for s in strategies:
        table, summ = rs.render(results, [s, f"{s}@tuned"], s)
        blocks.append(f"## {s} over today's model vs over the fine-tuned one\n\n{table}")
        summary[s] = summ
    deltas = [f"Δ {n} [95 % CI]" for n in names if n.endswith("@tuned")]
    oos_table = (
        "## out-of-scope requests answered with a tool (lower is better)\n\n"
        f"| set | requests | {' | '.join(names + deltas)} |\n"
        f"|---|---|{'---:|' * len(names)}{'---|' * len(deltas)}\n" + "\n".join(oos) + "\n"
    )
    refused_table = (
        "## in-scope requests refused (no tool at all; lower is better)\n\n"
        f"| set | {' | '.join(names + deltas)} |\n"
        f"|---|{'---:|' * len(names)}{'---|' * len(deltas)}\n" + "\n".join(refusals) + "\n"
    )
    summary["out_of_scope"] = oos
    summary["refused"] = refusals
    took = time.perf_counter() - t_start
    head = (
        f"`python -m benchmarks.embedder_compare {' '.join(sys.argv[1:])}` ({took:.0f} s, "
        f"no LLM, abstain {args.abstain}; fine-tuned model {tuned.model_id}, its abstention "
        f"{'fitted on its vectors' if tuned_abstain else 'the shipped one'})\n\n"
    )
    text = head + "\n".join(blocks) + "\n" + oos_table + "\n" + refused_table
    write_report(text, args.out, args.json, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
