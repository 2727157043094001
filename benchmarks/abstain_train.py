"""Train and measure the abstention model ("no tool fits", route/abstain.py).

    python -m benchmarks.abstain_train [--sets a,b] [--store DIR] [--cache DIR]
        [--out benchmarks/results/abstain.md] [--json FILE]
        [--write-model [--model-out DIR] [--model-name abstain]]
        [--features a,b] [--budget-default 0.01] [--boxes-fit-only]

The embedding model is the router's: today's default, or the folder ``TOOLROUTE_EMBED_MODEL``
names (a fine-tuned embedder); the model written records its ``model_id``, and the router
applies it only over that model's vectors. Cached signals record the model too: a cache of
another model's signals is refused, not mixed in.

Per set (the five folders of ../shared/benchmarks and the union catalog with our union
queries), ``default`` with abstention off ranks every in-scope query, the short requests of
``benchmarks/in_scope/<set>.jsonl`` where there are some (written here as people type them:
the benchmark sets' own queries are long or templated, so without these a model learns that
a short request is out of scope), and every request of ``benchmarks/out_of_scope/<set>.jsonl``;
for each one the script keeps the abstention signals, the query vector and its R@5. The union
also ranks ``benchmarks/out_of_scope/union_test.jsonl``, which nothing is fitted or chosen on.
Then:

- **cross-set discipline**: for each held-out set the model is fitted, and its thresholds
  chosen, on the other sets only, leaving out every set that shares a catalog with it (the
  union holds livemcpbench, mcpbench and tool_attention: union is held out from them and
  they from union). The held-out set's figures are the honest ones: the share of its
  out-of-scope requests still answered with a tool (false positives), and its in-scope R@5
  with and without abstention, with the paired bootstrap 95 % interval of the difference
  (2,000 resamples, seed 0), for each mode;
- ``oos_gap`` compares a request with the out-of-scope requests of the training sets: a
  training row with those of the *other* training sets (its own set's would hold itself, and
  a held-out catalog has none of its own among them), a held-out row with all of them;
- the trade-off curve on each held-out set: false positives and R@5 lost as the threshold
  moves;
- ``union_test``: its false-positive rate under the union's held-out model and under the
  model fitted on every set (the one shipped);
- the shipped model's thresholds also keep the budget on each set as the router meets it,
  beside its own set's out-of-scope requests: a near request of a catalog sits by requests
  that catalog serves ("register a domain" by "when does the domain's registration expire");
- ``--write-model``: the model fitted on every set, written to
  src/toolroute/data/abstain.json, with the vectors of every set's out-of-scope requests (not
  union_test's) in abstain_requests.npy beside it (what the router ships); with
  ``--model-out DIR``, to DIR instead (a candidate measured before it ships); with
  ``--model-name abstain_minilm``, as abstain_minilm.json and abstain_minilm_requests.npy (the
  model shipped for the plain MiniLM, ``TOOLROUTE_EMBED_MODEL=minilm``).

With ``--sets …,sgd_box,clinc_box`` the small toolboxes built from the sources' dev splits
(``BOX_SETS``) join the fit: each request is routed over its own box of 1-20 tools, as the
router meets the most common real set-up; ``--boxes-fit-only`` lets them teach the model without
their recall budgets choosing its thresholds.

Logistic regression (L2, Newton steps) on standardised signals; every set weighs the same;
inside a set the in-scope and out-of-scope halves weigh the same, and the short requests take
half of the in-scope half where a set has them. A mode's threshold is the highest p whose R@5
cost is within its budget on every training set's queries (default 0.01, strict 0.03), and
within the budget plus 0.02 on its short requests (40 to 120 of them: one refusal of 40 is
0.025).
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

from benchmarks._report import missing, unknown
from toolroute.route.abstain_signals import FEATURES

REPO = Path(__file__).resolve().parents[1]
# ../shared beside the repo; TOOLROUTE_SHARED names it from a checkout elsewhere
SHARED = Path(os.environ.get("TOOLROUTE_SHARED", REPO.parent / "shared")) / "benchmarks"
OOS = REPO / "benchmarks" / "out_of_scope"
SHORT = REPO / "benchmarks" / "in_scope"
SETS = ("livemcpbench", "mcpbench", "tool_attention", "sealtools", "metatool", "union")
BOX_SETS = ("sgd_box", "clinc_box", "mcp_box")
"""Small toolboxes, each request routed over its own box of 1-20 tools: how the check meets
the most common real set-up. Opt-in (``--sets``). ``sgd_box`` and ``clinc_box`` come from the
sources' dev splits (``small_toolbox build --split dev``: SGD dev, CLINC val; no model trained
on their requests) and share their out-of-scope requests (CLINC's), so each is held out from
the other. ``mcp_box`` is the union's short requests over their own server of at most 20 tools
and over the rest of it (``small_toolbox build-mcp``: real MCP servers, each near request an
operation its server lacks); it shares the union's requests, so it is held out with the union
and its parts, and its near requests are no out-of-scope requests for ``oos_gap`` (each is
in scope of the union)."""
NOT_REQUESTS = ("mcp_box",)
BOX_KINDS = {"servable": "in", "removed": "near", "oos": "far"}
UNION_PARTS = ("livemcpbench", "mcpbench", "tool_attention")
TEST = "union_test"
"""The union's second out-of-scope set: measured, never fitted or chosen on."""
BUDGETS = {"default": 0.01, "strict": 0.03}
SHORT_SLACK = 0.02
"""Beyond the budget on a set's short requests: one refusal of 40 (0.025) stays within it."""
SHORT_WEIGHT = 0.5
OUT_KINDS = ("far", "near", "none")
# the signals the model reads, chosen by the held-out figures of every set
# (benchmarks/results/abstain.md): every signal route/abstain_signals.py computes but
# log_tools, which only the toolbox sets vary (``--features`` adds it), so that the shipped
# models' commands still give them byte for byte
USE = tuple(f for f in FEATURES if f != "log_tools")
COMPUTED = tuple(f for f in FEATURES if f != "oos_gap")
"""The signals computed per request (``oos_gap`` is derived later, per training fold)."""
L2 = 10.0
"""Ridge on the standardised weights (1 and 10 tried under the same held-out measure)."""
Array = npt.NDArray[np.float64]


def queries_file(name: str) -> Path:
    if name == "union":
        return REPO / "benchmarks" / "union_queries.jsonl"
    return SHARED / name / "queries.jsonl"


def shares_catalog(a: str, b: str) -> bool:
    """The two sets' catalogs overlap (the union holds three of them), or their requests do
    (the two toolbox sets share CLINC's out-of-scope ones)."""
    return (
        a == b
        or (a == "union" and b in UNION_PARTS)
        or (b == "union" and a in UNION_PARTS)
        or {a, b} == {"sgd_box", "clinc_box"}
        or ("mcp_box" in (a, b) and {a, b} & {"union", *UNION_PARTS})
    )


def short_files(name: str) -> list[tuple[str, str]]:
    """(in_scope file stem, server id prefix) of a set's short requests: the union's are its
    parts', their servers named as the union names them (``livemcpbench/airbnb``)."""
    parts = [(p, f"{p}/") for p in UNION_PARTS] if name == "union" else [(name, "")]
    return [(p, pre) for p, pre in parts if (SHORT / f"{p}.jsonl").exists()]


def collect(name: str, store: Path, embedder: Any) -> dict[str, Any]:
    """Signals, vector and R@5 of every in-scope and out-of-scope request of one set."""
    if name in BOX_SETS:
        return collect_boxes(name, store, embedder)
    from toolroute.catalog import load_queries
    from toolroute.route.strategy import RouteParams
    from toolroute.router import Router

    rows: dict[str, list[Any]] = {k: [] for k in ("x", "vec", "label", "r5", "kind", "query")}
    with Router(
        SHARED / name / "catalog.json",
        store=store,
        embedder=embedder,
        params=RouteParams(abstain="off"),
    ) as r:
        r.index()
        cases = [(q.text, list(q.groups), "in") for q in load_queries(queries_file(name))]
        for part, prefix in short_files(name):
            for q in load_queries(SHORT / f"{part}.jsonl"):
                groups = [frozenset((prefix + s, t) for s, t in g) for g in q.groups]
                cases.append((q.text, groups, "short"))
        files = [OOS / f"{name}.jsonl"] + ([OOS / f"{TEST}.jsonl"] if name == "union" else [])
        for f in files:
            tag = "test:" if f.stem == TEST else ""
            out = map(json.loads, f.read_text().splitlines())
            cases.extend((d["query"], [], tag + d["kind"]) for d in out)
        for text, groups, kind in cases:
            _row(rows, r, text, groups, kind)
    return rows


def _row(rows: dict[str, list[Any]], r: Any, text: str, groups: list, kind: str) -> None:
    """One request's signals (abstention off), vector and R@5 over router ``r``."""
    from toolroute.bench.metrics import query_metrics
    from toolroute.route.abstain_signals import signals
    from toolroute.route.strategy import resolve_strategy
    from toolroute.router import top_k

    scores = r.scores(text, "default")
    ctx = r.query_context(text, resolve_strategy("default").embeds)
    ctx = type(ctx)(
        text=ctx.text,
        vector=ctx.vector,
        intents=ctx.intents,
        intent_vectors=ctx.intent_vectors,
        embed=lambda texts: r.embedder.embed(texts),
    )
    sig = signals(r.built, ctx, scores, features=COMPUTED)
    top = [r.built.keys[i] for i in top_k(scores, 10)]
    rows["x"].append([sig.get(f, 0.0) for f in FEATURES])
    rows["vec"].append([round(float(v), 6) for v in ctx.vector])
    rows["label"].append(1 if groups else 0)
    rows["r5"].append(query_metrics(top, groups)["recall@5"] if groups else 0.0)
    rows["kind"].append(kind)
    rows["query"].append(text)


def collect_boxes(name: str, store: Path, embedder: Any) -> dict[str, Any]:
    """As :func:`collect`, for a toolbox set: each request over its own box."""
    from benchmarks.small_toolbox import HERE, MCP_FOLDER, _box_catalog
    from toolroute.route.strategy import RouteParams
    from toolroute.router import Router

    folder, stem = (MCP_FOLDER, "mcp") if name == "mcp_box" else (HERE, name[:-4] + "_dev")
    path = folder / f"{stem}.jsonl"
    if not path.exists():
        how = "build-mcp" if name == "mcp_box" else "build --split dev"
        sys.exit(f"error: {path} missing: python -m benchmarks.small_toolbox {how}")
    catalog = json.loads((folder / f"{stem}_catalog.json").read_text())
    measured = (
        set()
        if name == "mcp_box"
        else {
            json.loads(x)["query"] for x in (HERE / f"{stem[:-4]}.jsonl").read_text().splitlines()
        }
    )
    rows: dict[str, list[Any]] = {k: [] for k in ("x", "vec", "label", "r5", "kind", "query")}
    for line in path.read_text().splitlines():
        d = json.loads(line)
        if d["query"] in measured:  # a stock reply ("I want to book it") the test set holds too
            continue
        if name == "mcp_box" and d["kind"] == "oos":  # union_test's: never fitted on
            continue
        cat = _box_catalog(catalog, d["toolbox"])
        rel = frozenset((x["server"], x["tool"]) for x in d["relevant"])
        params = RouteParams(abstain="off")
        with Router(cat, store=store, embedder=embedder, params=params) as r:
            r.index()
            _row(rows, r, d["query"], [rel] if rel else [], BOX_KINDS[d["kind"]])
    return rows


def _arrays(sets: dict[str, dict[str, Any]]) -> None:
    for d in sets.values():
        for k in ("x", "vec", "r5", "label"):
            d[k] = np.asarray(d[k], dtype=np.float64)
        d["kind"] = np.asarray(d["kind"])


def requests_of(sets: dict[str, dict[str, Any]], names: Sequence[str]) -> Array:
    """The vectors of the named sets' out-of-scope requests (union_test's never)."""
    parts = [
        sets[n]["vec"][np.isin(sets[n]["kind"], OUT_KINDS)] for n in names if n not in NOT_REQUESTS
    ]
    return np.vstack(parts) if parts else np.zeros((0, 1))


def oos_gap(d: dict[str, Any], requests: Array) -> Array:
    """``oos_gap`` of a set's rows against ``requests`` (route/abstain_signals.py's: the mean
    cosine of the nearest known out-of-scope requests, less ``cos1``)."""
    from toolroute.route.abstain_signals import NEAREST_REQUESTS

    sims = d["vec"] @ requests.T
    k = min(NEAREST_REQUESTS, sims.shape[1])
    near: Array = np.sort(sims, axis=1)[:, -k:].mean(axis=1)
    return near - d["x"][:, FEATURES.index("cos1")]


def with_oos_gap(
    sets: dict[str, dict[str, Any]], train: Sequence[str], use: Sequence[str], own: bool = False
) -> dict[str, Array]:
    """Each set's feature matrix in ``use`` order; ``oos_gap`` against the training sets'
    out-of-scope requests, a training set's own left out unless ``own`` (module docstring)."""
    out: dict[str, Array] = {}
    cols = [FEATURES.index(f) for f in use]
    for n, d in sets.items():
        x = d["x"][:, cols].copy()
        if "oos_gap" in use:
            reqs = requests_of(sets, [t for t in train if own or t != n])
            x[:, list(use).index("oos_gap")] = oos_gap(d, reqs)
        out[n] = x
    return out


def weights_of(
    sets: dict[str, dict[str, Any]], xs: dict[str, Array], names: Sequence[str]
) -> tuple[Array, Array, Array]:
    """Stacked (x, label, sample weight): each set weighs 1, half in-scope, half out; the
    short requests take half of the in-scope half where there are some."""
    X, Y, W = [], [], []
    for n in names:
        kind, y = sets[n]["kind"], sets[n]["label"]
        inn, short, out = kind == "in", kind == "short", np.isin(kind, OUT_KINDS)
        w = np.zeros(len(y))
        share = SHORT_WEIGHT if short.any() else 0.0
        w[inn] = 0.5 * (1 - share) / max(1, int(inn.sum()))
        w[short] = 0.5 * share / max(1, int(short.sum()))
        w[out] = 0.5 / max(1, int(out.sum()))
        m = w > 0
        X.append(xs[n][m])
        Y.append(y[m])
        W.append(w[m])
    return np.vstack(X), np.concatenate(Y), np.concatenate(W)


class Logistic:
    """L2 logistic regression (Newton steps) on standardised x."""

    def __init__(self, x: Array, y: Array, w: Array, l2: float = L2) -> None:
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
        self.mean, self.scale, self.weights, self.bias = mean, scale, beta[:-1], float(beta[-1])

    def p(self, x: Array) -> Array:
        logit = ((x - self.mean) / self.scale) @ self.weights + self.bias
        out: Array = 1.0 / (1.0 + np.exp(-np.clip(logit, -50, 50)))
        return out

    def payload(self) -> dict[str, Any]:
        return {
            "format": 2,
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
            "weights": self.weights.tolist(),
            "bias": self.bias,
        }

    def describe(self, use: Sequence[str]) -> str:
        return ", ".join(f"{f} {wt:+.2f}" for f, wt in zip(use, self.weights, strict=True))


class Boosted:
    """Gradient-boosted trees (scikit-learn's HistGradientBoostingClassifier, the ``train``
    extra) on the raw signals: a request near a server is one whose verb no tool of it
    names *and* whose topic it owns, an interaction a linear model cannot draw."""

    def __init__(self, x: Array, y: Array, w: Array) -> None:
        try:
            from sklearn.ensemble import HistGradientBoostingClassifier
        except ImportError:
            sys.exit("error: --learner trees needs scikit-learn: pip install -e '.[train]'")
        self.clf = HistGradientBoostingClassifier(
            max_iter=TREES["rounds"],
            learning_rate=TREES["rate"],
            max_depth=TREES["depth"],
            min_samples_leaf=TREES["leaf"],
            l2_regularization=1.0,
            random_state=0,
        )
        self.clf.fit(x, y, sample_weight=w / w.mean())

    def p(self, x: Array) -> Array:
        out: Array = self.clf.predict_proba(x)[:, 1]
        return out

    def payload(self) -> dict[str, Any]:
        """The trees as route/abstain_model.py's ``Tree`` reads them (scikit-learn's private
        ``_predictors`` and ``_baseline_prediction``: the train extra bounds its version)."""
        trees = []
        for (pred,) in self.clf._predictors:
            n = pred.nodes
            trees.append(
                {
                    "feature": n["feature_idx"].tolist(),
                    "threshold": n["num_threshold"].tolist(),
                    "left": n["left"].tolist(),
                    "right": n["right"].tolist(),
                    "value": n["value"].tolist(),
                    "leaf": n["is_leaf"].astype(bool).tolist(),
                    "missing_left": n["missing_go_to_left"].astype(bool).tolist(),
                }
            )
        return {
            "format": 3,
            "trees": trees,
            "bias": float(np.ravel(self.clf._baseline_prediction)[0]),
        }

    def describe(self, use: Sequence[str]) -> str:
        return f"{len(self.clf._predictors)} trees of depth ≤ {TREES['depth']}"


LEARNERS = {"logistic": Logistic, "trees": Boosted}
TREES = {"rounds": 75, "rate": 0.1, "depth": 3, "leaf": 20}
"""The boosted trees' size: of the sizes ``benchmarks.abstain_grid`` compares under the
held-out measure, the one that answers fewer out-of-scope requests than the smaller trees and
loses less recall than the bigger ones (benchmarks/results/abstain_grid.md)."""
LEARNER: list[Any] = [Logistic]
"""The learner in use (``--learner``)."""


def fit(x: Array, y: Array, w: Array) -> Any:
    return LEARNER[0](x, y, w)


def probabilities(model: Any, x: Array) -> Array:
    out: Array = model.p(x)
    return out


def cost(p: Array, r5: Array, inscope: Array, t: float) -> float:
    """R@5 lost on the ``inscope`` rows when every p < t is refused."""
    return float((r5[inscope] * (p[inscope] < t)).sum() / max(1, int(inscope.sum())))


def threshold(
    model: Any,
    sets: dict[str, dict[str, Any]],
    xs: dict[str, Array],
    names: Sequence[str],
    budgets: dict[str, float],
) -> dict[str, float]:
    """Per mode: the highest p whose R@5 cost is within budget on every training set (and
    within budget plus the slack on its short requests)."""
    per = []
    for n in names:
        p, r5, kind = probabilities(model, xs[n]), sets[n]["r5"], sets[n]["kind"]
        per.append((p, r5, kind == "in", 0.0))
        if (kind == "short").any():
            per.append((p, r5, kind == "short", SHORT_SLACK))
    grid = np.unique(np.concatenate([p for p, _, _, _ in per] + [np.array([0.0])]))
    out: dict[str, float] = {}
    for mode, budget in budgets.items():
        best = 0.0
        for t in grid:
            if all(cost(p, r5, m, float(t)) <= budget + slack for p, r5, m, slack in per):
                best = float(t)
            else:
                break
        out[mode] = best
    return out


BOXES_CHOOSE: list[bool] = [True]
"""Whether the toolbox sets' recall budgets bind the thresholds too (``--boxes-fit-only``:
they teach the model, the catalogs choose its thresholds)."""


def _chooses(names: Sequence[str]) -> list[str]:
    """The sets whose recall budget the thresholds keep."""
    return [n for n in names if BOXES_CHOOSE[0] or n not in BOX_SETS]


def paired(a: Array, b: Array, rounds: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    d = a - b
    if not d.size:
        return 0.0, 0.0, 0.0
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, d.size, (rounds, d.size))].mean(axis=1)
    return float(d.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def fp_by_kind(answered: Array, kind: Array, prefix: str = "") -> dict[str, float]:
    return {
        k: float(answered[kind == prefix + k].mean())
        for k in OUT_KINDS
        if (kind == prefix + k).any()
    }


def held_out(
    sets: dict[str, dict[str, Any]], name: str, use: Sequence[str], budgets: dict[str, float]
) -> dict[str, Any]:
    train = [n for n in sets if not shares_catalog(n, name)]
    xs = with_oos_gap(sets, train, use)
    model = fit(*weights_of(sets, xs, train))
    ts = threshold(model, sets, xs, _chooses(train), budgets)
    kind, r5 = sets[name]["kind"], sets[name]["r5"]
    p = probabilities(model, xs[name])
    inn, out = kind == "in", np.isin(kind, OUT_KINDS)
    test = np.char.startswith(kind.astype(str), "test:")
    res: dict[str, Any] = {"trained_on": train, "thresholds": ts, "modes": {}, "curve": []}
    base = r5[inn]
    for mode, t in [("off", -1.0), *ts.items()]:
        answered = p >= t
        after = base * answered[inn]
        res["modes"][mode] = {
            "fp": float(answered[out].mean()),
            "fp_by_kind": fp_by_kind(answered, kind),
            "r5": float(after.mean()),
            "r5_off": float(base.mean()),
            "diff": paired(after, base),
            "refused_in_scope": int((~answered[inn]).sum()),
        }
        if test.any():
            res["modes"][mode]["test_fp"] = float(answered[test].mean())
            res["modes"][mode]["test_fp_by_kind"] = fp_by_kind(answered, kind, "test:")
    for t in np.quantile(p[inn | out], np.linspace(0, 0.6, 25)):
        answered = p >= t
        res["curve"].append(
            {
                "t": float(t),
                "fp": float(answered[out].mean()),
                "r5_loss": float(base.mean() - (base * answered[inn]).mean()),
            }
        )
    return res


def shipped(
    sets: dict[str, dict[str, Any]], use: Sequence[str], budgets: dict[str, float]
) -> tuple[Any, dict[str, float], dict[str, Any]]:
    """The model fitted on every set, its thresholds, and its figures on union_test (and, in
    sample, on every set)."""
    names = list(sets)
    xs = with_oos_gap(sets, names, use)
    model = fit(*weights_of(sets, xs, names))
    # within budget on a catalog it has not met (each set's own requests left out) and on
    # these very catalogs, where the router meets their own requests too
    unseen = threshold(model, sets, xs, _chooses(names), budgets)
    met = threshold(model, sets, with_oos_gap(sets, names, use, own=True), _chooses(names), budgets)
    ts = {mode: min(unseen[mode], met[mode]) for mode in budgets}
    figures: dict[str, Any] = {}
    met_x = with_oos_gap(sets, names, use, own=True)
    for mode, t in ts.items():
        figures[mode] = {"sets": {}}
        for n in names:
            # the sets as the shipped router meets them (in sample: what it was fitted on)
            kind, r5 = sets[n]["kind"], sets[n]["r5"]
            answered = probabilities(model, met_x[n]) >= t
            inn, short = kind == "in", kind == "short"
            figures[mode]["sets"][n] = {
                "cost": cost(answered.astype(float), r5, inn, 0.5),
                "short_cost": cost(answered.astype(float), r5, short, 0.5) if short.any() else 0,
                "fp": float(answered[np.isin(kind, OUT_KINDS)].mean()),
            }
        if "union" in sets:
            # union_test meets the requests of every set, as the shipped router does
            kind = sets["union"]["kind"]
            test = np.char.startswith(kind.astype(str), "test:")
            answered = probabilities(model, met_x["union"]) >= t
            figures[mode]["test_fp"] = float(answered[test].mean())
            figures[mode]["test_fp_by_kind"] = fp_by_kind(answered, kind, "test:")
    return model, ts, figures


def check_written(
    model: Any,
    sets: dict[str, dict[str, Any]],
    use: Sequence[str],
    names: Sequence[str],
    path: Path,
) -> None:
    """The router's reading of the written model gives the trainer's p on every row."""
    from toolroute.route.abstain_model import load_model

    shipped_model = load_model(path)
    for n, x in with_oos_gap(sets, names, use, own=True).items():
        mine = probabilities(model, x)
        theirs = np.array([shipped_model.probability(row) for row in x])
        worst = float(np.abs(mine - theirs).max())
        if worst > 1e-6:
            sys.exit(f"error: the written model differs from the trained one on {n} ({worst})")


def evaluate(path: Path, sets: dict[str, dict[str, Any]]) -> str:
    """A model JSON as the router reads it (its own request vectors for ``oos_gap``), at its
    own thresholds, on every set's rows: R@5 lost on the set's queries and short requests,
    short requests refused, and the share of out-of-scope requests answered."""
    from toolroute.route.abstain_model import load_model

    model = load_model(path)
    lines = [
        "| set | mode | R@5 lost | short refused | short R@5 lost | FP |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for n, d in sets.items():
        x = d["x"][:, [FEATURES.index(f) for f in model.features]].copy()
        if "oos_gap" in model.features and model.requests is not None:
            reqs = np.asarray(model.requests, dtype=np.float64)
            x[:, model.features.index("oos_gap")] = oos_gap(d, reqs)
        p = np.array([model.probability(row) for row in x])
        kind, r5 = d["kind"], d["r5"]
        inn, short, out = kind == "in", kind == "short", np.isin(kind, OUT_KINDS)
        for mode, t in model.thresholds.items():
            answered = p >= t
            refused = (
                f"{int((~answered[short]).sum())} of {int(short.sum())}" if short.any() else "–"
            )
            lines.append(
                f"| {n} | {mode} | {cost(p, r5, inn, t):.3f} | {refused} "
                f"| {cost(p, r5, short, t) if short.any() else 0:.3f} "
                f"| {float(answered[out].mean()):.3f} |"
            )
    return "\n".join(lines) + "\n"


def render(
    sets: dict[str, dict[str, Any]],
    folds: dict[str, dict[str, Any]],
    head: str,
    ship: dict[str, Any] | None,
) -> str:
    lines = [
        head,
        "",
        "Held-out figures: each set's model was fitted and its thresholds chosen on the sets "
        "that share no catalog with it (`trained on`). FP = out-of-scope requests still "
        "answered with ≥ 1 tool. ΔR@5 = paired mean difference against abstention off "
        "[95 % bootstrap interval], on the set's own queries.",
        "",
        "| held-out set | in / out | trained on | mode | threshold | FP (far / near / none) "
        "| R@5 | ΔR@5 [95 % CI] | in-scope refused |",
        "|---|---|---|---|---:|---|---:|---|---:|",
    ]
    for name, f in folds.items():
        kind = sets[name]["kind"]
        n_in, n_out = int((kind == "in").sum()), int(np.isin(kind, OUT_KINDS).sum())
        for mode, m in f["modes"].items():
            by = " / ".join(f"{v:.2f}" for v in m["fp_by_kind"].values())
            d, lo, hi = m["diff"]
            t = "–" if mode == "off" else f"{f['thresholds'][mode]:.3f}"
            lines.append(
                f"| {name} | {n_in} / {n_out} | {', '.join(f['trained_on'])} | {mode} | {t} "
                f"| {m['fp']:.3f} ({by}) | {m['r5']:.3f} | {d:+.3f} [{lo:+.3f}, {hi:+.3f}] "
                f"| {m['refused_in_scope']} |"
            )
    if "union" in folds and "test_fp" in folds["union"]["modes"]["off"]:
        kind = sets["union"]["kind"]
        n = int(np.char.startswith(kind.astype(str), "test:").sum())
        lines += [
            "",
            f"`union_test` ({n} out-of-scope requests for the union catalog nothing was "
            "fitted or chosen on): FP (far / near / none)",
            "",
            "| model | mode | FP (far / near / none) |",
            "|---|---|---|",
        ]
        for mode, m in folds["union"]["modes"].items():
            by = " / ".join(f"{v:.2f}" for v in m["test_fp_by_kind"].values())
            lines.append(
                f"| union's held-out model ({', '.join(folds['union']['trained_on'])}) "
                f"| {mode} | {m['test_fp']:.3f} ({by}) |"
            )
        for mode, m in (ship or {}).items():
            by = " / ".join(f"{v:.2f}" for v in m["test_fp_by_kind"].values())
            lines.append(f"| shipped (every set) | {mode} | {m['test_fp']:.3f} ({by}) |")
    if ship:
        lines += [
            "",
            "The shipped model (fitted on every set) on every set as the router meets it, in "
            "sample: R@5 lost on the set's queries and on its short requests, and the share of "
            "its own out-of-scope requests answered",
            "",
            "| set | mode | R@5 lost | short R@5 lost | FP (in sample) |",
            "|---|---|---:|---:|---:|",
        ]
        for mode, m in ship.items():
            for n, f in m["sets"].items():
                lines.append(
                    f"| {n} | {mode} | {f['cost']:.3f} | {f['short_cost']:.3f} | {f['fp']:.3f} |"
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
    ap.add_argument(
        "--model-out",
        type=Path,
        default=None,
        help="with --write-model: write abstain.json and its requests here, not in src",
    )
    ap.add_argument(
        "--model-name",
        default="abstain",
        help="with --write-model: the files' stem (NAME.json, NAME_requests.npy)",
    )
    ap.add_argument("--features", default=",".join(USE), help="the signals the model reads")
    ap.add_argument("--budget-default", type=float, default=BUDGETS["default"])
    ap.add_argument(
        "--evaluate",
        type=Path,
        default=None,
        help="only measure this model JSON (as the router reads it) on the sets' requests",
    )
    ap.add_argument(
        "--learner", choices=sorted(LEARNERS), default="logistic", help="the model's kind"
    )
    ap.add_argument(
        "--boxes-fit-only",
        action="store_true",
        help="the toolbox sets teach the model but do not choose its thresholds",
    )
    args = ap.parse_args()
    BOXES_CHOOSE[0] = not args.boxes_fit_only
    if missing(SHARED):
        return 2
    names = args.sets.split(",")
    if unknown(names, SETS + BOX_SETS, "set"):
        return 2
    use = args.features.split(",")
    if set(use) - set(FEATURES):
        print(f"error: --features: choose from {', '.join(FEATURES)}", file=sys.stderr)
        return 2
    budgets = {**BUDGETS, "default": args.budget_default}
    LEARNER[0] = LEARNERS[args.learner]

    from toolroute.embed.onnx import MINILM_MODEL_ID, OnnxEmbedder

    embedder = OnnxEmbedder()
    t0 = time.perf_counter()
    sets: dict[str, dict[str, Any]] = {}
    read = 0
    for name in names:
        cached = args.cache / f"{name}.json" if args.cache else None
        if cached is not None and cached.exists():
            sets[name] = json.loads(cached.read_text())
            # caches written before the model was recorded hold the plain MiniLM's signals
            theirs = sets[name].pop("embedder", MINILM_MODEL_ID)
            if theirs != embedder.model_id:
                print(
                    f"error: {cached} holds signals of {theirs}, not of {embedder.model_id}",
                    file=sys.stderr,
                )
                return 2
            read += 1
        else:
            sets[name] = collect(name, args.store, embedder)
            if cached is not None:
                cached.parent.mkdir(parents=True, exist_ok=True)
                cached.write_text(json.dumps({**sets[name], "embedder": embedder.model_id}))
        print(f"{name}: signals at {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    _arrays(sets)
    if args.evaluate is not None:
        text = (
            f"`python -m benchmarks.abstain_train {' '.join(sys.argv[1:])}` (this tree's "
            f"signals; the model's own request vectors and thresholds)\n\n"
            + evaluate(args.evaluate, sets)
        )
        if args.out:
            args.out.write_text(text, encoding="utf-8")
        print(text)
        return 0
    folds = {name: held_out(sets, name, use, budgets) for name in names}
    model, ts, ship = shipped(sets, use, budgets)
    cached = " (signals read from the cache a full run wrote)" if read == len(names) else ""
    head = (
        f"`python -m benchmarks.abstain_train {' '.join(sys.argv[1:])}` "
        f"({time.perf_counter() - t0:.0f} s{cached}, default with abstention off, "
        f"embedder {embedder.model_id})"
    )
    text = render(sets, folds, head, ship)
    if args.write_model:
        data = args.model_out or REPO / "src" / "toolroute" / "data"
        data.mkdir(parents=True, exist_ok=True)
        payload = {
            **model.payload(),
            "features": use,
            "thresholds": ts,
            "embedder": embedder.model_id,
            "trained_on": names,
        }
        if "oos_gap" in use:
            payload["requests"] = f"{args.model_name}_requests.npy"
            vecs = requests_of(sets, names).astype(np.float16)
            np.save(data / payload["requests"], vecs)
        compact = "trees" in payload
        (data / f"{args.model_name}.json").write_text(
            json.dumps(payload, indent=None if compact else 1) + "\n", encoding="utf-8"
        )
        check_written(model, sets, use, names, data / f"{args.model_name}.json")
        text += f"\nShipped model (every set): {model.describe(use)}; thresholds {ts}\n"
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps({"folds": folds, "shipped": ship}) + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
