"""The MCP conformance suite (``@modelcontextprotocol/conformance`` 0.1.16, all 32 server
scenarios) against the gateway, per scenario and exposure mode: the table the docs quote.

    python -m benchmarks.conformance [--mode direct] [--mode all] [--mode meta] [--mode bind]
                                     [--dual-era] [--before PATH] [--check] [--out F]

The suite, the modes and what counts as passed are tests/helpers/conformance.py's, the code
of the CI gate (tests/conformance/test_conformance.py, ``pytest -m conformance``): ``direct``
is the test server itself, ``all``/``meta``/``bind`` ``toolroute serve --transport http`` in
front of it with that ``expose``; ``--dual-era`` puts a server of both eras, asking the 2025 way,
behind the gateway. Needs node >= 22 and the suite in .toolroute/npm (bash .ci/run installs
both). ``--check`` exits 1 unless pass-through passes 32/32 and every applicable routed
scenario passes. ``--before PATH`` adds a ``before`` column: the ``toolroute`` executable at
PATH (a checkout without the relay, e.g. main's) in its default routed mode, every scenario
counted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tests.conftest import REPO, TOOLROUTE
from tests.helpers.conformance import evaluate, markdown, missing, passed

from benchmarks._report import write_results

OUT = REPO / "benchmarks" / "results" / "conformance.md"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", action="append", choices=["direct", "all", "meta", "bind"])
    parser.add_argument("--toolroute", default=str(TOOLROUTE), help="toolroute executable to test")
    parser.add_argument("--before", help="toolroute executable without the relay (before column)")
    parser.add_argument(
        "--dual-era", action="store_true", help="the server behind the gateway serves both eras"
    )
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--check", action="store_true", help="exit 1 unless the targets hold")
    args = parser.parse_args()
    why = missing()
    if why:
        print(why)
        return 2
    modes = (args.mode or ["direct", "all", "meta"]) + (["before"] if args.before else [])
    report = evaluate(modes, args.toolroute, args.before, args.dual_era)
    command = "python -m benchmarks.conformance " + " ".join(
        f"--mode {m}" for m in modes if m != "before"
    )
    if args.dual_era:
        command += " --dual-era"
    if args.before:
        command += f" --before {args.before}"
    write_results(markdown(report, command), args.out, report)
    for mode, s in report["summary"].items():
        print(f"{mode}: {s['passed']}/{s['applicable']} applicable scenarios passed")
    if args.check:
        return 0 if passed(report) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
