"""Cold and warm `toolroute index` on livemcpbench, as a new user runs it: wall time and peak RSS.

    python -m benchmarks.cold_index [--store DIR] [--out FILE]

Runs `toolroute index --catalog ../shared/benchmarks/livemcpbench/catalog.json --json` twice
as separate processes: first on an empty store (every text embedded: the cold build), then on
the same store (nothing embedded: the warm rebuild). Wall time includes process start and the
model load; peak RSS is the child's ``ru_maxrss``. The machine's load is printed with the
figures, since 2 shared cores make a cold build vary several-fold. ``--store`` keeps the store
for later benchmarks (it must be empty or absent); by default a temporary one is used.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._report import missing

REPO = Path(__file__).resolve().parents[1]
CATALOG = REPO.parent / "shared" / "benchmarks" / "livemcpbench" / "catalog.json"
TOOLROUTE = Path(sys.executable).with_name("toolroute")


def run_index(store: Path) -> dict[str, Any]:
    """One `toolroute index` process: its JSON report, wall seconds and peak RSS (MB)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    proc = subprocess.run(
        [str(TOOLROUTE), "index", "--catalog", str(CATALOG), "--store", str(store), "--json"],
        check=True,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    seconds = time.perf_counter() - t0
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    report = json.loads(proc.stdout)
    return {
        "seconds": round(seconds, 1),
        # ru_maxrss of children is the maximum over all of them: the first run is the larger.
        "peak_rss_mb": round(max(peak_kb, before) / 1024, 0),
        **report,
    }


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--store", type=Path, default=None, help="empty or absent store to keep")
    ap.add_argument("--out", type=Path, default=None, help="write the markdown table here")
    args = ap.parse_args()
    if missing(CATALOG):
        return 2
    if args.store is not None and args.store.exists() and any(args.store.iterdir()):
        print(f"error: {args.store} is not empty: a cold run needs an empty store", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        store = args.store or Path(tmp) / "store"
        load = os.getloadavg()[0]
        cold = run_index(store)
        warm = run_index(store)
    texts = cold["embedded"]
    rows = [
        "| run | tools added | texts embedded | wall s | texts/s | peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|",
        f"| cold (empty store) | {cold['added']} | {texts} | {cold['seconds']} "
        f"| {texts / cold['seconds']:.0f} | {cold['peak_rss_mb']:.0f} |",
        f"| warm (same store) | {warm['added']} | {warm['embedded']} | {warm['seconds']} | – | – |",
    ]
    md = (
        "\n".join(rows)
        + f"\n\n`toolroute index` on livemcpbench ({cold['added']} tools), two processes, "
        f"{os.cpu_count()} cores, 1-minute load average {load:.1f} at the start. Command: "
        "`python -m benchmarks.cold_index --out benchmarks/results/cold_index.md`.\n"
    )
    print(md, end="")
    if args.out is not None:
        args.out.write_text(md, encoding="utf-8")
        args.out.with_suffix(".json").write_text(
            json.dumps({"cold": cold, "warm": warm, "load_avg_1m": load}, indent=2) + "\n",
            encoding="utf-8",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
