"""Pseudo-relevance feedback on sub-intents (route/feedback.py) and its switch in ``multi``.

Hand-made unit vectors on four axes make the geometry exact: e0 the user's words for buying
shares, e1 the catalog's words for it (broker, exchange, order), e2 weather, e3 a company name.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from tests.conftest import SMALL_CATALOG, HashingEmbedder, tool
from toolroute.index.lexical import LexicalIndex
from toolroute.route.feedback import intent_feedback
from toolroute.route.strategy import MultiParams, QueryContext, RouteParams, multi
from toolroute.router import Router

pytestmark = pytest.mark.usefixtures("research_variants")


def _unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


BUY_SHARES, PLACE_ORDER, ACME_NEWS, FORECAST = range(4)
TOOLS = np.stack(
    [
        _unit(1, 1, 0, 0),  # buy_shares: the clause's words and the catalog's
        _unit(0, 1, 0, 0),  # place_order: the catalog's words only
        _unit(0.3, 0, 0, 1),  # acme_news: a stray word of the clause, another need
        _unit(0, 0, 1, 0),  # get_forecast
    ]
)


def _index() -> Any:
    # multi reads the tool vectors, the size and BM25 (none of the query's words here)
    texts = ["buy shares", "place order", "acme news", "weather forecast"]
    return SimpleNamespace(tool_vectors=TOOLS, size=len(TOOLS), tool_lexical=LexicalIndex(texts))


def _query() -> QueryContext:
    clauses = np.stack([_unit(0, 0, 1, 0), _unit(1, 0, 0, 0)])  # the weather; buying shares
    return QueryContext(
        text="zzz", vector=_unit(0.2, 0, 1, 0), intents=("w", "b"), intent_vectors=clauses
    )


def test_a_clause_moves_towards_its_own_top_tools_and_stays_a_unit_vector() -> None:
    clause = _unit(1, 0, 0, 0)[None, :]
    moved = intent_feedback(_index(), clause, beta=1.0, depth=1)
    assert np.allclose(np.linalg.norm(moved, axis=1), 1.0)
    assert float(moved[0] @ TOOLS[PLACE_ORDER]) > float(clause[0] @ TOOLS[PLACE_ORDER]) + 0.3


def test_each_clause_moves_towards_its_own_tools_not_another_clauses() -> None:
    clauses = _query().intent_vectors
    assert clauses is not None
    moved = intent_feedback(_index(), clauses, beta=1.0, depth=1)
    assert np.allclose(moved[0], clauses[0])  # the weather clause's top tool is itself
    assert float(moved[1] @ TOOLS[FORECAST]) == 0.0


def test_feedback_off_leaves_the_clauses_as_they_are() -> None:
    clauses = _query().intent_vectors
    assert clauses is not None
    assert intent_feedback(_index(), clauses, beta=0.0, depth=5) is clauses
    assert intent_feedback(_index(), clauses, beta=0.3, depth=0) is clauses


def test_with_feedback_a_tool_in_the_catalogs_words_outranks_one_sharing_a_stray_word() -> None:
    ix, q = _index(), _query()
    off = multi(ix, q, RouteParams())
    on = multi(ix, q, RouteParams(multi=MultiParams(intent_feedback=1.0, intent_feedback_depth=1)))
    assert off[ACME_NEWS] > off[PLACE_ORDER]
    assert on[PLACE_ORDER] > on[ACME_NEWS]
    assert int(np.argmax(on[:3])) == BUY_SHARES


def test_adaptive_prf_turns_feedback_on_and_default_leaves_it_off(tmp_path: Path) -> None:
    market = {
        "id": "market",
        "name": "Market",
        "description": "",
        "tools": [
            tool("buy_shares", "Buy shares of a company through a broker on the stock exchange"),
            tool("place_order", "Place an order with a broker on the stock exchange"),
            tool("acme_news", "News about Acme"),
        ],
    }
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps({"servers": [*SMALL_CATALOG["servers"], market]}), "utf-8")
    query = "Check the weather forecast for Paris, then buy shares of Acme"
    scores = {}
    for name, params in (
        ("default", RouteParams()),
        ("adaptive-prf", RouteParams()),
        ("default", RouteParams(multi=MultiParams(intent_feedback=0.3))),
    ):
        with Router(catalog, store=tmp_path / "s", embedder=HashingEmbedder(), params=params) as r:
            r.index()
            scores[name, params.multi.intent_feedback] = r.scores(query, name)
        shutil.rmtree(tmp_path / "s")
    assert not np.allclose(scores["default", 0.0], scores["adaptive-prf", 0.0])
    assert np.allclose(scores["default", 0.3], scores["adaptive-prf", 0.0])
