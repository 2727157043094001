"""Train and measure the abstention model ("no tool fits", route/abstain.py).

    python -m benchmarks.abstain_train [--sets a,b] [--store DIR] [--cache DIR]
        [--out benchmarks/results/abstain.md] [--json FILE] [--write-model]

Per set (the five folders of ../shared/benchmarks and the union catalog with our union
queries), ``default`` with abstention off ranks every in-scope query and every request of
``benchmarks/out_of_scope/<set>.jsonl``; for each one the script keeps the abstention signals
and the in-scope query's R@5. Then:

- **cross-set discipline**: for each held-out set the model is fitted, and its thresholds
  chosen, on the other sets only, leaving out every set that shares a catalog with it (the
  union holds livemcpbench, mcpbench and tool_attention: union is held out from them and
  they from union). The held-out set's figures are the honest ones: the share of its
  out-of-scope requests still answered with a tool (false positives), and its in-scope R@5
  with and without abstention, with the paired bootstrap 95 % interval of the difference
  (2,000 resamples, seed 0), for each mode;
- the trade-off curve on each held-out set: false positives and R@5 lost as the threshold
  moves;
- ``--write-model``: the model fitted on every set, written to
  src/toolroute/data/abstain.json (what the router ships).

Logistic regression (L2, Newton steps) on standardised signals; every set weighs the same,
and inside a set the in-scope and out-of-scope halves weigh the same. A mode's threshold is
the highest p whose R@5 cost is within its budget on every training set (default 0.01,
strict 0.03).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from toolroute.route.abstain import FEATURES

REPO = Path(__file__).resolve().parents[1]
# ../shared beside the repo; TOOLROUTE_SHARED names it from a checkout elsewhere
SHARED = Path(os.environ.get("TOOLROUTE_SHARED", REPO.parent / "shared")) / "benchmarks"
OOS = REPO / "benchmarks" / "out_of_scope"
SETS = ("livemcpbench", "mcpbench", "tool_attention", "sealtools", "metatool", "union")
UNION_PARTS = ("livemcpbench", "mcpbench", "tool_attention")
BUDGETS = {"default": 0.01, "strict": 0.03}
# the signals the model reads: all of route/abstain.py's FEATURES, chosen over the cosines
# less each catalog's background and over smaller sets by the held-out figures of every set
# (benchmarks/results/abstain.md)
USE = FEATURES
L2 = 10.0
"""Ridge on the standardised weights (1 and 10 tried under the same held-out measure)."""
Array = npt.NDArray[np.float64]


def queries_file(name: str) -> Path:
    if name == "union":
        return REPO / "benchmarks" / "union_queries.jsonl"
    return SHARED / name / "queries.jsonl"


def shares_catalog(a: str, b: str) -> bool:
    """The two sets' catalogs overlap (the union holds three of them)."""
    return a == b or (a == "union" and b in UNION_PARTS) or (b == "union" and a in UNION_PARTS)


def collect(name: str, store: Path, embedder: Any) -> dict[str, Any]:
    """Signals and R@5 of every in-scope and out-of-scope request of one set."""
    from toolroute.bench.metrics import query_metrics
    from toolroute.catalog import load_queries
    from toolroute.route.abstain import FEATURES, signals
    from toolroute.route.strategy import RouteParams, resolve_strategy
    from toolroute.router import Router, top_k

    strat = resolve_strategy("default")
    rows: dict[str, list[Any]] = {
        "x": [],
        "label": [],
        "r5": [],
        "kind": [],
        "query": [],
        "top": [],
    }
    with Router(
        SHARED / name / "catalog.json",
        store=store,
        embedder=embedder,
        params=RouteParams(abstain="off"),
    ) as r:
        r.index()
        inscope = [(q.text, list(q.groups), "in") for q in load_queries(queries_file(name))]
        out = [
            (d["query"], [], d["kind"])
            for d in map(json.loads, (OOS / f"{name}.jsonl").read_text().splitlines())
        ]
        for text, groups, kind in inscope + out:
            scores = r.scores(text, "default")
            ctx = r.query_context(text, strat.embeds)
            ctx = type(ctx)(
                text=ctx.text,
                vector=ctx.vector,
                intents=ctx.intents,
                intent_vectors=ctx.intent_vectors,
                embed=lambda texts: r.embedder.embed(texts),
            )
            sig = signals(r.built, ctx, scores)
            top = [r.built.keys[i] for i in top_k(scores, 10)]
            rows["x"].append([sig[f] for f in FEATURES])
            rows["label"].append(1 if groups else 0)
            rows["r5"].append(query_metrics(top, groups)["recall@5"] if groups else 0.0)
            rows["kind"].append(kind)
            rows["query"].append(text)
            rows["top"].append([list(k) for k in top])
    return rows


def weights_of(sets: dict[str, dict[str, Any]], names: Sequence[str]) -> tuple[Array, Array, Array]:
    """Stacked (x, label, sample weight): each set weighs 1, half in-scope, half out."""
    xs, ys, ws = [], [], []
    for n in names:
        x = np.asarray(sets[n]["x"], dtype=np.float64)
        y = np.asarray(sets[n]["label"], dtype=np.float64)
        w = np.where(y == 1, 0.5 / max(1, int(y.sum())), 0.5 / max(1, int((1 - y).sum())))
        xs.append(x)
        ys.append(y)
        ws.append(w)
    return np.vstack(xs), np.concatenate(ys), np.concatenate(ws)


def fit(x: Array, y: Array, w: Array, l2: float = L2) -> tuple[Array, Array, Array, float]:
    """(mean, scale, weights, bias) of an L2 logistic regression on standardised x."""
    mean = np.average(x, axis=0, weights=w)
    scale = np.sqrt(np.average((x - mean) ** 2, axis=0, weights=w))
    scale[scale == 0] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    beta = np.zeros(z.shape[1])
    w = w / w.sum() * len(w)
    reg = np.full(z.shape[1], l2 / len(w))
    reg[-1] = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ beta, -50, 50)))
        grad = z.T @ (w * (p - y)) / len(w) + reg * beta
        hess = (z * (w * p * (1 - p))[:, None]).T @ z / len(w) + np.diag(reg + 1e-9)
        step = np.linalg.solve(hess, grad)
        beta -= step
        if float(np.abs(step).max()) < 1e-8:
            break
    return mean, scale, beta[:-1], float(beta[-1])


def probabilities(model: tuple[Array, Array, Array, float], x: Array) -> Array:
    mean, scale, weights, bias = model
    logit = ((x - mean) / scale) @ weights + bias
    out: Array = 1.0 / (1.0 + np.exp(-np.clip(logit, -50, 50)))
    return out


def cost(p: Array, r5: Array, label: Array, t: float) -> float:
    """R@5 lost on the in-scope queries when every p < t is refused."""
    inscope = label == 1
    return float((r5[inscope] * (p[inscope] < t)).sum() / max(1, int(inscope.sum())))


def threshold(
    model: tuple[Array, Array, Array, float], sets: dict[str, dict[str, Any]], names: Sequence[str]
) -> dict[str, float]:
    """Per mode: the highest p whose R@5 cost is within budget on every training set."""
    per = []
    for n in names:
        x = np.asarray(sets[n]["x"], dtype=np.float64)
        per.append(
            (
                probabilities(model, x),
                np.asarray(sets[n]["r5"]),
                np.asarray(sets[n]["label"], dtype=np.float64),
            )
        )
    grid = np.unique(np.concatenate([p for p, _, _ in per] + [np.array([0.0])]))
    out: dict[str, float] = {}
    for mode, budget in BUDGETS.items():
        best = 0.0
        for t in grid:
            if all(cost(p, r5, y, float(t)) <= budget for p, r5, y in per):
                best = float(t)
            else:
                break
        out[mode] = best
    return out


def paired(a: Array, b: Array, rounds: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    d = a - b
    if not d.size:
        return 0.0, 0.0, 0.0
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, d.size, (rounds, d.size))].mean(axis=1)
    return float(d.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def held_out(sets: dict[str, dict[str, Any]], name: str) -> dict[str, Any]:
    train = [n for n in sets if not shares_catalog(n, name)]
    x, y, w = weights_of(sets, train)
    model = fit(x, y, w)
    ts = threshold(model, sets, train)
    hx = np.asarray(sets[name]["x"], dtype=np.float64)
    hy = np.asarray(sets[name]["label"], dtype=np.float64)
    r5 = np.asarray(sets[name]["r5"])
    p = probabilities(model, hx)
    kinds = np.asarray(sets[name]["kind"])
    res: dict[str, Any] = {"trained_on": train, "thresholds": ts, "modes": {}, "curve": []}
    base = r5[hy == 1]
    for mode, t in [("off", -1.0), *ts.items()]:
        answered = p >= t
        after = base * answered[hy == 1]
        res["modes"][mode] = {
            "fp": float(answered[hy == 0].mean()),
            "fp_by_kind": {
                k: float(answered[(hy == 0) & (kinds == k)].mean())
                for k in ("far", "near", "none")
                if ((hy == 0) & (kinds == k)).any()
            },
            "r5": float(after.mean()),
            "r5_off": float(base.mean()),
            "diff": paired(after, base),
            "refused_in_scope": int((~answered[hy == 1]).sum()),
        }
    for t in np.quantile(p, np.linspace(0, 0.6, 25)):
        answered = p >= t
        res["curve"].append(
            {
                "t": float(t),
                "fp": float(answered[hy == 0].mean()),
                "r5_loss": float(base.mean() - (base * answered[hy == 1]).mean()),
            }
        )
    res["p"] = p.tolist()
    return res


def render(sets: dict[str, dict[str, Any]], folds: dict[str, dict[str, Any]], head: str) -> str:
    lines = [
        head,
        "",
        "Held-out figures: each set's model was fitted and its thresholds chosen on the sets "
        "that share no catalog with it (`trained on`). FP = out-of-scope requests still "
        "answered with ≥ 1 tool. ΔR@5 = paired mean difference against abstention off "
        "[95 % bootstrap interval].",
        "",
        "| held-out set | in / out | trained on | mode | threshold | FP (far / near / none) "
        "| R@5 | ΔR@5 [95 % CI] | in-scope refused |",
        "|---|---|---|---|---:|---|---:|---|---:|",
    ]
    for name, f in folds.items():
        n_in = int(np.sum(sets[name]["label"]))
        n_out = len(sets[name]["label"]) - n_in
        for mode, m in f["modes"].items():
            by = " / ".join(f"{v:.2f}" for v in m["fp_by_kind"].values())
            d, lo, hi = m["diff"]
            t = "–" if mode == "off" else f"{f['thresholds'][mode]:.3f}"
            lines.append(
                f"| {name} | {n_in} / {n_out} | {', '.join(f['trained_on'])} | {mode} | {t} "
                f"| {m['fp']:.3f} ({by}) | {m['r5']:.3f} | {d:+.3f} [{lo:+.3f}, {hi:+.3f}] "
                f"| {m['refused_in_scope']} |"
            )
    lines += ["", "Trade-off on each held-out set (threshold on p; FP; R@5 lost):", ""]
    for name, f in folds.items():
        pts = sorted({(round(c["fp"], 3), round(c["r5_loss"], 3)) for c in f["curve"]})
        lines.append(f"- {name}: " + ", ".join(f"FP {a:.2f} / −{b:.3f}" for a, b in pts))
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--store", type=Path, default=REPO / ".toolroute" / "bench-store")
    ap.add_argument("--cache", type=Path, default=None, help="reuse/keep signals here")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--write-model", action="store_true")
    ap.add_argument("--features", default=",".join(USE), help="the signals the model reads")
    args = ap.parse_args()
    if not SHARED.is_dir():
        print(f"error: {SHARED} not found (../shared missing)", file=sys.stderr)
        return 2
    names = args.sets.split(",")
    unknown = [n for n in names if n not in SETS]
    if unknown:
        print(f"error: unknown set {unknown[0]!r}; choose from {', '.join(SETS)}", file=sys.stderr)
        return 2

    from toolroute.embed.onnx import OnnxEmbedder

    embedder = OnnxEmbedder()
    t0 = time.perf_counter()
    sets: dict[str, dict[str, Any]] = {}
    for name in names:
        cached = args.cache / f"{name}.json" if args.cache else None
        if cached is not None and cached.exists():
            sets[name] = json.loads(cached.read_text())
        else:
            sets[name] = collect(name, args.store, embedder)
            if cached is not None:
                cached.parent.mkdir(parents=True, exist_ok=True)
                cached.write_text(json.dumps(sets[name]))
        print(f"{name}: signals at {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    from toolroute.route.abstain import FEATURES

    use = args.features.split(",")
    if set(use) - set(FEATURES):
        print(f"error: --features: choose from {', '.join(FEATURES)}", file=sys.stderr)
        return 2
    cols = [FEATURES.index(f) for f in use]
    for d in sets.values():
        d["x"] = [[row[c] for c in cols] for row in d["x"]]
    folds = {name: held_out(sets, name) for name in names}
    cached = " (signals read from the cache a full run wrote)" if args.cache else ""
    head = (
        f"`python -m benchmarks.abstain_train {' '.join(sys.argv[1:])}` "
        f"({time.perf_counter() - t0:.0f} s{cached}, default with abstention off, MiniLM int8)"
    )
    text = render(sets, folds, head)
    if args.write_model:
        x, y, w = weights_of(sets, names)
        model = fit(x, y, w)
        ts = threshold(model, sets, names)
        mean, scale, weights, bias = model
        payload = {
            "format": 1,
            "features": use,
            "mean": mean.tolist(),
            "scale": scale.tolist(),
            "weights": weights.tolist(),
            "bias": bias,
            "thresholds": ts,
            "embedder": embedder.model_id,
            "trained_on": names,
        }
        path = REPO / "src" / "toolroute" / "data" / "abstain.json"
        path.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
        text += "\nShipped model (every set): " + ", ".join(
            f"{f} {wt:+.2f}" for f, wt in zip(use, weights, strict=True)
        )
        text += f"; thresholds {ts}\n"
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    if args.json:
        args.json.write_text(
            json.dumps({n: {k: v for k, v in f.items() if k != "p"} for n, f in folds.items()})
            + "\n",
            encoding="utf-8",
        )
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
