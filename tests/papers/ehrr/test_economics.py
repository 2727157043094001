"""EHRR economics (seed 000): the paper's worked examples (Tables I and II) and edge cases.

Tolerances are half a unit in the paper's last printed digit: C to 2 decimals (abs 0.005), U to
3 decimals (abs 5e-4), τ to 4 decimals (abs 5e-5). Every value is computed from the paper's own
inputs (Sec. III-A); nothing is fed back from the tables.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import HashingEmbedder
from toolroute.catalog import Catalog, Server, Tool
from toolroute.errors import ConfigError
from toolroute.papers.ehrr.economics import (
    ALPHA_SERVER,
    ALPHA_TOOL,
    EPS,
    KAPPA,
    L0,
    LAMBDA,
    P_BS,
    P_OFS,
    PRIOR_FAIL_PROB,
    PRIOR_LATENCY_S,
    PRIOR_SUCCESS,
    PRIOR_VARIANCE,
    ServerStats,
    Smoothing,
    ToolStats,
    accepts,
    affordable,
    clipped_similarity,
    conservative_success,
    ema,
    ema_variance,
    fixed_overhead,
    posted_price,
    server_cost,
    tool_cost,
    utility,
)
from toolroute.papers.ehrr.routing import _observed_latency
from toolroute.router import Router
from toolroute.stats import Outcome, StatsBook

pytestmark = pytest.mark.usefixtures("research_variants")

C_TOL = 0.005
U_TOL = 5e-4
TAU_TOL = 5e-5


# -- the toy example of seed 000 Sec. III-A -----------------------------------------------------


@dataclass(frozen=True)
class ToyServer:
    name: str
    sim: float
    overhead_s: float  # G_i
    call_latency_s: float  # L̂_i^call
    r_tilde: float  # r̃_i, given directly by the paper
    fail_prob: float
    ask_cost: float


@dataclass(frozen=True)
class ToyTool:
    name: str
    sim: float
    latency_s: float
    success: float
    price: float


S1 = ToyServer("s1", 0.75, 0.3, 0.9, 0.709, 0.05, 0.010)
S2 = ToyServer("s2", 0.85, 0.6, 0.6, 0.45, 0.20, 0.050)
T11 = ToyTool("t11", 0.90, 1.0, 0.70, 0.030)
T12 = ToyTool("t12", 0.75, 0.5, 0.90, 0.002)
T13 = ToyTool("t13", 0.85, 0.8, 0.80, 0.020)


def _c_server(s: ToyServer) -> float:
    return server_cost(s.overhead_s, s.call_latency_s, s.r_tilde, s.fail_prob, eps=EPS)


def _tau(s: ToyServer) -> float:
    return posted_price(s.sim, _c_server(s))


def _c_tool(t: ToyTool, on: ToyServer = S1) -> float:
    return tool_cost(on.overhead_s, t.latency_s, t.success, on.fail_prob, t.price, kappa=KAPPA)


def test_paper_hyperparameters_are_table_5() -> None:
    assert (P_BS, P_OFS, L0) == (0.0025, 0.0225, 1.0)
    assert (ALPHA_SERVER, ALPHA_TOOL, KAPPA, EPS, LAMBDA) == (0.1, 0.25, 1.0, 1e-3, 0.15)
    assert Smoothing() == Smoothing(0.15, 0.15, 0.15, 0.15)


def test_table_1_server_costs_are_expected_times_to_success() -> None:
    assert _c_server(S1) == pytest.approx(1.78, abs=C_TOL)  # 1.2 / (0.95 · 0.709) = 1.7816
    assert _c_server(S2) == pytest.approx(3.33, abs=C_TOL)  # 1.2 / (0.80 · 0.45) = 3.3333


def test_table_1_reliable_server_beats_the_more_similar_one() -> None:
    u1 = utility(S1.sim, _c_server(S1), ALPHA_SERVER)
    u2 = utility(S2.sim, _c_server(S2), ALPHA_SERVER)
    assert u1 == pytest.approx(0.572, abs=U_TOL)  # 0.57184
    assert u2 == pytest.approx(0.517, abs=U_TOL)  # 0.51667
    assert S1.sim < S2.sim
    assert u1 > u2


def test_table_1_posted_prices_use_the_natural_log() -> None:
    assert _tau(S1) == pytest.approx(0.0249, abs=TAU_TOL)  # 0.024893
    assert _tau(S2) == pytest.approx(0.0351, abs=TAU_TOL)  # 0.035118


def test_table_1_second_server_rejects_its_posted_price() -> None:
    assert accepts(S1.ask_cost, _tau(S1))  # 0.010 <= 0.0249
    assert not accepts(S2.ask_cost, _tau(S2))  # 0.050 > 0.0351


def test_table_2_expensive_tool_is_infeasible_under_the_posted_price() -> None:
    tau1 = _tau(S1)
    assert not affordable(T11.price, tau1)  # 0.030 > 0.0249
    assert affordable(T12.price, tau1)
    assert affordable(T13.price, tau1)


def test_table_2_tool_costs_add_price_to_time_to_success() -> None:
    assert _c_tool(T12) == pytest.approx(0.94, abs=C_TOL)  # 0.8 / 0.855 + 0.002 = 0.93767
    assert _c_tool(T13) == pytest.approx(1.47, abs=C_TOL)  # 1.1 / 0.760 + 0.020 = 1.46737


def test_table_2_reliable_tool_beats_the_more_similar_one() -> None:
    u12 = utility(T12.sim, _c_tool(T12), ALPHA_TOOL)
    u13 = utility(T13.sim, _c_tool(T13), ALPHA_TOOL)
    assert u12 == pytest.approx(0.516, abs=U_TOL)  # 0.51558
    assert u13 == pytest.approx(0.483, abs=U_TOL)  # 0.48316
    assert T12.sim < T13.sim
    assert u12 > u13


def test_toy_example_routes_like_algorithm_2() -> None:
    servers = sorted(
        [S1, S2], key=lambda s: utility(s.sim, _c_server(s), ALPHA_SERVER), reverse=True
    )[:5]
    accepted = [s for s in servers if accepts(s.ask_cost, _tau(s))]
    assert [s.name for s in accepted] == ["s1"]
    tools = {"s1": [T11, T12, T13]}
    scored = [
        (utility(t.sim, _c_tool(t, s), ALPHA_TOOL), t.name)
        for s in accepted
        for t in tools[s.name]
        if affordable(t.price, _tau(s))
    ]
    assert [name for _, name in sorted(scored, reverse=True)[:3]] == ["t12", "t13"]


# -- eq. 1 --------------------------------------------------------------------------------------


def test_similarity_of_a_vector_with_itself_is_one() -> None:
    v = np.array([0.3, -1.2, 2.0], dtype=np.float32)
    assert clipped_similarity(v, v) == pytest.approx(1.0)
    assert clipped_similarity(v, 7.0 * v) == pytest.approx(1.0)


def test_similarity_never_exceeds_one_under_rounding() -> None:
    v = np.full(384, 0.1, dtype=np.float32)
    assert 0.0 <= clipped_similarity(v, v) <= 1.0


def test_negative_cosine_is_clipped_to_zero() -> None:
    assert clipped_similarity([1.0, 0.0], [-1.0, 0.0]) == 0.0
    assert clipped_similarity([1.0, 0.2], [-1.0, 0.1]) == 0.0


def test_zero_vector_has_zero_similarity() -> None:
    assert clipped_similarity([0.0, 0.0], [1.0, 0.0]) == 0.0


def test_similarity_is_the_cosine_when_positive() -> None:
    assert clipped_similarity([1.0, 0.0], [1.0, 1.0]) == pytest.approx(1 / math.sqrt(2))


def test_similarity_of_mismatched_or_non_finite_vectors_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="same length"):
        clipped_similarity([1.0, 0.0], [1.0, 0.0, 0.0])
    with pytest.raises(ConfigError, match="1-d"):
        clipped_similarity([[1.0]], [[1.0]])
    with pytest.raises(ConfigError, match="finite"):
        clipped_similarity([math.nan, 1.0], [1.0, 1.0])


# -- r̃ and eq. 2 --------------------------------------------------------------------------------


def test_conservative_success_subtracts_one_standard_deviation() -> None:
    assert conservative_success(0.9, 0.04) == pytest.approx(0.7)


def test_conservative_success_is_floored_at_eps() -> None:
    assert conservative_success(0.1, 0.25) == EPS
    assert conservative_success(0.1, 0.25, eps=0.05) == 0.05


def test_fixed_overhead_adds_routing_and_connection_latency() -> None:
    assert fixed_overhead(0.1, 0.2) == pytest.approx(0.3)


def test_flaky_server_costs_more() -> None:
    steady = server_cost(0.3, 0.9, conservative_success(0.95, 0.01), 0.05)
    flaky = server_cost(0.3, 0.9, conservative_success(0.95, 0.04), 0.05)
    assert flaky > steady


def test_server_failure_risk_costs_more() -> None:
    assert server_cost(0.3, 0.9, 0.8, 0.3) > server_cost(0.3, 0.9, 0.8, 0.0)


def test_never_succeeding_server_cost_is_floored_at_eps() -> None:
    assert server_cost(0.3, 0.9, 0.0, 0.0) == pytest.approx(1.2 / EPS)
    assert server_cost(0.3, 0.9, 0.9, 1.0) == pytest.approx(1.2 / EPS)
    assert server_cost(0.3, 0.9, 0.0, 0.0, eps=0.1) == pytest.approx(12.0)


def test_perfect_server_cost_is_its_attempt_time() -> None:
    assert server_cost(0.3, 0.9, 1.0, 0.0) == pytest.approx(1.2)


# -- eqs. 3 and 7 -------------------------------------------------------------------------------


def test_utility_is_similarity_minus_weighted_cost() -> None:
    assert utility(0.8, 2.0, 0.1) == pytest.approx(0.6)
    assert utility(0.1, 2.0, 0.25) == pytest.approx(-0.4)


@pytest.mark.parametrize("alpha", [0.0, -0.1, math.inf, math.nan])
def test_utility_weight_must_be_positive(alpha: float) -> None:
    with pytest.raises(ConfigError, match="alpha"):
        utility(0.5, 1.0, alpha)


def test_utility_rejects_out_of_range_similarity_and_negative_cost() -> None:
    with pytest.raises(ConfigError, match="similarity"):
        utility(1.2, 1.0, 0.1)
    with pytest.raises(ConfigError, match="cost"):
        utility(0.5, -1.0, 0.1)


# -- eqs. 4 and 5, Prop. 2 and 3 ----------------------------------------------------------------


def test_posted_price_is_concave_with_bounded_slope() -> None:
    costs = [0.0, 0.5, 1.0, 2.0, 4.0, 8.0]
    prices = [posted_price(0.5, c) for c in costs]
    points = list(zip(costs, prices, strict=True))
    slopes = [(p1 - p0) / (c1 - c0) for (c0, p0), (c1, p1) in pairwise(points)]
    assert all(s > 0 for s in slopes)
    assert all(b < a for a, b in pairwise(slopes))
    assert all(s <= P_OFS / L0 for s in slopes)  # Prop. 2 perturbation bound


def test_posted_price_of_an_irrelevant_free_server_is_zero() -> None:
    assert posted_price(0.0, 0.0) == 0.0


def test_budget_cap_bounds_the_posted_price() -> None:
    c2 = _c_server(S2)
    assert posted_price(S2.sim, c2, cap=0.02) == 0.02
    assert posted_price(S2.sim, c2, cap=1.0) == pytest.approx(_tau(S2))


def test_capped_price_still_rejects_a_too_costly_server() -> None:
    capped = posted_price(S1.sim, _c_server(S1), cap=0.005)
    assert not accepts(S1.ask_cost, capped)  # Prop. 3: same accept rule on τ' = min(τ, B)


@pytest.mark.parametrize("cap", [0.0, -0.01, math.nan])
def test_budget_cap_must_be_positive(cap: float) -> None:
    with pytest.raises(ConfigError, match="budget cap"):
        posted_price(0.5, 1.0, cap=cap)


@pytest.mark.parametrize(("kwarg", "value"), [("p_bs", 0.0), ("p_ofs", -1.0), ("l0", 0.0)])
def test_posted_price_coefficients_must_be_positive(kwarg: str, value: float) -> None:
    with pytest.raises(ConfigError, match=kwarg):
        posted_price(0.5, 1.0, **{kwarg: value})


def test_server_accepts_a_posted_price_equal_to_its_ask() -> None:
    assert accepts(0.02, 0.02)
    assert not accepts(0.0200001, 0.02)


def test_negative_ask_cost_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="ask cost"):
        accepts(-0.01, 0.02)


# -- eq. 6 --------------------------------------------------------------------------------------


def test_slower_pricier_or_less_reliable_tool_costs_more() -> None:
    base = tool_cost(0.3, 0.5, 0.9, 0.05, 0.002)
    assert tool_cost(0.3, 0.9, 0.9, 0.05, 0.002) > base
    assert tool_cost(0.3, 0.5, 0.9, 0.05, 0.010) > base
    assert tool_cost(0.3, 0.5, 0.6, 0.05, 0.002) > base
    assert tool_cost(0.3, 0.5, 0.9, 0.20, 0.002) > base


def test_kappa_converts_price_to_seconds() -> None:
    once = tool_cost(0.0, 0.0, 1.0, 0.0, 0.02, kappa=1.0)
    assert tool_cost(0.0, 0.0, 1.0, 0.0, 0.02, kappa=50.0) == pytest.approx(50.0 * once)


def test_per_attempt_billing_divides_the_price_by_success() -> None:
    beta = 0.95 * 0.8
    cost = tool_cost(0.3, 0.8, 0.8, 0.05, 0.02, per_attempt=True)
    assert cost == pytest.approx(1.1 / beta + 0.02 / beta)
    assert cost > tool_cost(0.3, 0.8, 0.8, 0.05, 0.02)


def test_per_attempt_billing_changes_nothing_for_a_sure_tool() -> None:
    assert tool_cost(0.3, 0.8, 1.0, 0.0, 0.02, per_attempt=True) == pytest.approx(
        tool_cost(0.3, 0.8, 1.0, 0.0, 0.02)
    )


def test_never_succeeding_tool_cost_is_floored_at_eps() -> None:
    assert tool_cost(0.3, 0.7, 0.0, 0.0, 0.01) == pytest.approx(1.0 / EPS + 0.01)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: server_cost(0.3, -0.1, 0.9, 0.0), "call latency"),
        (lambda: server_cost(-0.3, 0.1, 0.9, 0.0), "overhead"),
        (lambda: server_cost(0.3, 0.1, 1.1, 0.0), "success probability"),
        (lambda: server_cost(0.3, 0.1, 0.9, -0.1), "failure probability"),
        (lambda: server_cost(0.3, 0.1, 0.9, 0.0, eps=0.0), "eps"),
        (lambda: server_cost(0.3, math.inf, 0.9, 0.0), "finite"),
        (lambda: tool_cost(0.3, -1.0, 0.9, 0.0, 0.01), "tool latency"),
        (lambda: tool_cost(0.3, 0.5, 0.9, 1.5, 0.01), "failure probability"),
        (lambda: tool_cost(0.3, 0.5, 0.9, 0.0, -0.01), "tool price"),
        (lambda: tool_cost(0.3, 0.5, 0.9, 0.0, 0.01, kappa=0.0), "kappa"),
        (lambda: conservative_success(-0.1, 0.0), "success rate"),
        (lambda: conservative_success(0.5, math.nan), "variance"),
        (lambda: fixed_overhead(-0.1, 0.2), "routing latency"),
    ],
)
def test_bad_arguments_are_config_errors(call: Callable[[], object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        call()


# -- eq. 8 --------------------------------------------------------------------------------------


def test_ema_moves_a_fraction_lambda_toward_the_observation() -> None:
    assert ema(0.0, 1.0) == pytest.approx(LAMBDA)
    assert ema(2.0, 1.0, lam=0.5) == pytest.approx(1.5)


def test_ema_error_decays_geometrically() -> None:
    x, mu = 0.0, 1.0
    for t in range(1, 51):
        x = ema(x, mu)
        assert x == pytest.approx(mu + (1 - LAMBDA) ** t * (0.0 - mu))  # Lemma 2
    assert x == pytest.approx(mu, abs=1e-3)


@pytest.mark.parametrize("lam", [0.0, 1.0, -0.2, 1.5, math.nan])
def test_smoothing_coefficient_must_lie_in_the_open_unit_interval(lam: float) -> None:
    with pytest.raises(ConfigError, match="lam"):
        ema(0.5, 1.0, lam=lam)
    with pytest.raises(ConfigError, match="lambda_r"):
        Smoothing(rate=lam)


def test_variance_update_uses_the_rate_before_the_observation() -> None:
    assert ema_variance(0.0, 1.0, 0.0) == pytest.approx(LAMBDA)  # (0 − 1)², not (0 − 0.85)²
    stats = ServerStats().update(success=False, latency_s=0.5)
    assert stats.success == pytest.approx(0.85)
    assert stats.variance == pytest.approx(0.15)


def test_unseen_server_has_the_documented_priors() -> None:
    stats = ServerStats()
    assert (stats.success, stats.variance, stats.fail_prob, stats.latency_s, stats.calls) == (
        PRIOR_SUCCESS,
        PRIOR_VARIANCE,
        PRIOR_FAIL_PROB,
        PRIOR_LATENCY_S,
        0,
    )
    assert (PRIOR_SUCCESS, PRIOR_VARIANCE, PRIOR_FAIL_PROB, PRIOR_LATENCY_S) == (1.0, 0.0, 0.0, L0)
    assert stats.conservative() == 1.0
    # An unseen server costs its attempt time: it competes on similarity and latency alone.
    assert server_cost(0.3, stats.latency_s, stats.conservative(), stats.fail_prob) == (
        pytest.approx(1.3)
    )


def test_unseen_tool_has_the_documented_priors() -> None:
    assert ToolStats() == ToolStats(PRIOR_SUCCESS, PRIOR_LATENCY_S, 0)


def test_catalog_hints_replace_the_priors() -> None:
    hinted = ServerStats.from_prior(success=0.9, fail_prob=0.05, latency_s=0.4)
    assert (hinted.success, hinted.fail_prob, hinted.latency_s) == (0.9, 0.05, 0.4)
    assert ServerStats.from_prior() == ServerStats()
    assert ToolStats.from_prior(latency_s=2.0) == ToolStats(PRIOR_SUCCESS, 2.0, 0)


def test_update_returns_a_new_state_and_leaves_the_old_one() -> None:
    before = ServerStats()
    after = before.update(success=True, latency_s=0.2, server_failed=True)
    assert before == ServerStats()
    assert after.calls == 1
    assert after.fail_prob == pytest.approx(LAMBDA)
    assert after.latency_s == pytest.approx(0.85 * PRIOR_LATENCY_S + 0.15 * 0.2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        before.success = 0.5  # type: ignore[misc]


def test_stats_converge_to_a_steady_call_pattern() -> None:
    stats, tool = ServerStats(), ToolStats()
    rates, variances = [], []
    for i in range(300):  # four successes then one failure: p = 0.8
        ok = i % 5 != 4
        stats = stats.update(success=ok, latency_s=0.4, server_failed=False)
        tool = tool.update(success=ok, latency_s=0.4)
        rates.append(stats.success)
        variances.append(stats.variance)
    assert float(np.mean(rates[-100:])) == pytest.approx(0.8, abs=0.01)
    # Bernoulli variance p(1 − p) = 0.16, plus the estimate's own jitter (Lemma 2).
    assert float(np.mean(variances[-100:])) == pytest.approx(0.16, abs=0.04)
    assert stats.latency_s == pytest.approx(0.4)
    assert stats.fail_prob == pytest.approx(0.0, abs=1e-12)
    assert tool.success == pytest.approx(stats.success)
    assert tool.calls == stats.calls == 300


def test_custom_smoothing_reacts_faster() -> None:
    fast = ServerStats().update(False, 0.5, smoothing=Smoothing(rate=0.5))
    slow = ServerStats().update(False, 0.5)
    assert fast.success == pytest.approx(0.5)
    assert fast.success < slow.success


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: ServerStats(success=1.5), "success rate"),
        (lambda: ServerStats(fail_prob=-0.1), "failure probability"),
        (lambda: ServerStats(latency_s=-1.0), "call latency"),
        (lambda: ServerStats(calls=-1), "calls"),
        (lambda: ToolStats(success=math.nan), "success rate"),
        (lambda: ServerStats().update(True, -0.5), "latency"),
        (lambda: ToolStats().update(True, math.inf), "latency"),
    ],
)
def test_bad_stats_are_config_errors(make: Callable[[], object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make()


# -- estimators beyond the paper (issue 12) ------------------------------------------------------


def _twins() -> Catalog:
    """Two providers of one capability: the same tool, the same description."""
    tool = "Get the current time in a timezone"
    return Catalog(
        servers=tuple(
            Server(sid, "Clock", "Time service", (Tool(sid, "get_current_time", tool),))
            for sid in ("clock-a", "clock-b")
        )
    )


def test_ucb_leaves_a_fast_flaky_provider_that_the_ema_keeps(tmp_path: Path) -> None:
    """The lock-in of tests/learn/test_learning.py, in memory: clock-a answered fast
    (0.05 s) once, then failed twice; clock-b was never called. The paper's EMA compares
    clock-a's observed latency with clock-b's prior L0 = 1 s and keeps clock-a; ehrr-ucb
    gives clock-b the observed latency and an optimistic success bound, and tries it."""
    with Router(_twins(), store=tmp_path / "s", embedder=HashingEmbedder()) as r:
        book = StatsBook(r.catalog)
        for ok in (True, False, False):
            book.record(Outcome("clock-a", "get_current_time", ok, 0.05))

        def first(strategy: str) -> str:
            return r.route("current time", k=2, strategy=strategy, stats=book)[0].server

        assert first("ehrr") == "clock-a"
        assert first("ehrr-ucb") == "clock-b"
        fresh = StatsBook(r.catalog)
        assert first("hybrid") == "clock-a"  # similarity alone: a tie, catalog order
        assert r.route("current time", k=2, strategy="ehrr-ucb", stats=fresh)[0].server == (
            "clock-a"
        )


def test_ucb_latency_is_the_mean_of_observed_calls_without_the_prior() -> None:
    lam = LAMBDA
    ema_after_one = (1 - lam) * PRIOR_LATENCY_S + lam * 0.05
    out = _observed_latency(np.array([ema_after_one, PRIOR_LATENCY_S]), np.array([1.0, 0.0]), lam)
    assert out == pytest.approx([0.05, 0.05])
    none = _observed_latency(np.array([1.0, 1.0]), np.zeros(2), lam)
    assert none == pytest.approx([1.0, 1.0])
