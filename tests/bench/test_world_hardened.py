"""The two harder worlds of issue 24 (bench/world.py): vendor-correlated quality and an outage
window. Both are fixed by the seed before any policy runs, and leave every other draw as is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import HashingEmbedder
from toolroute.bench.simulate import run_simulation
from toolroute.bench.world import Market, World, WorldParams, call_outcome
from toolroute.catalog import Catalog, Server, Tool
from toolroute.catalog.loader import load_queries
from toolroute.errors import ConfigError
from toolroute.router import Router


def _shop(servers: int = 60, tools: int = 6) -> Catalog:
    out = []
    for i in range(servers):
        sid = f"s{i}"
        ts = tuple(Tool(sid, f"t{k}", f"Read local file kind {k}") for k in range(tools))
        out.append(Server(sid, f"S{i}", "", ts))
    return Catalog(servers=tuple(out))


def _within_server_correlation(w: World) -> float:
    """Correlation of the logit success of two different tools of one server, over servers."""
    z = np.log(w.success) - np.log1p(-w.success)
    pairs = [
        (z[j], z[j + 1]) for j in range(0, len(z) - 1, 2) if w.server_of[j] == w.server_of[j + 1]
    ]
    a, b = np.array(pairs).T
    return float(np.corrcoef(a, b)[0, 1])


def test_vendor_correlation_makes_a_servers_tools_share_their_quality() -> None:
    shop = _shop()
    m = Market.build(shop, 3)
    flat = World.draw(m.catalog, 3, WorldParams(), m)
    tied = World.draw(m.catalog, 3, WorldParams(vendor_correlation=0.8), m)
    assert abs(_within_server_correlation(flat)) < 0.2
    assert _within_server_correlation(tied) > 0.6
    # the marginal spread of quality is kept, and nothing else moved
    assert abs(float(tied.success.mean() - flat.success.mean())) < 0.05
    for field in ("price", "fail_prob", "latency_s", "connect_s", "fragile"):
        assert np.array_equal(getattr(flat, field), getattr(tied, field)), field
    again = World.draw(m.catalog, 3, WorldParams(vendor_correlation=0.8), m)
    assert np.array_equal(again.success, tied.success)  # same seed, same world


def test_an_outage_fails_every_call_of_one_vendor_inside_its_window_only() -> None:
    m = Market.build(_shop(12, 2), 3)
    w = World.draw(m.catalog, 1, WorldParams(outage=(10, 20)), m)
    plain = World.draw(m.catalog, 1, WorldParams(), m)
    assert w.down_vendor is not None and w.down
    sids = {m.catalog.servers[i].id for i in w.down}
    assert all(s.endswith("@" + w.down_vendor.lower()) for s in sids)
    assert len(w.down) == 12  # that vendor's copy of every server
    for field in ("price", "success", "fail_prob", "latency_s"):
        assert np.array_equal(getattr(plain, field), getattr(w, field)), field
    down_key = next(k for j, k in enumerate(w.keys) if int(w.server_of[j]) in w.down)
    up_key = next(k for j, k in enumerate(w.keys) if int(w.server_of[j]) not in w.down)
    for task in (10, 15, 19):
        call = call_outcome(w, task, 0, down_key)
        assert not call.success and call.server_failed and call.price == 0.0
        assert call_outcome(w, task, 0, up_key) == call_outcome(plain, task, 0, up_key)
    for task in (0, 9, 20, 50):  # outside the window: exactly the world without an outage
        assert call_outcome(w, task, 0, down_key) == call_outcome(plain, task, 0, down_key)
    vendors = {
        World.draw(m.catalog, s, WorldParams(outage=(0, 1)), m).down_vendor for s in range(12)
    }
    assert len(vendors) > 1  # drawn per seed


def test_a_bad_correlation_or_outage_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigError, match="vendor correlation"):
        WorldParams(vendor_correlation=1.5)
    with pytest.raises(ConfigError, match="outage"):
        WorldParams(outage=(5, 5))


def test_a_simulated_outage_lowers_success_in_its_window_and_records_the_vendor(
    tmp_path: Path, catalog_file: Path, queries_file: Path
) -> None:
    with Router(catalog_file, store=tmp_path / "store", embedder=HashingEmbedder()) as r:
        qs = load_queries(queries_file, r.catalog)
        opts: dict[str, Any] = {"stream": "zipf", "tasks": 60, "providers": 1}
        plain = run_simulation(r, qs, ["hybrid"], seeds=[0, 1], **opts)
        down = run_simulation(r, qs, ["hybrid"], seeds=[0, 1], outage=(20, 40), **opts)
        again = run_simulation(r, qs, ["hybrid"], seeds=[0, 1], outage=(20, 40), **opts)
    assert down.setting["outage"] == (20, 40)
    assert down.setting["outage_vendor"] == ["every server", "every server"]
    assert again.runs == down.runs  # the same seeds, the same world and luck
    for a, b in zip(plain.runs, down.runs, strict=True):
        assert a.queries[:20] == b.queries[:20] and a.queries[40:] == b.queries[40:]
        assert not any(q.success for q in b.queries[20:40])  # one vendor: every server down
        assert any(q.success for q in a.queries[20:40])


def test_simulate_refuses_a_bad_outage_or_correlation_in_one_line(
    catalog_file: Path, queries_file: Path
) -> None:
    from click.testing import CliRunner

    from toolroute import cli

    base = ["simulate", "--catalog", str(catalog_file), "--queries", str(queries_file)]
    res = CliRunner().invoke(cli.main, [*base, "--outage", "5:1"])
    assert res.exit_code == 2 and "--outage must be A:B" in res.output
    res = CliRunner().invoke(cli.main, [*base, "--vendor-correlation", "2"])
    assert res.exit_code == 2 and "--vendor-correlation" in res.output
