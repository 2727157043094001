"""Issue 24: what the exact-name pre-rank does to the market's strategies, per rule.

    PYTHONPATH=src nice -n 10 python -m benchmarks.adaptive_exact --store DIR --stream zipf \
        [-s hybrid -s adaptive] --out benchmarks/results/adaptive/exact-intent-zipf.md

The exact-name step (route/exact.py, ``RouteParams.exact_names``) runs after every strategy.
This runs the issue's market setting (livemcpbench, 3 vendors, oracle planner, n = 3,
2 attempts, ``--seeds`` seeds; Zipf: 2,000 tasks, tasks 1,500-2,000 reported) over the same
worlds once per rule of the step: ``need`` (today: only a tool named as the need is lifted),
``every`` (every mention lifts it, the rule before mention roles) and ``off`` (no step), and
writes per strategy the mean success of each, the paired per-seed differences against
``every``, and each run's paired difference against `hybrid`. ``--off-only``: one run, off.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from dataclasses import replace
from pathlib import Path

import toolroute.router as router_module
from benchmarks.adaptive_budget import SHARED, simulate_stream
from toolroute.bench.simulation import Simulation, Stat, ci95, stat_text
from toolroute.route.exact import prerank_index
from toolroute.router import Router

METRICS = ("success_rate", "cost_usd", "invalid_calls", "tokens")


def _cell(stat: Stat) -> str:
    """A success difference, mean ± 95 % over seeds."""
    return stat_text(stat, 3, sign=True)


MODES = ("need", "every", "off")


def _run(store: Path, mode: str, args: argparse.Namespace) -> Simulation:
    # the router calls prerank_index by this module-level name: swap the rule for one run
    router_module.prerank_index = functools.partial(prerank_index, roles=mode == "need")  # type: ignore[assignment]
    try:
        return _simulate(store, mode != "off", args)
    finally:
        router_module.prerank_index = prerank_index  # type: ignore[assignment]


def _simulate(store: Path, exact: bool, args: argparse.Namespace) -> Simulation:
    with Router(SHARED / "catalog.json", store=store) as router:
        router.params = replace(router.params, exact_names=exact)
        return simulate_stream(router, args.strategy, args)


def main() -> int:
    from benchmarks.variants import register_strategies

    register_strategies()  # the research variants
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
        sim = _run(args.store, "off", args)
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
        return _ratios(sim, "off", args, lines)
    sims = {mode: _run(args.store, mode, args) for mode in MODES}
    lines = [
        f"Exact-name pre-rank per rule, {args.stream} stream, {args.seeds} seeds "
        f"(`benchmarks/adaptive_exact.py {' '.join(sys.argv[1:])}`, "
        f"{time.monotonic() - started:.0f} s)",
        "",
        "Success; paired per-seed differences (mean ± 95 % half-width) against the `every` rule,",
        "and each rule's paired difference against `hybrid` under the same rule.",
        "",
        "| strategy | need | every | off | need − every | off − every | "
        "vs hybrid: need | every | off |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in args.strategy:
        runs = {m: sims[m].by_strategy()[name] for m in MODES}
        base = {r.seed: r.means()["success_rate"] for r in runs["every"]}

        def diff(mode: str) -> str:
            return _cell(ci95([r.means()["success_rate"] - base[r.seed] for r in runs[mode]]))  # noqa: B023

        mean = {m: sims[m].summary[name]["success_rate"]["mean"] or 0.0 for m in MODES}
        vs = {
            m: _cell(sims[m].paired("success_rate", name, "hybrid")) if name != "hybrid" else "—"
            for m in MODES
        }
        lines.append(
            f"| {name} | {mean['need']:.3f} | {mean['every']:.3f} | {mean['off']:.3f} | "
            f"{diff('need')} | {diff('off')} | {vs['need']} | {vs['every']} | {vs['off']} |"
        )
    return _ratios(sims["need"], "need", args, lines)


def _ratios(sim: Simulation, mode: str, args: argparse.Namespace, lines: list[str]) -> int:
    lines += ["", f"Ratio of means vs `hybrid`, rule `{mode}`", ""]
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
