"""The exact-name step with and without mention roles, on every set of the recall suite.

    PYTHONPATH=src nice -n 10 python -m benchmarks.exact_intent [--strategy default]...
        [--sets a,b] [--steps 300] [--exact 300] [--store DIR]
        --out benchmarks/results/recall_suite_exact_intent.md [--json FILE]

Per strategy S, three variants of the router's exact-name step (route/exact.py) over the same
queries in one run: ``S/raw`` (the step off), ``S/every`` (every mention of a tool lifts it
above all, the rule before mention roles) and ``S`` (only a tool named as the need does).
Views and intervals are benchmarks/recall_suite.py's: whole requests, oracle and clause
steps, generated exact-name queries; paired bootstrap 95 % intervals against ``S/every``
(the first strategy's, in the tables; every other strategy's in its own rows).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.recall_suite import SETS, Case, render, run_set, suite_cases


def _variant_runs(router: Any, cases: dict[str, list[Case]], strategy: str) -> dict[str, Any]:
    """run_set for ``S/raw``, ``S/every`` and ``S``, the router's exact step swapped per run."""
    import toolroute.router as router_module
    from toolroute.route.exact import prerank_index

    out: dict[str, Any] = {}
    for label, roles in ((f"{strategy}/raw", True), (f"{strategy}/every", False), (strategy, True)):
        router_module.prerank_index = functools.partial(prerank_index, roles=roles)  # type: ignore[assignment]
        try:
            part = run_set(router, cases, [label])
        finally:
            router_module.prerank_index = prerank_index  # type: ignore[assignment]
        for view, per in part.items():
            out.setdefault(view, {}).update(per)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--strategy", action="append", default=None)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--exact", type=int, default=300)
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()

    from toolroute.catalog import load_queries
    from toolroute.embed.onnx import OnnxEmbedder
    from toolroute.route.strategy import RouteParams
    from toolroute.router import Router

    strategies = args.strategy or ["default"]
    embedder = OnnxEmbedder()
    results: dict[str, dict[str, Any]] = {}
    started = time.perf_counter()
    for name in args.sets.split(","):
        cat, qf = SETS[name]
        with Router(cat, store=args.store, embedder=embedder, params=RouteParams()) as r:
            r.index()
            queries = load_queries(qf, r.catalog)
            cases = suite_cases(r.catalog, queries, embedder.embed, args.steps, args.exact)
            results[name] = {}
            for s in strategies:
                for view, per in _variant_runs(r, cases, s).items():
                    results[name].setdefault(view, {}).update(per)
        print(f"{name}: done at {time.perf_counter() - started:.0f} s", file=sys.stderr)
    sections: list[str] = []
    summary: dict[str, Any] = {}
    for s in strategies:
        labels = [f"{s}/every", f"{s}/raw", s]
        per_strategy = {
            name: {
                view: {k: v for k, v in per.items() if k in labels} for view, per in views.items()
            }
            for name, views in results.items()
        }
        table, summary[s] = render(per_strategy, labels, f"{s}/every")
        sections.append(f"## {s}\n\n" + table)
    head = (
        f"`python -m benchmarks.exact_intent {' '.join(sys.argv[1:])}` "
        f"({time.perf_counter() - started:.0f} s, MiniLM int8, no LLM)\n\n"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(head + "\n".join(sections), encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print(head + "\n".join(sections))
    return 0


if __name__ == "__main__":
    sys.exit(main())
