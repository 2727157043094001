"""``default`` with the shipped abstention model against the model it replaced, and against its
own ranking without abstention (``adaptive``), on every set in one run.

    python -m benchmarks.abstain_compare [--sets a,b] [--store DIR]
        [--before benchmarks/results/abstain/model_before.json]
        [--out benchmarks/results/abstain_compare.md] [--json FILE]

Per set: R@5 and MRR of the whole in-scope requests for ``default`` (shipped model),
``default`` with ``--before`` (the earlier model, through the same code), and ``adaptive``;
the paired bootstrap 95 % intervals (2,000 resamples of the queries, seed 0) of default's
ΔR@5 and ΔMRR against each; the false-positive rate (out-of-scope requests answered with ≥ 1
tool) of both models on the set's ``benchmarks/out_of_scope`` file and, for the union, on
``union_test`` (which neither model was fitted on); p50 ms of a route for each. Every figure
runs through ``Router.scores``, as ``route`` and ``find_tools`` do.

The shipped model was fitted on every set's in-scope and out-of-scope requests, so its FP on
a set's own file is in sample: the held-out figures are ``benchmarks.abstain_train``'s.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._report import write_report
from benchmarks.abstain_train import OOS, REPO, SETS, SHARED, TEST, queries_file

RANKERS = ("default", "before", "adaptive")


def run_set(name: str, store: Path, embedder: Any, before: Any) -> dict[str, Any]:
    from toolroute.bench.paired import per_query_metrics
    from toolroute.catalog import load_queries
    from toolroute.route.abstain_model import shipped_model
    from toolroute.router import Router, top_k

    files = [OOS / f"{name}.jsonl"] + ([OOS / f"{TEST}.jsonl"] if name == "union" else [])
    with Router(SHARED / name / "catalog.json", store=store, embedder=embedder) as r:
        r.index()
        ix = r.built
        base = r.params
        setups = {
            # the model shipped for this embedder (TOOLROUTE_EMBED_MODEL=minilm: plain MiniLM's)
            "default": ("default", replace(base, abstain_model=shipped_model(ix.model_id))),
            "before": ("default", replace(base, abstain_model=before)),
            "adaptive": ("adaptive", base),
        }
        inscope = [(q.text, list(q.groups)) for q in load_queries(queries_file(name))]
        out: dict[str, Any] = {"queries": len(inscope), "rankers": {}}
        for ranker, (strategy, params) in setups.items():
            r.params = params
            lat: list[float] = []

            def rank(text: str, strategy: str = strategy, lat: list[float] = lat) -> list[Any]:
                t0 = time.perf_counter()
                rows = top_k(r.scores(text, strategy), 10)
                lat.append((time.perf_counter() - t0) * 1000)
                return [ix.keys[j] for j in rows]

            rank(inscope[0][0])  # warm
            lat.clear()
            per = per_query_metrics(rank, inscope)
            fp: dict[str, float] = {}
            for f in files:
                texts = [json.loads(x)["query"] for x in f.read_text().splitlines()]
                fp[f.stem] = float(np.mean([bool(rank(t)) for t in texts]))
            out["rankers"][ranker] = {
                "per_query": per,
                "fp": fp,
                "p50_ms": float(np.percentile(lat, 50)),
            }
        r.params = base
    return out


def render(results: dict[str, dict[str, Any]], head: str) -> tuple[str, dict[str, Any]]:
    from toolroute.bench.paired import paired_bootstrap

    lines = [
        head,
        "",
        "`default` = the shipped model; `before` = the model it replaced, through the same code; "
        "`adaptive` = default's ranking with no abstention. Δ = default − the other, paired "
        "bootstrap 95 % interval. FP = out-of-scope requests answered with ≥ 1 tool (the "
        "shipped model's FP on a set's own file is in sample; `union_test` is out of sample "
        "for both).",
        "",
        "| set (queries) | R@5 default / before / adaptive | MRR default / before / adaptive "
        "| ΔR@5 vs before | ΔR@5 vs adaptive | ΔMRR vs adaptive | FP default / before "
        "| p50 ms default / before / adaptive |",
        "|---|---|---|---|---|---|---|---|",
    ]
    summary: dict[str, Any] = {}
    for name, res in results.items():
        rk = res["rankers"]
        r5 = {k: rk[k]["per_query"]["recall@5"] for k in RANKERS}
        mrr = {k: rk[k]["per_query"]["mrr"] for k in RANKERS}
        vs_before = paired_bootstrap(r5["default"], r5["before"])
        vs_adapt = paired_bootstrap(r5["default"], r5["adaptive"])
        mrr_adapt = paired_bootstrap(mrr["default"], mrr["adaptive"])
        fp = "; ".join(
            f"{f}: {rk['default']['fp'][f]:.3f} / {rk['before']['fp'][f]:.3f}"
            for f in rk["default"]["fp"]
        )
        lines.append(
            f"| {name} ({res['queries']}) "
            f"| {' / '.join(f'{r5[k].mean():.3f}' for k in RANKERS)} "
            f"| {' / '.join(f'{mrr[k].mean():.3f}' for k in RANKERS)} "
            f"| {vs_before} {vs_before.verdict} | {vs_adapt} {vs_adapt.verdict} "
            f"| {mrr_adapt} {mrr_adapt.verdict} | {fp} "
            f"| {' / '.join(format(rk[k]['p50_ms'], '.1f') for k in RANKERS)} |"
        )
        summary[name] = {
            "r5": {k: float(v.mean()) for k, v in r5.items()},
            "mrr": {k: float(v.mean()) for k, v in mrr.items()},
            "d_r5_vs_before": [vs_before.diff, vs_before.low, vs_before.high],
            "d_r5_vs_adaptive": [vs_adapt.diff, vs_adapt.low, vs_adapt.high],
            "d_mrr_vs_adaptive": [mrr_adapt.diff, mrr_adapt.low, mrr_adapt.high],
            "fp": {k: rk[k]["fp"] for k in ("default", "before")},
            "p50_ms": {k: rk[k]["p50_ms"] for k in RANKERS},
        }
    return "\n".join(lines) + "\n", summary


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--store", type=Path, default=REPO / ".toolroute" / "bench-store")
    ap.add_argument(
        "--before", type=Path, default=REPO / "benchmarks/results/abstain/model_before.json"
    )
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    names = args.sets.split(",")
    if not SHARED.is_dir() or any(n not in SETS for n in names):
        print(f"error: sets are {', '.join(SETS)} under {SHARED}", file=sys.stderr)
        return 2

    from toolroute.embed.onnx import OnnxEmbedder
    from toolroute.route.abstain_model import load_model

    before = load_model(args.before)
    embedder = OnnxEmbedder()
    t0 = time.perf_counter()
    results = {}
    for name in names:
        results[name] = run_set(name, args.store, embedder, before)
        print(f"{name}: done at {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    head = (
        f"`python -m benchmarks.abstain_compare {' '.join(sys.argv[1:])}` "
        f"({time.perf_counter() - t0:.0f} s, embedder {embedder.model_id}, one process, each "
        "set's rankers back to back)"
    )
    text, summary = render(results, head)
    write_report(text, args.out, args.json, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
