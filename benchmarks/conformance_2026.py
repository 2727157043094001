"""The MCP conformance suite's frozen 2026-07-28 requirement set through the gateway, with the
python-sdk's own everything-server behind it, per downstream transport and exposure mode: the
table the docs quote.

    python -m benchmarks.conformance_2026 [--mode direct] [--mode all] [--mode meta]
                                          [--mode bind] [--downstream http|stdio]...
                                          [--check] [--out F]

The suite, the server, the columns and what counts as passed are
tests/helpers/conformance_2026.py's, the code of the CI gate
(tests/conformance/test_conformance.py, ``pytest -m conformance``): ``direct`` is the
everything-server over streamable HTTP, ``all``/``meta``/``bind`` ``toolroute serve
--transport http`` in front of it with that ``expose``, the server reached over streamable HTTP
or stdio (``--downstream``). ``--check`` exits 1 unless every scored scenario passes directly
and in pass-through, and every applicable one in the routed modes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tests.conftest import REPO
from tests.helpers.conformance_2026 import columns, evaluate, markdown, missing, passed

from benchmarks._report import write_results

OUT = REPO / "benchmarks" / "results" / "conformance_2026.md"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", action="append", choices=["direct", "all", "meta", "bind"])
    parser.add_argument("--downstream", action="append", choices=["http", "stdio"])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--check", action="store_true", help="exit 1 unless the targets hold")
    args = parser.parse_args()
    why = missing()
    if why:
        print(why)
        return 2
    modes = args.mode or ["direct", "all", "meta", "bind"]
    downstreams = args.downstream or ["http", "stdio"]
    report = evaluate(columns(modes, downstreams))
    command = "python -m benchmarks.conformance_2026 " + " ".join(
        [*(f"--mode {m}" for m in modes), *(f"--downstream {s}" for s in downstreams)]
    )
    write_results(markdown(report, command), args.out, report)
    for name, s in report["summary"].items():
        print(f"{name}: {s['passed']}/{s['applicable']} applicable of {s['scored']} scored")
    if args.check:
        return 0 if passed(report) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
