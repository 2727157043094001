"""The EHRR economics simulation with the real model on ../shared/benchmarks/livemcpbench.

Only structural facts are asserted (keys, ranges, shapes): the issue's targets are reported by
the benchmark run, not pinned here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import BENCHMARKS, needs_shared
from toolroute.bench.simulate import METRICS, run_simulation, write_simulation_outputs
from toolroute.catalog import load_queries
from toolroute.embed.onnx import OnnxEmbedder
from toolroute.router import Router

pytestmark = [pytest.mark.integration, needs_shared()]


def test_simulation_on_livemcpbench_gives_sane_figures(
    tmp_path: Path, shared_store: Path, onnx: OnnxEmbedder
) -> None:
    with Router(
        BENCHMARKS / "livemcpbench" / "catalog.json", store=shared_store, embedder=onnx
    ) as router:
        queries = load_queries(BENCHMARKS / "livemcpbench" / "queries.jsonl", router.catalog)
        run = run_simulation(router, queries, ["cascade", "ehrr"], seeds=3)
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
