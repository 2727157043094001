"""Issue 24's budget target: "cost within 1.05x of `ehrr` at >= 3x its success" (small V).

    PYTHONPATH=src nice -n 10 python -m benchmarks.adaptive_budget --store DIR --stream zipf \
        --out benchmarks/results/adaptive/budget-zipf

The issue's market setting (livemcpbench, 3 vendors, oracle planner, n = 3, 2 attempts, shortlist
of `ehrr` 5 per vendor = 15 unless ``--servers-k``; Zipf: 2,000 tasks, tasks 1,500-2,000
reported; once: the 95 tasks once). One run holds `ehrr` and today's fixed-V variants
(``--fixed``, default `adaptive-lean` and `adaptive-budget`); then, per V of ``--value`` (the
router's ``value_usd``), each strategy of ``--sweep`` (default `adaptive-2`) runs with
``reserve`` (V is a reservation value: no vendor with V q < p is shown) and, per V of
``--plain`` (default: the same values; none with ``--no-plain``), as it is (V orders vendors
only). Every run draws the same worlds and streams from the seeds, so all runs pair with
`ehrr` seed by seed.

Both of the issue's payment rules are read: `ehrr` charged its tools' prices (``cost_usd``) or
Theorem 1's posted price tau_i per call (``cost_posted_usd``); a strategy that posts no price pays
its tools' prices under both. Per strategy and rule: the ratios of means against `ehrr` with a
95 % paired bootstrap interval over seeds (resampling seeds), and the target's margins
success - 3 x ehrr and cost - 1.05 x ehrr, each mean +- 95 % paired t half-width. Writes
``<out>.md`` and ``<out>.json`` (per-seed means of every run).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from toolroute.bench.agent import AgentRun
from toolroute.bench.simulate import run_simulation
from toolroute.bench.simulation import Simulation, ci95, stat_text
from toolroute.catalog.loader import load_queries
from toolroute.router import Router

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks" / "livemcpbench"
SUCCESS_TIMES, COST_TIMES = 3.0, 1.05
RULES = {"tool price": "cost_usd", "posted price (Theorem 1)": "cost_posted_usd"}


def _run(args: argparse.Namespace, strategies: list[str], **adaptive: Any) -> Simulation:
    with Router(SHARED / "catalog.json", store=args.store) as router:
        if adaptive:
            params = router.params
            router.params = replace(params, adaptive=replace(params.adaptive, **adaptive))
        return simulate_stream(router, strategies, args, servers_k=args.servers_k)


def simulate_stream(
    router: Router, strategies: list[str], args: argparse.Namespace, **options: Any
) -> Simulation:
    """The adaptive benchmarks' simulation: LiveMCPBench's queries, 3 vendors a server, the
    per-step agent with the oracle planner and 2 attempts, ``args.seeds`` worlds, the stream
    ``args.stream`` (zipf: 2,000 tasks, the last 500 counted); ``options`` as run_simulation's."""
    queries = load_queries(SHARED / "queries.jsonl", router.catalog)
    zipf = args.stream == "zipf"
    return run_simulation(
        router,
        queries,
        strategies,
        args.seeds,
        3,
        providers=3,
        planner="oracle",
        attempts=2,
        stream=args.stream,
        tasks=2000 if zipf else None,
        window=(1500, 2000) if zipf else None,
        **options,
    )


def _renamed(runs: list[AgentRun], suffix: str) -> list[AgentRun]:
    return [AgentRun(f"{r.strategy} {suffix}", r.seed, r.queries) for r in runs]


def _bootstrap(a: np.ndarray, b: np.ndarray, draws: int = 10_000) -> tuple[float, float]:
    """95 % percentile interval of mean(a) / mean(b), resampling seeds (pairs kept)."""
    rng = np.random.default_rng(24)
    idx = rng.integers(len(a), size=(draws, len(a)))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = a[idx].mean(axis=1) / b[idx].mean(axis=1)
    lo, hi = np.nanpercentile(ratios, [2.5, 97.5])
    return float(lo), float(hi)


def main() -> int:
    from benchmarks.variants import register_strategies

    register_strategies()  # the research variants
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--stream", choices=("once", "zipf"), default="zipf")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--servers-k", type=int, default=None)
    ap.add_argument("--value", type=float, action="append", default=None)
    ap.add_argument("--fixed", action="append", default=None)
    ap.add_argument("--sweep", action="append", default=None)
    ap.add_argument("--plain", type=float, action="append", default=None)
    ap.add_argument("--no-plain", action="store_true", help="no run without the cut")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    values = args.value or [0.002, 0.005, 0.01, 0.02]
    fixed = args.fixed or ["adaptive-lean", "adaptive-budget"]
    sweep = args.sweep or ["adaptive-2"]
    started = time.monotonic()
    first = _run(args, ["ehrr", *fixed])
    runs = [r for r in first.runs if r.strategy != "oracle-router"]
    oracle = [r for r in first.runs if r.strategy == "oracle-router"]
    plain = [] if args.no_plain else values if args.plain is None else args.plain
    for v in sorted(set(values) | set(plain)):
        for reserve in (False, True):
            if v in (values if reserve else plain):
                tag = f"V={v:g}" + (" reserve" if reserve else "")
                t0 = time.monotonic()
                sim = _run(args, sweep, value_usd=v, reserve=reserve)
                runs += _renamed([r for r in sim.runs if r.strategy != "oracle-router"], tag)
                print(f"{tag}: {time.monotonic() - t0:.0f} s", file=sys.stderr)
    sim = Simulation(tuple(runs + oracle), first.setting, first.window)
    seconds = time.monotonic() - started
    by = sim.by_strategy()
    seeds = sorted(r.seed for r in by["ehrr"])

    def per_seed(name: str, metric: str) -> np.ndarray:
        got = {r.seed: r.means()[metric] for r in by[name]}
        return np.array([got[s] for s in seeds])

    e_ok = per_seed("ehrr", "success_rate")
    head = (
        f"Budget target, {args.stream} stream, {len(seeds)} seeds, shortlist "
        f"{first.setting.get('servers_k', 5)} (`benchmarks/adaptive_budget.py`, {seconds:.0f} s)"
    )
    lines = [head, ""]
    lines += ["| strategy | success | cost USD/task (tool price) | cost USD/task (posted τ) |"]
    lines += ["|---|---:|---:|---:|"]
    for name in by:
        s = sim.summary[name]
        lines.append(
            f"| {name} | {s['success_rate']['mean']:.3f} ± {s['success_rate']['ci95']:.3f} | "
            f"{s['cost_usd']['mean']:.4f} ± {s['cost_usd']['ci95']:.4f} | "
            f"{s['cost_posted_usd']['mean']:.4f} ± {s['cost_posted_usd']['ci95']:.4f} |"
        )
    lines += [
        "",
        f"Against `ehrr` (target: success ≥ {SUCCESS_TIMES:g}×, cost ≤ {COST_TIMES:g}×). "
        "Ratios of means, [95 % paired bootstrap over seeds]; margins per seed, mean ± 95 % "
        "paired t half-width (met where the interval lies on the right side of 0).",
        "",
        "| rule for `ehrr` | strategy | success × | cost × | success − 3·ehrr | "
        "cost − 1.05·ehrr (USD) | met |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for rule, metric in RULES.items():
        e_cost = per_seed("ehrr", metric)
        for name in by:
            if name in ("ehrr", "oracle-router"):
                continue
            ok, cost = per_seed(name, "success_rate"), per_seed(name, "cost_usd")
            s_lo, s_hi = _bootstrap(ok, e_ok)
            c_lo, c_hi = _bootstrap(cost, e_cost)
            s_margin = ci95((ok - SUCCESS_TIMES * e_ok).tolist())
            c_margin = ci95((cost - COST_TIMES * e_cost).tolist())
            s_mean, c_mean = s_margin["mean"] or 0.0, c_margin["mean"] or 0.0
            s_half, c_half = s_margin["ci95"] or 0.0, c_margin["ci95"] or 0.0
            met = "no"
            if s_mean >= 0 and c_mean <= 0:
                met = "yes" if s_mean - s_half >= 0 and c_mean + c_half <= 0 else "in the mean"
            lines.append(
                f"| {rule} | {name} | {ok.mean() / e_ok.mean():.2f} [{s_lo:.2f}, {s_hi:.2f}] | "
                f"{cost.mean() / e_cost.mean():.2f} [{c_lo:.2f}, {c_hi:.2f}] | "
                f"{stat_text(s_margin, 3, sign=True)} | "
                f"{stat_text(c_margin, 4, sign=True)} | {met} |"
            )
    out_md, out_js = args.out.with_suffix(".md"), args.out.with_suffix(".json")
    out_md.write_text("\n".join(lines) + "\n", encoding="utf-8")
    payload = {
        "setting": first.setting,
        "seconds": seconds,
        "per_seed": {
            name: {m: per_seed(name, m).tolist() for m in ("success_rate", *RULES.values())}
            for name in by
        },
    }
    out_js.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
