"""Run test files several times under a CPU hog and list the tests whose outcome flips.

    python experiments/flaky_sweep.py --runs 3 --hogs 2 \\
        tests/gateway/shell/test_stdio_server_processes.py ...

Each run is one pytest process over all the files, with ``--hogs`` busy loops at ``nice 19``
beside it (killed at the end). ``--tree`` runs another checkout's tests and source (e.g. an
export of an older commit) to count flips before a fix. Prints, per test that did not pass in
every run, its outcomes; then the runs, wall time and the tests seen.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _outcomes(junit: Path) -> dict[str, tuple[str, str]]:
    """Per test: its outcome and, for a failure or error, the first line of its message."""
    out: dict[str, tuple[str, str]] = {}
    for case in ET.parse(junit).iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        kinds = {child.tag: child for child in case}
        kind = next((k for k in ("failure", "error", "skipped") if k in kinds), "passed")
        message = kinds[kind].get("message", "") if kind in ("failure", "error") else ""
        out[name] = (kind, message.splitlines()[0][:160] if message else "")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--hogs", type=int, default=2)
    parser.add_argument("--tree", type=Path, default=REPO, help="checkout to test (tests + src)")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(args.tree / "src")}
    env.setdefault("TOOLROUTE_SHARED", str(REPO.parent / "shared"))
    hog = "while 1: pass"
    hogs = [
        subprocess.Popen(["nice", "-n", "19", sys.executable, "-c", hog]) for _ in range(args.hogs)
    ]
    results: dict[str, list[str]] = defaultdict(list)
    messages: dict[str, list[str]] = defaultdict(list)
    start = time.monotonic()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for run in range(args.runs):
                junit = Path(tmp) / f"run{run}.xml"
                cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
                cmd += [f"--junitxml={junit}", *args.files]
                subprocess.run(cmd, cwd=args.tree, env=env, stdout=subprocess.DEVNULL, check=False)
                for name, (outcome, message) in _outcomes(junit).items():
                    results[name].append(outcome)
                    if message:
                        messages[name].append(f"run {run + 1}: {message}")
                done = time.monotonic() - start
                print(f"run {run + 1}/{args.runs} done at {done:.0f} s", flush=True)
    finally:
        for p in hogs:
            p.kill()
            p.wait()
    flips = {n: o for n, o in sorted(results.items()) if set(o) - {"passed", "skipped"}}
    for name, outcomes in flips.items():
        print(f"{name}: {' '.join(outcomes)}")
        for line in messages[name]:
            print(f"    {line}")
    print(
        f"{args.runs} runs under {args.hogs} hogs in {time.monotonic() - start:.0f} s: "
        f"{len(results)} tests, {len(flips)} not passing every run"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
