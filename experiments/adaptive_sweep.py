"""Exploratory 2-seed sweeps of adaptive's knobs (issue 24) on the 3-vendor livemcpbench
market: each variant is one strategy with RouteParams.adaptive replaced, run by
:func:`toolroute.bench.simulate.run_simulation`. The ablation figures quoted in
benchmarks/results/adaptive/README.md ("what pays") came from runs like:

    .venv/bin/python experiments/adaptive_sweep.py \
        '{"no-memory": {"strategy": "adaptive-no-memory"}, "memory": {"strategy": "adaptive"}}' \
        '{"providers": 3, "planner": "oracle", "stream": "zipf", "tasks": 2000,
          "window": [1500, 2000]}' 2
    .venv/bin/python experiments/adaptive_sweep.py \
        '{"v20": {"strategy": "adaptive", "adaptive": {"value_usd": 0.2}}}' '{...}' 2

Arguments: variants (JSON), run_simulation keyword options (JSON), seeds. Prints one line per
variant: success, cost, invalid calls and tokens over the window.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from toolroute import Router
from toolroute.bench.simulate import run_simulation
from toolroute.catalog.loader import load_queries

REPO = Path(__file__).resolve().parents[1]
LIVE = REPO.parent / "shared" / "benchmarks" / "livemcpbench"
STORE = REPO / ".toolroute" / "bench-store"


def main() -> None:
    variants = json.loads(sys.argv[1])
    options = json.loads(sys.argv[2])
    seeds = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    if "window" in options:
        options["window"] = tuple(options["window"])
    with Router(LIVE / "catalog.json", store=STORE) as r:
        queries = load_queries(LIVE / "queries.jsonl", r.catalog)
        base = r.params
        for name, spec in variants.items():
            r.params = replace(base, adaptive=replace(base.adaptive, **spec.get("adaptive", {})))
            start = time.time()
            sim = run_simulation(r, queries, [spec["strategy"]], seeds=seeds, **options)
            got = sim.summary[spec["strategy"]]
            cells = {
                m: round(got[m]["mean"] or 0.0, 4)
                for m in ("success_rate", "cost_usd", "invalid_calls", "tokens")
            }
            print(name, cells, f"{time.time() - start:.0f}s", flush=True)
        r.params = base


if __name__ == "__main__":
    main()
