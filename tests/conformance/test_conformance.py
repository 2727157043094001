"""The official MCP conformance suites through the gateway, in both protocol eras.

Marked ``conformance`` (and ``integration``): outside the default tier, since each runs the
npm suite against real gateways for minutes. ``bash .ci/run`` runs them after both tiers,
when node 22 is installed:

    TOOLROUTE_CONFORMANCE_OUT=.toolroute \
        .venv/bin/python -m pytest -n 0 -m conformance tests/conformance

Each test writes its per-scenario table (``conformance.md``, ``conformance_2026.md``,
``conformance_dual_era.md``) to ``$TOOLROUTE_CONFORMANCE_OUT``, else to its own temporary
folder, and fails with that table. The machinery is tests/helpers/conformance.py and
conformance_2026.py; ``python -m benchmarks.conformance`` and ``benchmarks.conformance_2026``
write the tables the docs quote from the same code.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import conformance, conformance_2026

pytestmark = [
    pytest.mark.integration,
    pytest.mark.conformance,
    pytest.mark.timeout(3600),
]


@pytest.fixture
def out_dir(tmp_path: Path) -> Path:
    """Where the tables go: ``$TOOLROUTE_CONFORMANCE_OUT`` (CI prints them), else tmp."""
    named = os.environ.get("TOOLROUTE_CONFORMANCE_OUT")
    out = Path(named) if named else tmp_path
    out.mkdir(parents=True, exist_ok=True)
    return out


needs_2025 = pytest.mark.skipif(
    conformance.missing() is not None, reason=str(conformance.missing())
)
needs_2026 = pytest.mark.skipif(
    conformance_2026.missing() is not None, reason=str(conformance_2026.missing())
)


@needs_2025
def test_the_2025_suite_passes_32_of_32_in_pass_through_and_every_applicable_one_routed(
    out_dir: Path,
) -> None:
    report = conformance.evaluate(["all", "meta"])
    table = conformance.markdown(report, "pytest -m conformance tests/conformance (all, meta)")
    (out_dir / "conformance.md").write_text(table)
    assert conformance.passed(report), table


@needs_2026
def test_the_2026_suite_passes_every_scored_scenario_through_the_gateway_over_http_and_stdio(
    out_dir: Path,
) -> None:
    runs = conformance_2026.columns(["direct", "all", "meta"], ["http", "stdio"])
    report = conformance_2026.evaluate(runs)
    table = conformance_2026.markdown(
        report, "pytest -m conformance tests/conformance (direct, all, meta; http, stdio)"
    )
    (out_dir / "conformance_2026.md").write_text(table)
    assert conformance_2026.passed(report), table


@needs_2025
def test_a_server_of_both_eras_asking_the_2025_way_passes_the_2025_suite_in_pass_through(
    out_dir: Path,
) -> None:
    report = conformance.evaluate(["all"], dual_era=True)
    table = conformance.markdown(report, "pytest -m conformance tests/conformance (all, dual era)")
    (out_dir / "conformance_dual_era.md").write_text(table)
    assert conformance.passed(report), table
