"""The marketplace world of issue 12: vendors per server, perturbed descriptions, price settings."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import SMALL_CATALOG
from toolroute.bench.world import VENDORS, Market, World, WorldParams, perturb
from toolroute.catalog import Catalog, Query, Server, Tool, catalog_from_dict
from toolroute.errors import ConfigError

SMALL = catalog_from_dict(SMALL_CATALOG)


def _shop(servers: int = 40) -> Catalog:
    """Servers of two tools each; every third one a web-search server (high tier)."""
    out = []
    for i in range(servers):
        desc = "Search the web and return results" if i % 3 == 0 else "Read a local file"
        sid = f"s{i}"
        out.append(Server(sid, f"S{i}", "", (Tool(sid, "a", desc), Tool(sid, "b", desc))))
    return Catalog(servers=tuple(out))


def test_one_provider_is_the_catalog_and_draws_the_same_world_as_without_a_market() -> None:
    m = Market.build(SMALL, 1)
    assert m.catalog is SMALL
    a, b = World.draw(SMALL, 5), World.draw(m.catalog, 5, market=m)
    for field in ("price", "success", "fail_prob", "latency_s", "connect_s", "ask_cost"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    q = [Query("q", "t", (frozenset({("time", "convert_time")}),), "s")]
    assert m.queries(q) == q


def test_every_server_is_sold_by_each_vendor_under_its_own_id_and_name() -> None:
    m = Market.build(SMALL, 3)
    assert len(m.catalog.servers) == 3 * len(SMALL.servers)
    assert m.catalog.tool_count == 3 * SMALL.tool_count
    ids = [s.id for s in m.catalog.servers[:3]]
    assert ids == [f"time@{v.lower()}" for v in VENDORS[:3]]
    assert [s.name for s in m.catalog.servers[:3]] == [f"Time ({v})" for v in VENDORS[:3]]
    tools = list(m.catalog.tools())
    base = list(SMALL.tools())
    for j, t in enumerate(tools):
        original = base[int(m.capability[j])]
        assert t.name == original.name and t.server.startswith(original.server + "@")
        assert t.input_schema == original.input_schema
    assert sorted(np.bincount(m.capability).tolist()) == [3] * SMALL.tool_count
    with pytest.raises(ConfigError, match="providers"):
        Market.build(SMALL, 0)


def test_a_group_is_met_by_the_tool_of_any_vendor() -> None:
    m = Market.build(SMALL, 2)
    q = Query("q", "t", (frozenset({("time", "convert_time")}),), "s")
    (g,) = m.queries([q])[0].groups
    assert g == {("time@acme", "convert_time"), ("time@globex", "convert_time")}


def test_perturbation_is_light_deterministic_and_differs_by_vendor() -> None:
    text = "Get the current time and return the information for a specified timezone"
    a, b = perturb(text, "Acme"), perturb(text, "Globex")
    assert a == perturb(text, "Acme") and a != b
    assert len(a.split()) == pytest.approx(len(text.split()), abs=3)
    assert "timezone" in a and "timezone" in b  # only listed synonyms move
    assert perturb("Get it", "Acme", share=0.0) == "Get it"
    assert perturb("Get it", "Acme", share=1.0).split()[0] in {"Retrieve", "Fetch", "Obtain"}


def test_vendors_of_a_capability_share_its_tier_and_draw_their_own_figures() -> None:
    m = Market.build(_shop(), 3)
    w = World.draw(m.catalog, 2, market=m)
    for c in range(_shop().tool_count):
        members = np.flatnonzero(m.capability == c)
        assert len(set(w.high_tier[members].tolist())) == 1
        assert len(set(w.price[members].tolist())) == 3
    assert w.high_tier.any() and not w.high_tier.all()


def test_positive_setting_orders_prices_by_hidden_quality_with_the_same_prices() -> None:
    m = Market.build(_shop(120), 3)
    indep = World.draw(m.catalog, 1, market=m)
    pos = World.draw(m.catalog, 1, WorldParams(price_quality="positive"), market=m)
    assert np.array_equal(indep.success, pos.success)  # only prices move
    assert np.array_equal(indep.fail_prob, pos.fail_prob)
    assert np.allclose(np.sort(indep.price), np.sort(pos.price))
    rho_pos, rho_ind = pos.price_quality_correlation(), indep.price_quality_correlation()
    assert rho_pos is not None and rho_ind is not None
    assert rho_pos > 0.5 and abs(rho_ind) < 0.2
    for c in range(0, 240, 7):  # within a capability, prices are a permutation of the draw
        members = np.flatnonzero(m.capability == c)
        assert sorted(pos.price[members]) == pytest.approx(sorted(indep.price[members]))
    servers = np.bincount(pos.server_of, weights=pos.price) / np.bincount(pos.server_of)
    assert pos.ask_cost == pytest.approx(servers)


def test_a_world_knows_each_tools_attempt_success() -> None:
    w = World.draw(SMALL, 3)
    assert w.attempt_success == pytest.approx((1 - w.fail_prob[w.server_of]) * w.success)
    assert World.draw(SMALL, 3).price_quality_correlation() is None
