"""Streams, windows, learning curves and the noisy agent of the simulation (issue 24), and
today's figures reproduced by the once-through stream."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import HashingEmbedder
from toolroute import Router
from toolroute.bench.simulate import run_simulation
from toolroute.bench.simulation_report import markdown_table, write_learning_outputs
from toolroute.catalog.loader import load_queries

# Summaries of the code before issue 24 (commit 39d0713) on the small catalog, 3 seeds:
# --providers 1 --planner whole, and --providers 2 --planner oracle (shortlist 5 then).
BEFORE: dict[str, dict[str, dict[str, float]]] = {
    "1-whole": {
        "cascade": {
            "cost_usd": 0.00213419712266481,
            "invalid_calls": 2.3333333333333335,
            "latency_s": 1.0084646316302623,
            "success_rate": 0.4444444444444444,
            "tokens": 227.77777777777774,
        },
        "ehrr": {
            "cost_usd": 0.00213419712266481,
            "invalid_calls": 2.3333333333333335,
            "latency_s": 1.0084646316302623,
            "success_rate": 0.4444444444444444,
            "tokens": 221.77777777777774,
        },
        "hybrid": {
            "cost_usd": 0.00213419712266481,
            "invalid_calls": 2.3333333333333335,
            "latency_s": 1.0084646316302623,
            "success_rate": 0.4444444444444444,
            "tokens": 227.77777777777774,
        },
    },
    "2-oracle": {
        "cascade": {
            "cost_usd": 0.002914733479399386,
            "invalid_calls": 1.4444444444444444,
            "latency_s": 1.4997317919725175,
            "success_rate": 0.7777777777777777,
            "tokens": 169.2222222222222,
        },
        "ehrr": {
            "cost_usd": 0.0028755045053615127,
            "invalid_calls": 1.4444444444444444,
            "latency_s": 1.4866636855560094,
            "success_rate": 0.7777777777777777,
            "tokens": 168.7777777777778,
        },
        "hybrid": {
            "cost_usd": 0.003015112825250229,
            "invalid_calls": 1.2222222222222223,
            "latency_s": 1.5883575419205922,
            "success_rate": 0.7777777777777777,
            "tokens": 157.0,
        },
        "oracle-router": {
            "cost_usd": 0.0025730804238085912,
            "invalid_calls": 0.4444444444444444,
            "latency_s": 1.4378237901464699,
            "success_rate": 0.7777777777777777,
            "tokens": 108.0,
        },
    },
}
METRICS = ("success_rate", "cost_usd", "invalid_calls", "latency_s", "tokens")


def _sim(catalog_file: Path, queries_file: Path, tmp_path: Path, **kw: object) -> object:
    with Router(catalog_file, store=tmp_path / "s", embedder=HashingEmbedder()) as r:
        qs = load_queries(queries_file, r.catalog)
        return run_simulation(r, qs, ["cascade", "ehrr", "hybrid"], seeds=3, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("setting", "options"),
    [
        ("1-whole", {"providers": 1, "planner": "whole", "stream": "once"}),
        ("2-oracle", {"providers": 2, "planner": "oracle", "servers_k": 5}),
    ],
)
def test_the_once_through_stream_reproduces_the_figures_before_streams(
    catalog_file: Path, queries_file: Path, tmp_path: Path, setting: str, options: dict[str, object]
) -> None:
    sim = _sim(catalog_file, queries_file, tmp_path, **options)
    got = {
        k: {m: v[m]["mean"] for m in METRICS}
        for k, v in sim.summary.items()  # type: ignore[attr-defined]
        if k != "oracle-router"
    }
    want = {k: v for k, v in BEFORE[setting].items() if k != "oracle-router"}
    assert got == want  # figure for figure: exact floats


def test_a_window_counts_only_its_tasks_and_curves_cover_the_whole_stream(
    catalog_file: Path, queries_file: Path, tmp_path: Path
) -> None:
    full = _sim(catalog_file, queries_file, tmp_path, providers=1, planner="oracle",
                stream="zipf", tasks=40)  # fmt: skip
    cut = _sim(catalog_file, queries_file, tmp_path, providers=1, planner="oracle",
               stream="zipf", tasks=40, window=(20, 40))  # fmt: skip
    for name, runs in full.by_strategy().items():  # type: ignore[attr-defined]
        tail = [r.queries[20:40] for r in runs]
        want = sum(q.success for t in tail for q in t) / sum(len(t) for t in tail)
        assert cut.summary[name]["success_rate"]["mean"] == pytest.approx(want)  # type: ignore[attr-defined]
    curves = cut.curves(bins=4)  # type: ignore[attr-defined]
    assert curves["hybrid"]["tasks"] == [10.0, 20.0, 30.0, 40.0]
    paths = write_learning_outputs(cut, tmp_path / "out", bins=4)  # type: ignore[arg-type]
    assert [p.name for p in paths] == ["curves.json", "learning.png", "pareto.png"]
    assert all(p.stat().st_size > 0 for p in paths)


def test_the_noisy_agent_makes_invalid_calls_the_clean_one_does_not(
    catalog_file: Path, queries_file: Path, tmp_path: Path
) -> None:
    clean = _sim(catalog_file, queries_file, tmp_path, providers=1, planner="oracle")
    noisy = _sim(catalog_file, queries_file, tmp_path, providers=1, planner="oracle", noise=0.5)
    c = clean.summary["hybrid"]["invalid_tool_calls"]["mean"]  # type: ignore[attr-defined]
    n = noisy.summary["hybrid"]["invalid_tool_calls"]["mean"]  # type: ignore[attr-defined]
    assert n > c


def test_both_payment_rules_are_reported_and_only_ehrr_posts_prices(
    catalog_file: Path, queries_file: Path, tmp_path: Path
) -> None:
    sim = _sim(catalog_file, queries_file, tmp_path, providers=2, planner="oracle")
    summary = sim.summary  # type: ignore[attr-defined]
    hybrid, ehrr = summary["hybrid"], summary["ehrr"]
    assert hybrid["cost_posted_usd"]["mean"] == hybrid["cost_usd"]["mean"]
    assert ehrr["cost_posted_usd"]["mean"] != pytest.approx(ehrr["cost_usd"]["mean"])
    table = markdown_table(summary)
    assert "| cost USD/query | cost USD/query at τ |" in table
    row = next(line for line in table.splitlines() if line.startswith("| ehrr |"))
    assert f"{ehrr['cost_posted_usd']['mean']:.4f} ± " in row
    ratios = sim.paired_table("hybrid").split("Ratio of means")[1]  # type: ignore[attr-defined]
    assert "| success_rate | cost_usd | cost_posted_usd |" in ratios
    posted = ehrr["cost_posted_usd"]["mean"] / hybrid["cost_posted_usd"]["mean"]
    success = ehrr["success_rate"]["mean"] / hybrid["success_rate"]["mean"]
    assert f"| ehrr | {success:.3f} | " in ratios
    assert f" | {posted:.3f} | " in ratios
