from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import SMALL_CATALOG, HashingEmbedder
from toolroute import Router
from toolroute.papers.ehrr.economics import server_cost, tool_cost
from toolroute.papers.ehrr.routing import EhrrParams, EhrrTrace, ehrr_route
from toolroute.stats import Outcome, StatsBook

pytestmark = pytest.mark.usefixtures("research_variants")


def _priced(tmp_path: Path) -> Path:
    data = json.loads(json.dumps(SMALL_CATALOG))
    for s in data["servers"]:
        for t in s["tools"]:
            t["price"] = 0.001
    # get_forecast: over its posted price (~0.018), while the server ask (mean 0.013) is under it
    data["servers"][2]["tools"][0]["price"] = 0.025
    p = tmp_path / "priced.json"
    p.write_text(json.dumps(data))
    return p


def test_vectorised_costs_are_the_economics_equations(tmp_path: Path) -> None:
    with Router(_priced(tmp_path), store=tmp_path / "s", embedder=HashingEmbedder()) as r:
        ix = r.built
        book = StatsBook(ix.catalog)
        rng = np.random.default_rng(3)
        for _ in range(40):
            t = ix.tools[int(rng.integers(ix.size))]
            book.record(
                Outcome(
                    t.server,
                    t.name,
                    bool(rng.random() < 0.6),
                    float(rng.uniform(0.1, 3)),
                    bool(rng.random() < 0.2),
                )
            )
        trace = EhrrTrace()
        v = r.query_context("read a file").vector
        ehrr_route(ix, ix.server_vectors @ v, ix.tool_vectors @ v, book, EhrrParams(), trace)
        for i, sid in enumerate(ix.server_ids):
            s = book.server(sid)
            want = server_cost(book.connect_s[i], s.latency_s, s.conservative(), s.fail_prob)
            assert trace.server_cost[i] == pytest.approx(want)
        for j, tool in enumerate(ix.tools):
            i = int(ix.server_of[j])
            ts = book.tool(tool.key)
            want = tool_cost(
                book.connect_s[i],
                ts.latency_s,
                ts.success,
                book.server(tool.server).fail_prob,
                float(ix.prices[j]),
            )
            assert trace.tool_cost[j] == pytest.approx(want)


def test_learned_failures_steer_ehrr_but_not_similarity(tmp_path: Path) -> None:
    q = "read the contents of a file from disk"
    with Router(_priced(tmp_path), store=tmp_path / "s", embedder=HashingEmbedder()) as r:
        assert r.route(q, k=1, strategy="ehrr")[0].tool == "read_file"
        for _ in range(15):
            r.record(Outcome("fs", "read_file", success=False, latency_s=5.0, server_failed=True))
        assert r.route(q, k=1, strategy="ehrr")[0].tool != "read_file"
        assert r.route(q, k=1, strategy="ehrr-no-exec")[0].tool == "read_file"


def test_auction_drops_tools_priced_over_the_posted_price(tmp_path: Path) -> None:
    q = "weather forecast for a city"
    with Router(_priced(tmp_path), store=tmp_path / "s", embedder=HashingEmbedder()) as r:
        shown = {c.tool for c in r.route(q, k=7, strategy="ehrr")}
        assert "get_forecast" not in shown and "get_alerts" in shown
        assert r.route(q, k=1, strategy="ehrr-no-auction")[0].tool == "get_forecast"
        explained = dict((c.tool, d) for c, d in r.explain(q, k=7, strategy="ehrr"))
        d = explained["get_alerts"]
        assert {
            "server_sim",
            "server_cost_s",
            "posted_price",
            "accepted",
            "tool_cost_s",
            "utility",
        } <= set(d)
        assert d["accepted"] is True and d["price"] <= d["posted_price"]


def test_flat_variant_has_no_server_shortlist(tmp_path: Path) -> None:
    with Router(_priced(tmp_path), store=tmp_path / "s", embedder=HashingEmbedder()) as r:
        # every tool but the one priced over its posted price
        assert len(r.route("anything at all", k=7, strategy="ehrr-flat")) == 6


def test_thompson_sampling_is_reproducible_per_seed(tmp_path: Path) -> None:
    with Router(_priced(tmp_path), store=tmp_path / "s", embedder=HashingEmbedder()) as r:

        def run(seed: int) -> list[float]:
            book = StatsBook(r.catalog, seed=seed)
            return [c.score for c in r.route("list files", k=3, strategy="ehrr-ts", stats=book)]

        assert run(1) == run(1)
        assert run(1) != run(2)


def test_server_whose_ask_exceeds_the_posted_price_is_rejected(tmp_path: Path) -> None:
    path = _priced(tmp_path)
    data = json.loads(path.read_text())
    data["servers"][2]["ask_cost"] = 0.05
    path.write_text(json.dumps(data))
    with Router(path, store=tmp_path / "s", embedder=HashingEmbedder()) as r:
        shown = {c.server for c in r.route("weather forecast alerts", k=7, strategy="ehrr")}
        assert "weather" not in shown
        assert "weather" in {
            c.server for c in r.route("weather forecast alerts", k=7, strategy="ehrr-no-auction")
        }


def test_a_never_called_irrelevant_tool_outranks_an_observed_relevant_one_unless_fixed(
    tmp_path: Path, catalog_file: Path
) -> None:
    """Issue 24: under the paper's priors an unseen tool costs ≈ 1.1 s while the right tool,
    once observed slow, costs its real 3.5 s: the cost gap beats the similarity gap.
    ``unseen_cost="optimistic"`` costs the unseen irrelevant tool at the observed mean."""
    with Router(catalog_file, store=tmp_path / "s", embedder=HashingEmbedder()) as r:
        ix = r.built
        book = StatsBook(ix.catalog)
        for _ in range(10):
            book.record(Outcome("weather", "get_forecast", True, 3.5))
        v = r.query_context("weather forecast for Berlin").vector
        row = ix.keys.index(("weather", "get_forecast"))

        def best(**kw: object) -> int:
            p = EhrrParams(hierarchy=False, auction=False, similarity="cosine", **kw)  # type: ignore[arg-type]
            u = ehrr_route(ix, ix.server_vectors @ v, ix.tool_vectors @ v, book, p)
            return int(np.argmax(u))

        assert best() != row  # the paper's failure mode
        assert best(unseen_cost="optimistic") == row


def test_the_fixed_shortlist_grows_with_the_catalog(tmp_path: Path, catalog_file: Path) -> None:
    with Router(catalog_file, store=tmp_path / "s", embedder=HashingEmbedder()) as r:
        ix = r.built
        v = r.query_context("read a file").vector
        trace = EhrrTrace()
        p = EhrrParams(servers_k=1, servers_share=0.5)
        ehrr_route(ix, ix.server_vectors @ v, ix.tool_vectors @ v, StatsBook(ix.catalog), p, trace)
        assert len(trace.shortlisted) == 2  # ⌈0.5 · 3 servers⌉
