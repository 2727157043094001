"""The abstention trees' size against the held-out measure: each setting's false-positive rate
and in-scope R@5 lost on every held-out set (``benchmarks.abstain_train``'s folds, default
mode), from the signals a full ``abstain_train --cache DIR`` run kept.

    python -m benchmarks.abstain_grid --cache DIR [--out benchmarks/results/abstain_grid.md]
    python -m benchmarks.abstain_grid --cache DIR --curve [--out FILE]

Bigger trees answer fewer out-of-scope requests and lose more recall on catalogs they have
not met; the shipped size (``abstain_train.TREES``) is chosen on these held-out columns
alone. The last column, the model fitted on every set at that size on ``union_test``
(default / strict), is reported, not chosen on.

``--curve``: the learning curve at the shipped size instead: every training set keeps a random
share of its rows of each kind (in-scope, short, each out-of-scope kind; three draws below
the whole), the held-out set all of its own. Whether more requests of the same making would
lower the held-out false positives, or the signals are what stops them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import abstain_train as at
from toolroute.route.abstain_signals import FEATURES

SIZES = (
    {"rounds": 100, "rate": 0.05, "depth": 2, "leaf": 20},
    {"rounds": 75, "rate": 0.1, "depth": 3, "leaf": 20},
    {"rounds": 150, "rate": 0.05, "depth": 3, "leaf": 20},
    {"rounds": 150, "rate": 0.05, "depth": 3, "leaf": 50},
    {"rounds": 150, "rate": 0.05, "depth": 4, "leaf": 20},
    {"rounds": 300, "rate": 0.05, "depth": 3, "leaf": 20},
)


SHARES = (0.25, 0.5, 0.75, 1.0)
DRAWS = 3


def _subsample(d: dict[str, Any], share: float, rng: np.random.Generator) -> dict[str, Any]:
    """``share`` of a set's rows of each kind, drawn at random."""
    keep = np.zeros(len(d["kind"]), bool)
    for k in np.unique(d["kind"]):
        rows = np.flatnonzero(d["kind"] == k)
        n = max(1, round(share * rows.size))
        keep[rng.choice(rows, n, replace=False)] = True
    return {k: (v[keep] if isinstance(v, np.ndarray) else v) for k, v in d.items()}


def held_out_figures(
    sets: dict[str, dict[str, Any]], names: Sequence[str] = at.SETS
) -> tuple[list[float], list[float]]:
    """Per held-out set of ``names``, the share of its out-of-scope requests answered and the
    R@5 lost, in ``default`` mode."""
    fps, costs = [], []
    for name in names:
        train = [n for n in sets if not at.shares_catalog(n, name)]
        xs = at.with_oos_gap(sets, train, FEATURES)
        model = at.fit(*at.weights_of(sets, xs, train))
        t = at.threshold(model, sets, xs, train, at.BUDGETS)["default"]
        kind, r5 = sets[name]["kind"], sets[name]["r5"]
        answered = at.probabilities(model, xs[name]) >= t
        fps.append(float(answered[np.isin(kind, at.OUT_KINDS)].mean()))
        costs.append(at.cost(answered.astype(float), r5, kind == "in", 0.5))
    return fps, costs


def curve(sets: dict[str, dict[str, Any]]) -> list[str]:
    lines = [
        "`python -m benchmarks.abstain_grid --cache DIR --curve` (held out, `default` mode, "
        f"the shipped size; below the whole, the mean of {DRAWS} draws; FP and R@5 lost per "
        "set in the order " + ", ".join(at.SETS) + ")",
        "",
        "| share of training rows | FP per set | mean FP | R@5 lost per set | mean lost |",
        "|---:|---|---:|---|---:|",
    ]
    for share in SHARES:
        runs = []
        for draw in range(1 if share == 1.0 else DRAWS):
            rng = np.random.default_rng(draw)
            per_fold_fp, per_fold_cost = [], []
            for name in at.SETS:
                sub = {
                    n: d if at.shares_catalog(n, name) else _subsample(d, share, rng)
                    for n, d in sets.items()
                }
                fps, costs = held_out_figures(sub, [name])
                per_fold_fp += fps
                per_fold_cost += costs
            runs.append((per_fold_fp, per_fold_cost))
        fp = np.mean([r[0] for r in runs], axis=0)
        lost = np.mean([r[1] for r in runs], axis=0)
        lines.append(
            f"| {share:.2f} | {' '.join(f'{f:.3f}' for f in fp)} | {fp.mean():.3f} "
            f"| {' '.join(f'{c:.3f}' for c in lost)} | {lost.mean():.3f} |"
        )
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--cache", type=Path, required=True, help="abstain_train's --cache DIR")
    ap.add_argument("--curve", action="store_true", help="the learning curve instead")
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
    if args.curve:
        return _write(curve(sets), args.out)
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
        fps, costs = held_out_figures(sets)
        _, _, ship = at.shipped(sets, FEATURES, at.BUDGETS)
        test = f"{ship['default']['test_fp']:.3f} / {ship['strict']['test_fp']:.3f}"
        mark = " (shipped)" if size == shipped else ""
        lines.append(
            f"| {size['rounds']}{mark} | {size['rate']} | {size['depth']} | {size['leaf']} "
            f"| {' '.join(f'{f:.3f}' for f in fps)} | {np.mean(fps):.3f} "
            f"| {' '.join(f'{c:.3f}' for c in costs)} | {max(costs):.3f} | {test} |"
        )
    at.TREES.update(shipped)
    return _write(lines, args.out)


def _write(lines: list[str], out: Path | None) -> int:
    text = "\n".join(lines) + "\n"
    if out:
        out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
