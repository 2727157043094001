"""The EHRR economics simulation with the real model on ../shared/benchmarks/livemcpbench.

Only structural facts are asserted (keys, ranges, shapes): the issue's targets are reported by
the benchmark run, not pinned here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import BENCHMARKS, needs_shared
from toolroute.bench.agent import ORACLE_ROUTER
from toolroute.bench.simulate import run_simulation
from toolroute.bench.simulation import METRICS, REGRET
from toolroute.bench.simulation_report import write_simulation_outputs
from toolroute.catalog import Catalog, load_catalog, load_queries
from toolroute.embed.onnx import OnnxEmbedder
from toolroute.router import Router

pytestmark = [pytest.mark.integration, needs_shared(), pytest.mark.usefixtures("research_variants")]


def test_todays_simulation_on_livemcpbench_gives_sane_figures(
    tmp_path: Path, shared_store: Path, onnx: OnnxEmbedder
) -> None:
    with Router(
        BENCHMARKS / "livemcpbench" / "catalog.json", store=shared_store, embedder=onnx
    ) as router:
        queries = load_queries(BENCHMARKS / "livemcpbench" / "queries.jsonl", router.catalog)
        run = run_simulation(
            router, queries, ["cascade", "ehrr"], seeds=3, providers=1, planner="whole"
        )
    res = run.summary
    assert list(res) == ["cascade", "ehrr"]
    for row in res.values():
        assert set(row) == set(METRICS)
        mean = {m: row[m]["mean"] for m in METRICS}
        assert all(v is not None and v >= 0.0 for v in mean.values())
        assert all(row[m]["ci95"] is not None for m in METRICS)
        assert mean["success_rate"] <= 1.0  # type: ignore[operator]
        # ≤ 2 route calls per group (7 groups at most), each showing ≤ 3 candidates.
        assert mean["invalid_route_calls"] <= 2 * 7 * 3  # type: ignore[operator]
        # A call costs at most ~0.05 USD (high tier, 5.5 σ) and a query makes ≤ 6 per group.
        assert mean["cost_usd"] <= 0.05 * 6 * 7  # type: ignore[operator]
        assert mean["tokens"] > 0  # type: ignore[operator]
    assert len(run.runs) == 2 * 3
    assert all(len(r.queries) == len(queries) for r in run.runs)
    paths = write_simulation_outputs(res, run.series, tmp_path)
    data = json.loads(paths[0].read_text())
    assert len(data["series"]["ehrr"]["running_success"]) == len(queries)


@pytest.mark.slow  # a cold embedding of its own; tests/bench/test_simulate.py runs the market small
def test_market_simulation_on_a_livemcpbench_slice_gives_sane_figures(
    tmp_path: Path, onnx: OnnxEmbedder
) -> None:
    """Issue 12's setting (3 vendors, oracle planner, 2 attempts) on the servers of the first
    3 queries: the market is indexed in ``<store>/market-3`` and the oracle router runs."""
    full = load_catalog(BENCHMARKS / "livemcpbench" / "catalog.json")
    queries = load_queries(BENCHMARKS / "livemcpbench" / "queries.jsonl", full)[:3]
    used = {s for q in queries for s, _ in q.relevant}
    base = Catalog(servers=tuple(s for s in full.servers if s.id in used))
    with Router(base, store=tmp_path / "store", embedder=onnx) as router:
        run = run_simulation(router, queries, ["cascade", "ehrr", "ehrr-ucb"], seeds=2)
    assert (tmp_path / "store" / "market-3").is_dir()
    res = run.summary
    assert list(res) == ["cascade", "ehrr", "ehrr-ucb", ORACLE_ROUTER]
    for row in res.values():
        assert set(row) == {*METRICS, *REGRET}
        assert 0.0 <= (row["success_rate"]["mean"] or 0.0) <= 1.0
        # ≤ 2 routes per step (2 attempts), each showing ≤ 3 candidates; ≤ 2 calls per step.
        assert (row["tool_calls"]["mean"] or 0.0) <= 2 * 7
    oracle = res[ORACLE_ROUTER]
    assert oracle["invalid_route_calls"]["mean"] == 0.0  # it shows only what the step needs
    assert run.setting["providers"] == 3 and run.setting["planner"] == "oracle"
