"""Retrieval ideas of issue 14, measured one at a time against ``multi`` (the old default).

    python benchmarks/recall_ideas.py [--store DIR] [--out benchmarks/results/recall_ideas.md]

Every row runs through ``toolroute.bench.runner.bench`` on the three sets (livemcpbench,
mcpbench, the union catalog with our own 60 queries), so recall, MRR and latency are measured
the same way as ``toolroute bench``. Kept ideas are switches of ``RouteParams`` over the
``steps`` strategy; ideas that did not pay are written here as small scoring stages over the
same index, so their figures stay reproducible. No idea reads a query's answers: the priors
come from general English (action verbs, file paths) and the catalog's own structure.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "benchmarks"
DATASETS = {
    "livemcpbench": (
        SHARED / "livemcpbench" / "catalog.json",
        SHARED / "livemcpbench" / "queries.jsonl",
    ),
    "mcpbench": (SHARED / "mcpbench" / "catalog.json", SHARED / "mcpbench" / "queries.jsonl"),
    "union (ours)": (
        SHARED / "union" / "catalog.json",
        REPO / "benchmarks" / "union_queries.jsonl",
    ),
}
METRICS = ("recall@5", "recall@10", "mrr", "ndcg@10")


Row = tuple[str, str, dict[str, Any]]


def _register() -> list[Row]:
    """(row label, strategy, RouteParams overrides) per row; registers the experiment stages."""
    from toolroute.route import strategy as st

    off = {"action_penalty": 0.0, "expand_pool": 0, "destination": False}
    rows: list[Row] = [
        ("multi (old default)", "multi", {}),
        ("multi + action words", "steps", {**off, "action_penalty": 0.07}),
        ("multi + named destination file", "steps", {**off, "destination": True}),
        ("multi + implied steps (catalog providers)", "steps", {**off, "expand_pool": 5}),
        ("steps: all three (new default)", "steps", {}),
    ]

    def after(extra: Any) -> Any:
        def score(ix: Any, q: Any, p: Any) -> Any:
            return extra(ix, q, p, st.steps(ix, q, p))

        return score

    def server_prior(ix: Any, q: Any, p: Any, s: Any) -> Any:
        # the server layer as a soft prior instead of cascade's hard cut
        return s + 0.2 * st.server_scores(ix, q, p)[ix.server_of]

    def clause_top(ix: Any, q: Any, p: Any, s: Any) -> Any:
        # each sub-intent's best tool lifted (+0.05): coverage of every clause
        if q.intent_vectors is None:
            return s
        out = s.copy()
        for v in q.intent_vectors:
            out[int(np.argmax(ix.tool_vectors @ v))] += 0.05
        return out

    def implied(rx: re.Pattern[str], text: str) -> Any:
        def stage(ix: Any, q: Any, p: Any, s: Any) -> Any:
            if q.embed is None or not rx.search(q.text):
                return s
            v = q.embed([text])[0]
            sub = ix.tool_vectors @ v + p.lexical_weight * st._normalised(
                ix.tool_lexical.scores(text)
            )
            j = int(np.argmax(sub))
            out = s.copy()
            out[j] = max(float(s[j]), float(np.sort(s[np.isfinite(s)])[-5]) + 1e-4)
            return out

        return stage

    time_rx = re.compile(
        r"\b(today|tomorrow|yesterday|tonight|this (?:week|month|year)|next (?:week|month|"
        r"year|monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b",
        re.IGNORECASE,
    )
    experiments = {
        "x-server-prior": ("steps + server layer as soft prior (0.2)", server_prior),
        "x-clause-top": ("steps + every clause's best tool lifted", clause_top),
        "x-time": (
            "steps + implied 'current date' for relative dates",
            implied(time_rx, "get the current date and time"),
        ),
        "x-url": (
            "steps + implied 'fetch' for a URL",
            implied(re.compile(r"https?://\S+"), "fetch the content of a web page URL"),
        ),
    }
    for name, (label, stage) in experiments.items():
        st.STRATEGIES[name] = st.Strategy(name, after(stage), "intent-spans", label)
        rows.append((label, name, {}))
    rows.append(("steps, lexical weight 0.3 instead of 0.2", "steps", {"lexical_weight": 0.3}))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--store", type=Path, default=REPO / ".toolroute" / "bench-store")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if not SHARED.is_dir():
        print(f"error: {SHARED} not found (../shared missing)", file=sys.stderr)
        return 2

    from toolroute.bench.runner import bench
    from toolroute.catalog import load_queries
    from toolroute.embed.onnx import OnnxEmbedder
    from toolroute.route.strategy import RouteParams
    from toolroute.router import Router

    rows = _register()
    embedder = OnnxEmbedder()
    results: dict[str, dict[str, dict[str, Any]]] = {}
    for dname, (cat, qf) in DATASETS.items():
        with Router(cat, store=args.store, embedder=embedder, params=RouteParams()) as r:
            r.index()
            queries = load_queries(qf, r.catalog)
            for label, name, overrides in rows:
                r.params = replace(RouteParams(), **overrides)
                res = bench(r, queries, [name])[name]
                results.setdefault(label, {})[dname] = res
                print(dname, label, {m: round(res[m], 3) for m in METRICS}, file=sys.stderr)
    head = " | ".join(f"{d} R@5 | MRR" for d in DATASETS)
    lines = [
        "| idea | " + head + " | live p50 ms |",
        "|---|" + "---:|---:|" * len(DATASETS) + "---:|",
    ]
    for label, per in results.items():
        cells = " | ".join(f"{per[d]['recall@5']:.3f} | {per[d]['mrr']:.3f}" for d in DATASETS)
        lat = per["livemcpbench"]["latency_ms"]["p50"]
        lines.append(f"| {label} | {cells} | {lat:.1f} |")
    table = "\n".join(lines) + "\n"
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(table, encoding="utf-8")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
