"""Coverage-aware re-ranking of the top candidates (route/diversify.py)."""

from __future__ import annotations

import numpy as np

from toolroute.route.diversify import DiversifyParams, diversify


def _unit(*rows: list[float]) -> np.ndarray:
    m = np.array(rows, dtype=np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


# tools 0-2 serve need A (axis x), tool 3 serves need B (axis y), tool 4 neither (axis z)
TOOLS = _unit([1, 0.05, 0], [1, 0, 0.05], [1, 0.02, 0.02], [0.1, 1, 0], [0, 0, 1])
INTENTS = _unit([1, 0, 0], [0, 1, 0])
SCORES = np.array([0.90, 0.89, 0.88, 0.80, 0.10], dtype=np.float32)


def _order(s: np.ndarray) -> list[int]:
    return [int(i) for i in np.argsort(-s, kind="stable")]


def test_xquad_lifts_the_only_tool_for_a_second_need_above_more_tools_for_the_first() -> None:
    out = diversify(SCORES, TOOLS, INTENTS, DiversifyParams("xquad", pool=5, trade=0.5))
    assert _order(out)[:2] == [0, 3]


def test_pm2_gives_the_second_need_a_seat_in_the_top_two() -> None:
    out = diversify(SCORES, TOOLS, INTENTS, DiversifyParams("pm2", pool=5, trade=0.5))
    assert _order(out)[:2] == [0, 3]


def test_mmr_ranks_a_different_tool_above_near_copies_of_the_first() -> None:
    out = diversify(SCORES, TOOLS, None, DiversifyParams("mmr", pool=5, trade=0.5))
    assert _order(out)[:2] == [0, 3]


def test_a_request_with_one_intent_keeps_its_order_under_xquad_and_pm2() -> None:
    for method in ("xquad", "pm2"):
        p = DiversifyParams(method, pool=5, trade=0.9)  # type: ignore[arg-type]
        assert diversify(SCORES, TOOLS, None, p) is SCORES
        assert diversify(SCORES, TOOLS, INTENTS[:1], p) is SCORES


def test_off_returns_the_scores_unchanged() -> None:
    assert diversify(SCORES, TOOLS, INTENTS, DiversifyParams()) is SCORES


def test_the_kept_top_never_moves_even_at_full_coverage_weight() -> None:
    # at λ = 1 relevance no longer counts: without the kept top, tool 3 (need B) could lead
    scores = np.array([0.90, 0.89, 0.88, 0.80, 0.10], dtype=np.float32)
    out = diversify(scores, TOOLS, INTENTS[::-1], DiversifyParams("xquad", 5, 1.0, keep_top=1))
    assert _order(out)[0] == 0
    free = diversify(scores, TOOLS, INTENTS[::-1], DiversifyParams("xquad", 5, 1.0, keep_top=0))
    assert _order(free)[0] == 3


def test_tools_outside_the_pool_keep_their_scores_and_stay_below_it() -> None:
    scores = np.array([0.90, 0.89, 0.88, 0.80, 0.10, -np.inf], dtype=np.float32)
    tools = np.vstack([TOOLS, _unit([0, 1, 1])])
    out = diversify(scores, tools, INTENTS, DiversifyParams("xquad", pool=4, trade=0.5))
    assert out[4] == scores[4] and out[5] == -np.inf
    assert sorted(out[:4].tolist()) == sorted(scores[:4].tolist())
    assert out[:4].min() > out[4]


def test_an_intents_best_tool_below_the_pool_joins_it_when_intent_pool_is_set() -> None:
    narrow = DiversifyParams("xquad", pool=3, trade=0.9)
    assert _order(diversify(SCORES, TOOLS, INTENTS, narrow))[3] == 3  # below the pool
    wide = DiversifyParams("xquad", pool=3, trade=0.9, intent_pool=1)
    assert _order(diversify(SCORES, TOOLS, INTENTS, wide))[:2] == [0, 3]


def test_query_weights_favour_the_intent_closer_to_the_request() -> None:
    # after tool 0 (need A, a little of B), the second slot goes to B's tool (2) or C's (3):
    # uniform weights pick C's, left wholly uncovered; a request about A and B picks B's
    tools = _unit([1, 0.3, 0], [1, 0, 0.01], [0, 1, 0], [0, 0, 1])
    scores = np.array([0.90, 0.89, 0.80, 0.79], dtype=np.float32)
    intents = _unit([1, 0, 0], [0, 1, 0], [0, 0, 1])
    query = _unit([1, 0.8, 0.1])[0]
    uniform = DiversifyParams("xquad", pool=4, trade=0.9)
    assert _order(diversify(scores, tools, intents, uniform, query))[1] == 3
    weighted = DiversifyParams("xquad", pool=4, trade=0.9, weights="query")
    assert _order(diversify(scores, tools, intents, weighted, query))[1] == 2
