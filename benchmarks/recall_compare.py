"""Two recall_suite runs of the same strategy compared metric by metric: what a change moved.

    python -m benchmarks.recall_compare BEFORE.json AFTER.json [--out FILE.md]

Each file is ``recall_suite --json`` output (for instance the tree before a refactor, run with
its own ``benchmarks/recall_suite.py``, and this tree with ``--abstain off`` so that only the
ranking is compared). Prints how many figures were compared and every one that differs.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def differences(before: dict, after: dict) -> tuple[int, list[tuple[str, ...]]]:
    """(figures compared, the differing ones as (kind, strategy, set, metric, before, after))."""
    compared, out = 0, []
    for kind, strategies in before.items():
        for strategy, sets in strategies.items():
            for name, metrics in sets.items():
                now = after.get(kind, {}).get(strategy, {}).get(name, {})
                for metric, value in metrics.items():
                    if metric == "p50_ms":  # a timing, not a result
                        continue
                    compared += 1
                    if now.get(metric) != value:
                        row = (kind, strategy, name, metric, str(value), str(now.get(metric)))
                        out.append(row)
    return compared, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    compared, diff = differences(
        json.loads(args.before.read_text()), json.loads(args.after.read_text())
    )
    lines = [f"{compared} figures compared, {len(diff)} differ", ""]
    if diff:
        lines += [
            "| queries | strategy | set | metric | before | after |",
            "|---|---|---|---|---:|---:|",
        ]
        lines += ["| " + " | ".join(row) + " |" for row in diff]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out is not None:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
