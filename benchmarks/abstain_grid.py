"""The abstention trees' size against the held-out measure: each setting's false-positive rate
and in-scope R@5 lost on every held-out set (``benchmarks.abstain_train``'s folds, default
mode), from the signals a full ``abstain_train --cache DIR`` run kept.

    python -m benchmarks.abstain_grid --cache DIR [--out benchmarks/results/abstain_grid.md]

Bigger trees answer fewer out-of-scope requests and lose more recall on catalogs they have
not met; the shipped size (``abstain_train.TREES``) is chosen on these held-out columns
alone. The last column, the model fitted on every set at that size on ``union_test``
(default / strict), is reported, not chosen on.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from benchmarks import abstain_train as at
from toolroute.route.abstain import FEATURES

SIZES = (
    {"rounds": 100, "rate": 0.05, "depth": 2, "leaf": 20},
    {"rounds": 75, "rate": 0.1, "depth": 3, "leaf": 20},
    {"rounds": 150, "rate": 0.05, "depth": 3, "leaf": 20},
    {"rounds": 150, "rate": 0.05, "depth": 3, "leaf": 50},
    {"rounds": 150, "rate": 0.05, "depth": 4, "leaf": 20},
    {"rounds": 300, "rate": 0.05, "depth": 3, "leaf": 20},
)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--cache", type=Path, required=True, help="abstain_train's --cache DIR")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    missing = [n for n in at.SETS if not (args.cache / f"{n}.json").exists()]
    if missing:
        print(
            f"error: {args.cache} lacks {', '.join(missing)}: run abstain_train --cache first",
            file=sys.stderr,
        )
        return 2
    sets = {n: json.loads((args.cache / f"{n}.json").read_text()) for n in at.SETS}
    at._arrays(sets)
    at.LEARNER[0] = at.Boosted
    shipped = dict(at.TREES)
    lines = [
        "`python -m benchmarks.abstain_grid --cache DIR` (held out, `default` mode; "
        "FP per set in the order " + ", ".join(at.SETS) + ")",
        "",
        "| rounds | rate | depth | min leaf | FP per set | mean FP | R@5 lost per set "
        "| most lost | union_test FP, fitted on every set |",
        "|---:|---:|---:|---:|---|---:|---|---:|---|",
    ]
    for size in SIZES:
        at.TREES.update(size)
        fps, costs = [], []
        for name in at.SETS:
            train = [n for n in sets if not at.shares_catalog(n, name)]
            xs = at.with_oos_gap(sets, train, FEATURES)
            model = at.fit(*at.weights_of(sets, xs, train))
            t = at.threshold(model, sets, xs, train, at.BUDGETS)["default"]
            kind, r5 = sets[name]["kind"], sets[name]["r5"]
            answered = at.probabilities(model, xs[name]) >= t
            inn = kind == "in"
            fps.append(float(answered[np.isin(kind, at.OUT_KINDS)].mean()))
            costs.append(at.cost(answered.astype(float), r5, inn, 0.5))
        _, _, ship = at.shipped(sets, FEATURES, at.BUDGETS)
        test = f"{ship['default']['test_fp']:.3f} / {ship['strict']['test_fp']:.3f}"
        mark = " (shipped)" if size == shipped else ""
        lines.append(
            f"| {size['rounds']}{mark} | {size['rate']} | {size['depth']} | {size['leaf']} "
            f"| {' '.join(f'{f:.3f}' for f in fps)} | {np.mean(fps):.3f} "
            f"| {' '.join(f'{c:.3f}' for c in costs)} | {max(costs):.3f} | {test} |"
        )
    at.TREES.update(shipped)
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
