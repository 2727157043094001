"""Cold top-k coverage (issue 24): the share of oracle-planner steps whose top k shows a tool
that can do the step, on the livemcpbench market (3 vendors per server), with no statistics
and no memory. It measures what capability grouping does to retrieval before any learning
(the ``capability_cosine`` and relevance-band choices of route/adaptive.py).

    .venv/bin/python -m benchmarks.capability_coverage --cosine 0.9 --cosine 0.8 --cosine 1.5 \
        -s hybrid -s adaptive-hybrid -s adaptive --out benchmarks/results/adaptive/coverage.md

A cosine above 1 groups by name and schema only. Embeddings are cached in --store.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from toolroute import Router
from toolroute.bench.planner import plan_steps
from toolroute.bench.world import Market
from toolroute.catalog.loader import load_queries
from toolroute.stats import StatsBook

REPO = Path(__file__).resolve().parents[1]
LIVE = REPO.parent / "shared" / "benchmarks" / "livemcpbench"


def main() -> None:
    from benchmarks.variants import register_strategies

    register_strategies()  # the research variants
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-s", "--strategy", action="append", default=[])
    ap.add_argument("--cosine", action="append", type=float, default=[])
    ap.add_argument("-k", type=int, default=3)
    ap.add_argument("--providers", type=int, default=3)
    ap.add_argument("--store", type=Path, default=REPO / ".toolroute" / "bench-store")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    strategies = a.strategy or ["hybrid", "adaptive"]
    lines = [
        f"Cold top-{a.k} coverage of oracle steps, livemcpbench, {a.providers} vendors",
        "",
        "| strategy | capability cosine | coverage | steps |",
        "|---|---:|---:|---:|",
    ]
    with Router(LIVE / "catalog.json", store=a.store) as base:
        queries = load_queries(LIVE / "queries.jsonl", base.catalog)
        market = Market.build(base.catalog, a.providers)
        steps = plan_steps(queries, base.catalog, "oracle", embed=base.embedder.embed)
        groups = market.queries(queries)
        with Router(
            market.catalog, store=a.store / f"market-{a.providers}", embedder=base.embedder
        ) as r:
            params = r.params
            for name in strategies:
                for cos in a.cosine if name.startswith("adaptive") and a.cosine else [None]:
                    if cos is not None:
                        r.params = replace(
                            params, adaptive=replace(params.adaptive, capability_cosine=cos)
                        )
                    hit = total = 0
                    for q, texts in zip(groups, steps, strict=True):
                        for g, text in zip(q.groups, texts, strict=True):
                            book = StatsBook(r.catalog)
                            shown = r.route(text, k=a.k, strategy=name, stats=book)
                            total += 1
                            hit += any((c.server, c.tool) in g for c in shown)
                    label = "" if cos is None else f"{cos:g}"
                    lines.append(f"| {name} | {label} | {hit / total:.3f} | {total} |")
                    print(lines[-1], flush=True)
                    r.params = params
    text = "\n".join(lines) + "\n"
    if a.out is not None:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(text, encoding="utf-8")
    else:
        print(text)


if __name__ == "__main__":
    main()
