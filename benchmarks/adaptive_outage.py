"""Issue 24, the harder worlds: does the learning router hold up when a vendor's tools share
their quality, and does it recover after a vendor's outage?

    PYTHONPATH=src nice -n 10 python -m benchmarks.adaptive_outage --store DIR --out DIR

Three runs over the same seeds, in the 3-vendor livemcpbench market with the oracle planner,
a Zipf stream of ``--tasks`` tasks: today's world (ρ = 0), vendor-correlated quality
(ρ = ``--rho``), and that world with one vendor (drawn per seed) down for tasks ``--outage``
A:B. Only the outage differs between the last two runs (the world and every call's luck are
the same), so per seed the difference in success in each part of the stream (before, during,
right after, later) is the outage's own effect. Writes ``<out>/<run>/`` (simulate.md / .json /
.png, curves, paired.md against hybrid over the whole stream, window.md over the last quarter)
and ``<out>/segments.md``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from toolroute.bench.agent import ORACLE_ROUTER
from toolroute.bench.simulate import run_simulation
from toolroute.bench.simulation import Simulation, ci95, stat_text
from toolroute.bench.simulation_report import (
    markdown_table,
    write_learning_outputs,
    write_simulation_outputs,
)
from toolroute.catalog.loader import load_queries
from toolroute.router import Router

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks" / "livemcpbench"


def segments_table(
    plain: Simulation, down: Simulation, parts: list[tuple[str, int, int]], baseline: str
) -> str:
    """Markdown: per strategy and part of the stream, success with the outage, its paired
    difference against the same world without it, and against ``baseline`` in the outage run."""
    names = list(down.by_strategy(whole=True))
    head = [f"{label} (tasks {a}–{b})" for label, a, b in parts]
    lines = [
        "Success rate with the outage (mean ± 95 % over seeds)",
        "",
        "| strategy | " + " | ".join(head) + " |",
        "|---|" + "---:|" * len(parts),
    ]
    cut = {(a, b): Simulation(down.runs, down.setting, (a, b)) for _, a, b in parts}
    same = {(a, b): Simulation(plain.runs, plain.setting, (a, b)) for _, a, b in parts}
    for name in names:
        cells = [stat_text(cut[(a, b)].summary[name]["success_rate"], 3) for _, a, b in parts]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Outage minus no outage, same world and luck (paired over seeds)",
        "",
        "| strategy | " + " | ".join(head) + " |",
        "|---|" + "---:|" * len(parts),
    ]
    for name in names:
        cells = []
        for _, a, b in parts:
            with_ = {r.seed: r.means()["success_rate"] for r in cut[(a, b)].by_strategy()[name]}
            without = same[(a, b)].by_strategy()[name]
            diffs = [with_[r.seed] - r.means()["success_rate"] for r in without]
            cells.append(stat_text(ci95(diffs), 3, sign=True))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Outage run, paired against `{baseline}` (success difference)",
        "",
        "| strategy | " + " | ".join(head) + " |",
        "|---|" + "---:|" * len(parts),
    ]
    for name in names:
        if name == baseline:
            continue
        cells = [
            stat_text(cut[(a, b)].paired("success_rate", name, baseline), 3, sign=True)
            for _, a, b in parts
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def correlation_table(flat: Simulation, tied: Simulation, window: tuple[int, int]) -> str:
    """Markdown: success in ``window`` with ρ = 0 and with ρ, and the paired difference."""
    a, b = (Simulation(s.runs, s.setting, window) for s in (flat, tied))
    rho = tied.setting.get("vendor_correlation")
    lines = [
        f"Vendor-correlated quality, tasks {window[0]}–{window[1]} (success, mean ± 95 %)",
        "",
        f"| strategy | ρ = 0 | ρ = {rho} | ρ − 0 (paired) |",
        "|---|---:|---:|---:|",
    ]
    for name, runs in b.by_strategy().items():
        base = {r.seed: r.means()["success_rate"] for r in a.by_strategy()[name]}
        diffs = [r.means()["success_rate"] - base[r.seed] for r in runs]
        cells = (
            stat_text(a.summary[name]["success_rate"], 3),
            stat_text(b.summary[name]["success_rate"], 3),
            stat_text(ci95(diffs), 3, sign=True),
        )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--catalog", type=Path, default=SHARED / "catalog.json")
    parser.add_argument("--queries", type=Path, default=SHARED / "queries.jsonl")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--rho", type=float, default=0.5)
    parser.add_argument("--outage", default="800:1200")
    parser.add_argument("-s", "--strategy", dest="strategies", action="append")
    args = parser.parse_args()
    a, b = (int(x) for x in args.outage.split(":"))
    strategies = args.strategies or ["adaptive", "hybrid", "ehrr"]
    parts = [
        (label, lo, hi)
        for label, lo, hi in (
            ("before", 0, a),
            ("during", a, b),
            ("its first 100", a, min(a + 100, b)),
            ("its last 100", max(a, b - 100), b),
            ("right after", b, min(b + 200, args.tasks)),
            ("later", min(b + 200, args.tasks), args.tasks),
        )
        if lo < hi
    ]
    window = (args.tasks * 3 // 4, args.tasks)
    common = {
        "seeds": args.seeds,
        "n": 3,
        "providers": 3,
        "planner": "oracle",
        "attempts": 2,
        "stream": "zipf",
        "tasks": args.tasks,
    }
    started = time.monotonic()
    with Router(args.catalog, store=args.store) as router:
        qs = load_queries(args.queries, router.catalog)
        router.index()
        runs: dict[str, Simulation] = {}
        for label, rho, outage in (
            ("uncorrelated", 0.0, None),
            ("correlated", args.rho, None),
            ("outage", args.rho, (a, b)),
        ):
            t0 = time.monotonic()
            sim = run_simulation(
                router,
                qs,
                strategies,
                vendor_correlation=rho,
                outage=outage,
                **common,  # type: ignore[arg-type]
            )
            runs[label] = sim
            out = args.out / label
            write_simulation_outputs(sim.summary, sim.series, out, setting=sim.setting)
            write_learning_outputs(sim, out)
            (out / "paired.md").write_text(sim.paired_table("hybrid"), encoding="utf-8")
            cut = Simulation(sim.runs, sim.setting, window)
            (out / "window.md").write_text(
                markdown_table(cut.summary, f"tasks {window[0]}–{window[1]}")
                + "\n"
                + cut.paired_table("hybrid"),
                encoding="utf-8",
            )
            print(f"{label}: {time.monotonic() - t0:.0f} s", file=sys.stderr)
    table = correlation_table(runs["uncorrelated"], runs["correlated"], window) + "\n"
    table += segments_table(runs["correlated"], runs["outage"], parts, "hybrid")
    down = runs["outage"].setting.get("outage_vendor")
    note = (
        f"\nSetting: {', '.join(f'{k} = {v}' for k, v in common.items())}, ρ = {args.rho}, "
        f"outage = {a}:{b} "
        f"(vendor down per seed: {down}); oracle router = `{ORACLE_ROUTER}`. "
        f"Wall time {time.monotonic() - started:.0f} s.\n"
    )
    (args.out / "segments.md").write_text(table + note, encoding="utf-8")
    print(table + note)


if __name__ == "__main__":
    main()
