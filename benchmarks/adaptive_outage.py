"""Issue 24, the harder worlds: does the learning router hold up when a vendor's tools share
their quality, and does it recover after a vendor's outage?

    PYTHONPATH=src nice -n 10 python benchmarks/adaptive_outage.py --store DIR --out DIR

Two runs over the same seeds, in the 3-vendor livemcpbench market with the oracle planner,
a Zipf stream of ``--tasks`` tasks: vendor-correlated quality (ρ = ``--rho``) alone, and the
same world with one vendor (drawn per seed) down for tasks ``--outage`` A:B. Only the outage
differs between the two runs (the world and every call's luck are the same), so per seed the
difference in success in each part of the stream (before, during, right after, later) is the
outage's own effect. Writes ``<out>/correlated/`` and ``<out>/outage/`` (simulate.md / .json /
.png, curves, paired.md against hybrid) and ``<out>/segments.md``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from toolroute.bench.agent import ORACLE_ROUTER
from toolroute.bench.simulate import (
    Simulation,
    ci95,
    run_simulation,
    write_learning_outputs,
    write_simulation_outputs,
)
from toolroute.catalog.loader import load_queries
from toolroute.router import Router

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks" / "livemcpbench"


def _cell(stat: dict[str, float | None], digits: int = 3, sign: bool = False) -> str:
    mean, half = stat["mean"] or 0.0, stat["ci95"]
    text = f"{mean:+.{digits}f}" if sign else f"{mean:.{digits}f}"
    return text + ("" if half is None else f" ± {half:.{digits}f}")


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
        cells = [_cell(cut[(a, b)].summary[name]["success_rate"]) for _, a, b in parts]
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
            cells.append(_cell(ci95(diffs), sign=True))
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
            _cell(cut[(a, b)].paired("success_rate", name, baseline), sign=True)
            for _, a, b in parts
        ]
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
            ("right after", b, min(b + 200, args.tasks)),
            ("later", min(b + 200, args.tasks), args.tasks),
        )
        if lo < hi
    ]
    common = {
        "seeds": args.seeds,
        "n": 3,
        "providers": 3,
        "planner": "oracle",
        "attempts": 2,
        "stream": "zipf",
        "tasks": args.tasks,
        "vendor_correlation": args.rho,
    }
    started = time.monotonic()
    with Router(args.catalog, store=args.store) as router:
        qs = load_queries(args.queries, router.catalog)
        router.index()
        runs: dict[str, Simulation] = {}
        for label, outage in (("correlated", None), ("outage", (a, b))):
            t0 = time.monotonic()
            sim = run_simulation(router, qs, strategies, outage=outage, **common)  # type: ignore[arg-type]
            runs[label] = sim
            out = args.out / label
            write_simulation_outputs(sim.summary, sim.series, out, setting=sim.setting)
            write_learning_outputs(sim, out)
            (out / "paired.md").write_text(sim.paired_table("hybrid"), encoding="utf-8")
            print(f"{label}: {time.monotonic() - t0:.0f} s", file=sys.stderr)
    table = segments_table(runs["correlated"], runs["outage"], parts, "hybrid")
    down = runs["outage"].setting.get("outage_vendor")
    note = (
        f"\nSetting: {', '.join(f'{k} = {v}' for k, v in common.items())}, outage = {a}:{b} "
        f"(vendor down per seed: {down}); oracle router = `{ORACLE_ROUTER}`. "
        f"Wall time {time.monotonic() - started:.0f} s.\n"
    )
    (args.out / "segments.md").write_text(table + note, encoding="utf-8")
    print(table + note)


if __name__ == "__main__":
    main()
