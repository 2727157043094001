"""Where a cold index's memory goes: RSS sampled through ``Router.index()`` by phase, with
glibc's mmap threshold fixed (what every toolroute process does, ``toolroute.heap``) and left
dynamic (glibc's default).

    python -m benchmarks.index_rss_trace [--catalog FILE] [--out FILE]

Each run is a fresh process on an empty store: it embeds every text of the catalog
(livemcpbench by default). A thread samples the resident set every 0.25 s and files each
sample under the phase it fell in (setup: imports and the catalog; then the embedding by
fifths of the texts, shortest first, the last fifth also covering the index's assembly); the
table gives each phase's maximum and the process's peak (``VmHWM``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "benchmarks"


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def child(catalog: Path, dynamic: bool) -> dict[str, Any]:
    from toolroute.heap import fix_mmap_threshold
    from toolroute.router import Router

    if not dynamic:  # as the toolroute command does; else glibc's default, the threshold
        fix_mmap_threshold()  # following the largest freed block
    phase = ["setup"]
    peaks: dict[str, float] = {}
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            rss = _status_mb("VmRSS")
            peaks[phase[0]] = max(peaks.get(phase[0], 0.0), rss)
            time.sleep(0.25)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()

    def progress(done: int, total: int) -> None:
        phase[0] = f"embed {min(5, 1 + 5 * done // max(total, 1))}/5"

    with tempfile.TemporaryDirectory(prefix="toolroute-rss-") as store:
        router = Router(catalog, store=store)
        phase[0] = "embed 1/5"
        t0 = time.perf_counter()
        router.index(progress=progress)
        seconds = time.perf_counter() - t0
        router.close()
    stop.set()
    thread.join()
    return {
        "peak_rss_mb": round(_status_mb("VmHWM"), 1),
        "seconds": round(seconds, 1),
        "phases": {k: round(v, 1) for k, v in peaks.items()},
    }


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--catalog", type=Path, default=SHARED / "livemcpbench" / "catalog.json")
    ap.add_argument("--out", type=Path, help="also write the markdown table here (+ .json)")
    ap.add_argument("--child", choices=["fixed", "dynamic"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not args.catalog.is_file():
        print(f"error: {args.catalog} not found (../shared missing?)", file=sys.stderr)
        return 2
    if args.child:
        print(json.dumps(child(args.catalog, args.child == "dynamic")))
        return 0
    runs: dict[str, dict[str, Any]] = {}
    for kind in ("dynamic", "fixed"):
        out = subprocess.run(
            [sys.executable, "-m", "benchmarks.index_rss_trace", "--child", kind]
            + ["--catalog", str(args.catalog)],
            cwd=REPO,
            check=True,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        runs[kind] = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"  {kind}: {runs[kind]}", file=sys.stderr)
    phases = list(dict.fromkeys(p for r in runs.values() for p in r["phases"]))
    lines = [
        f"RSS by phase of a cold `Router.index()` of {args.catalog.parent.name}, one fresh "
        "process each (MB; 2 shared cores).",
        "",
        "| glibc mmap threshold | " + " | ".join(phases) + " | peak (VmHWM) | seconds |",
        "|---|" + "---:|" * (len(phases) + 2),
    ]
    names = {"dynamic": "dynamic (glibc default)", "fixed": "fixed at 128 KiB (toolroute)"}
    for kind, r in runs.items():
        cells = " | ".join(str(r["phases"].get(p, "–")) for p in phases)
        lines.append(f"| {names[kind]} | {cells} | {r['peak_rss_mb']} | {r['seconds']} |")
    md = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(md)
        args.out.with_suffix(".json").write_text(json.dumps(runs, indent=2) + "\n")
    print(md.rstrip("\n"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
