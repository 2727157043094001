"""Issue 24: how much of `adaptive-lean`'s margin over `hybrid` is the exact-name pre-rank's?

    PYTHONPATH=src nice -n 10 python benchmarks/adaptive_exact.py --store DIR --stream zipf \
        --out benchmarks/results/adaptive/lean-exact.md

The exact-name step (route/exact.py, ``RouteParams.exact_names``) runs after every strategy.
This runs the issue's market setting (livemcpbench, 3 vendors, oracle planner, n = 3,
2 attempts, ``--seeds`` seeds; Zipf: 2,000 tasks, tasks 1,500-2,000 reported) twice over the
same worlds, with the step on (today) and off (the router `benchmarks/results/adaptive/zipf`
and `once` were measured with), and writes per strategy the mean success and the paired
difference against `hybrid` of each run, and per strategy the paired difference off - on.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

from toolroute.bench.simulate import Simulation, ci95, run_simulation
from toolroute.catalog.loader import load_queries
from toolroute.router import Router

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks" / "livemcpbench"
METRICS = ("success_rate", "cost_usd", "invalid_calls", "tokens")


def _cell(stat: dict[str, float | None], digits: int = 3) -> str:
    mean, half = stat["mean"] or 0.0, stat["ci95"]
    return f"{mean:+.{digits}f}" + ("" if half is None else f" ± {half:.{digits}f}")


def _run(store: Path, exact: bool, args: argparse.Namespace) -> Simulation:
    with Router(SHARED / "catalog.json", store=store) as router:
        router.params = replace(router.params, exact_names=exact)
        queries = load_queries(SHARED / "queries.jsonl", router.catalog)
        zipf = args.stream == "zipf"
        return run_simulation(
            router,
            queries,
            args.strategy,
            args.seeds,
            3,
            providers=3,
            planner="oracle",
            attempts=2,
            stream=args.stream,
            tasks=2000 if zipf else None,
            window=(1500, 2000) if zipf else None,
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--stream", choices=("once", "zipf"), default="zipf")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("-s", "--strategy", action="append", default=None)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--off-only", action="store_true", help="only the run with the step off")
    args = ap.parse_args()
    args.strategy = args.strategy or ["hybrid", "adaptive-lean"]
    started = time.monotonic()
    if args.off_only:
        sim = _run(args.store, False, args)
        lines = [
            f"Exact-name pre-rank off, {args.stream} stream, {args.seeds} seeds "
            f"(`benchmarks/adaptive_exact.py --off-only`, {time.monotonic() - started:.0f} s)",
            "",
            "| strategy | success | vs hybrid (paired) |",
            "|---|---:|---:|",
        ]
        for name in args.strategy:
            rate = sim.summary[name]["success_rate"]["mean"] or 0.0
            diff = _cell(sim.paired("success_rate", name, "hybrid")) if name != "hybrid" else "—"
            lines.append(f"| {name} | {rate:.3f} | {diff} |")
        return _ratios(sim, args, lines)
    sims = {exact: _run(args.store, exact, args) for exact in (True, False)}
    lines = [
        f"Exact-name pre-rank on and off, {args.stream} stream, {args.seeds} seeds "
        f"(`benchmarks/adaptive_exact.py`, {time.monotonic() - started:.0f} s)",
        "",
        "| strategy | success, on | success, off | off − on (paired) | vs hybrid, on | "
        "vs hybrid, off |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in args.strategy:
        on, off = (sims[e].by_strategy() for e in (True, False))
        first = {r.seed: r.means()["success_rate"] for r in on[name]}
        diffs = [r.means()["success_rate"] - first[r.seed] for r in off[name]]
        mean = {e: sims[e].summary[name]["success_rate"]["mean"] or 0.0 for e in (True, False)}
        vs = {e: _cell(sims[e].paired("success_rate", name, "hybrid")) for e in (True, False)}
        lines.append(
            f"| {name} | {mean[True]:.3f} | {mean[False]:.3f} | {_cell(ci95(diffs))} | "
            f"{vs[True] if name != 'hybrid' else '—'} | {vs[False] if name != 'hybrid' else '—'} |"
        )
    return _ratios(sims[False], args, lines)


def _ratios(sim: Simulation, args: argparse.Namespace, lines: list[str]) -> int:
    lines += ["", "Ratio of means vs `hybrid` with the step off", ""]
    lines += ["| strategy | " + " | ".join(METRICS) + " |", "|---|" + "---:|" * len(METRICS)]
    base = sim.summary["hybrid"]
    for name in args.strategy:
        s = sim.summary[name]
        cells = [f"{(s[m]['mean'] or 0.0) / (base[m]['mean'] or 1.0):.3f}" for m in METRICS]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
