from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import SMALL_CATALOG, HashingEmbedder
from toolroute import Router
from toolroute.catalog import catalog_from_dict
from toolroute.learn.estimate import PRIOR_SUCCESS, ServerStats
from toolroute.stats import DEFAULT_CONNECT_S, Outcome, StatsBook


def _book() -> StatsBook:
    return StatsBook(catalog_from_dict(SMALL_CATALOG))


def test_unseen_servers_and_tools_start_at_the_priors() -> None:
    book = _book()
    assert book.server("fs") == ServerStats()
    assert book.tool(("fs", "read_file")).success == PRIOR_SUCCESS
    assert list(book.connect_s) == [DEFAULT_CONNECT_S] * 3


def test_catalog_hints_replace_priors() -> None:
    data = json.loads(json.dumps(SMALL_CATALOG))
    data["servers"][1]["failure_rate"] = 0.3
    data["servers"][1]["connect_latency_s"] = 0.5
    data["servers"][1]["tools"][0]["success_rate"] = 0.6
    book = StatsBook(catalog_from_dict(data))
    assert book.server("fs").fail_prob == 0.3
    assert book.connect_s[1] == 0.5
    assert book.tool(("fs", "read_file")).success == 0.6


def test_recorded_failure_moves_both_layers_by_lambda() -> None:
    book = _book()
    book.record(Outcome("fs", "read_file", success=False, latency_s=2.0, server_failed=True))
    assert book.server("fs").success == pytest.approx(0.85)
    assert book.server("fs").fail_prob == pytest.approx(0.15)
    assert book.tool(("fs", "read_file")).success == pytest.approx(0.85)
    assert book.server_fail[1] == pytest.approx(0.15)  # arrays follow the states
    assert book.tool_latency[2] == pytest.approx(0.85 * 1.0 + 0.15 * 2.0)
    # Beta posteriors: prior mean 0.9 success worth 2 calls, plus the one observation.
    assert book.server_fail_beta[1] == pytest.approx([0.2 + 1, 1.8])
    assert book.tool_beta[2] == pytest.approx([1.8, 0.2 + 1])


def test_outcomes_persist_across_a_restart(tmp_path: Path, catalog_file: Path) -> None:
    with Router(catalog_file, store=tmp_path, embedder=HashingEmbedder()) as r:
        r.index()
        r.record(Outcome("weather", "get_alerts", success=False, latency_s=3.0))
        r.record(Outcome("weather", "get_alerts", success=True, latency_s=1.0))
        assert r.store.outcome_count() == 2
        before = r.stats.server("weather")
    with Router(catalog_file, store=tmp_path, embedder=HashingEmbedder()) as r:
        assert r.stats.server("weather") == before
        assert r.stats.tool(("weather", "get_alerts")).calls == 2


def test_beta_posteriors_are_rebuilt_after_a_restart(tmp_path: Path, catalog_file: Path) -> None:
    with Router(catalog_file, store=tmp_path, embedder=HashingEmbedder()) as r:
        r.index()
        r.record(Outcome("fs", "read_file", success=False, latency_s=1.0, server_failed=True))
        r.record(Outcome("fs", "read_file", success=True, latency_s=1.0))
        before = r.stats.tool_beta.copy(), r.stats.server_fail_beta.copy()
    with Router(catalog_file, store=tmp_path, embedder=HashingEmbedder()) as r:
        assert (r.stats.tool_beta == before[0]).all()
        assert (r.stats.server_fail_beta == before[1]).all()


def test_the_posterior_sampling_stream_is_seeded_and_made_once() -> None:
    import numpy as np

    book = StatsBook(catalog_from_dict(SMALL_CATALOG), seed=7)
    expected = np.random.default_rng(7).random(3)
    assert list(book.rng.random(3)) == list(expected)
    assert book.rng is book.rng  # one stream: later draws continue it
