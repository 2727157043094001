"""EHRR's equations: similarity, expected time-to-success, utilities, posted prices.

*Clearing MCP Navigation Fog with Economics-Aware Hierarchical Tool Routing*, Sec. III and
Sec. IV. One pure function per equation:

    eq. 1   Sim(q, f)  = max{0, cos(e(q), e(f))}                        clipped_similarity
            r̃          = max(ε, r − √σ²)                                 conservative_success
            G_i        = L^route + L_i^conn                               fixed_overhead
    eq. 2   C_i^s      = (G_i + L̂_i^call) / max(ε, (1 − p_i^fail) r̃_i)    server_cost
    eq. 3/7 U          = Sim − α C                                        utility
    eq. 4   τ_i        = p_bs Sim + p_ofs log(1 + C_i^s / L0)             posted_price
            τ'_i       = min{τ_i, B}                      (Prop. 3)       posted_price(cap=B)
    eq. 5   a_i        = 1{c_i ≤ τ_i}                                     accepts
    Alg. 2  p_ij ≤ τ_i                              (tool feasibility)    affordable
    eq. 6   C_ij^t     = (G_i + l_ij) / max(ε, (1 − p_i^fail) r_ij) + κ p_ij
                         (per attempt: κ p_ij / max(ε, …))                tool_cost
    eq. 8   x          ← (1 − λ) x + λ z                                  ema
            σ²         ← (1 − λ_σ) σ² + λ_σ (y − r)²                      ema_variance

The eq. 8 state (:class:`~toolroute.learn.estimate.ServerStats`,
:class:`~toolroute.learn.estimate.ToolStats`) and its updates live in
:mod:`toolroute.learn.estimate`, which the store and every strategy share; they are re-exported
here so the table above reads whole. Times are in seconds, prices in USD per call. Defaults
are the paper's Table V. Every function validates its arguments and raises
:class:`toolroute.errors.ConfigError` on a value outside the domain the paper gives it.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from toolroute.errors import ConfigError
from toolroute.learn.estimate import (
    DEFAULT_SMOOTHING,
    EPS,
    LAMBDA,
    PRIOR_FAIL_PROB,
    PRIOR_LATENCY_S,
    PRIOR_SUCCESS,
    PRIOR_VARIANCE,
    ServerStats,
    Smoothing,
    ToolStats,
    _non_negative,
    _positive,
    _probability,
    conservative_success,
    ema,
    ema_variance,
)

__all__ = [
    "ALPHA_SERVER",
    "ALPHA_TOOL",
    "DEFAULT_SMOOTHING",
    "EPS",
    "KAPPA",
    "L0",
    "LAMBDA",
    "P_BS",
    "P_OFS",
    "PRIOR_FAIL_PROB",
    "PRIOR_LATENCY_S",
    "PRIOR_SUCCESS",
    "PRIOR_VARIANCE",
    "ServerStats",
    "Smoothing",
    "ToolStats",
    "accepts",
    "affordable",
    "clipped_similarity",
    "conservative_success",
    "ema",
    "ema_variance",
    "fixed_overhead",
    "posted_price",
    "server_cost",
    "tool_cost",
    "utility",
]

# Table V (key hyperparameters) and Sec. III.
P_BS = 0.0025
"""p_bs: base price (USD), the low-complexity price scale of Sec. V."""
P_OFS = 0.0225
"""p_ofs: offset price (USD), the high-complexity price scale of Sec. V."""
L0 = 1.0
"""L0: reference time (s) that makes the logarithm of eq. 4 dimensionless."""
ALPHA_SERVER = 0.1
"""α_s: server utility weight (eq. 3)."""
ALPHA_TOOL = 0.25
"""α_t: tool utility weight (eq. 7)."""
KAPPA = 1.0
"""κ: seconds per USD (eq. 6)."""
# -- eq. 1 -------------------------------------------------------------------------------------


def clipped_similarity(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Clipped cosine similarity Sim(q, f) = max{0, cos(e(q), e(f))} ∈ [0, 1] (EHRR eq. 1).

    The cosine is 0 when either vector has zero norm, as the paper defines it. The result is
    also capped at 1 so that float rounding on near-identical vectors stays in [0, 1].
    """
    va = np.asarray(a, dtype=np.float64)
    vb = np.asarray(b, dtype=np.float64)
    if va.ndim != 1 or va.shape != vb.shape:
        raise ConfigError(
            f"similarity needs two 1-d vectors of the same length, got shapes {va.shape} and "
            f"{vb.shape}"
        )
    if not (np.isfinite(va).all() and np.isfinite(vb).all()):
        raise ConfigError("similarity vectors must be finite")
    norms = float(np.linalg.norm(va)) * float(np.linalg.norm(vb))
    if norms <= 0.0:  # EHRR eq. 1, "otherwise" branch
        return 0.0
    cosine = float(np.dot(va, vb)) / norms
    return min(1.0, max(0.0, cosine))  # EHRR eq. 1


# -- eq. 2 and its inputs ----------------------------------------------------------------------


def fixed_overhead(route_s: float, connect_s: float) -> float:
    """Fixed communication overhead G_i = L^route + L_i^conn in seconds (EHRR Sec. III)."""
    return _non_negative("routing latency", route_s) + _non_negative("connect latency", connect_s)


def _attempt_success(success: float, fail_prob: float, eps: float) -> float:
    """Success probability of one attempt, max(ε, (1 − p^fail) r), denominator of eqs. 2 and 6.

    p^fail = 1 is accepted although the paper states p^fail ∈ [0, 1): an EMA of failures can
    round to 1.0, and the ε floor keeps the cost finite.
    """
    _probability("success probability", success)
    _probability("failure probability", fail_prob)
    _positive("eps", eps)
    return max(eps, (1.0 - fail_prob) * success)


def server_cost(
    overhead_s: float,
    call_latency_s: float,
    success: float,
    fail_prob: float,
    eps: float = EPS,
) -> float:
    """Server expected time-to-success C_i^s in seconds (EHRR eq. 2).

    C_i^s = (G_i + L̂_i^call) / max(ε, (1 − p_i^fail) r̃_i): ``overhead_s`` is G_i (see
    :func:`fixed_overhead`), ``call_latency_s`` the EMA call latency L̂_i^call, ``success`` the
    conservative estimate r̃_i (:func:`conservative_success`), ``fail_prob`` p_i^fail.
    """
    attempt = _non_negative("overhead", overhead_s) + _non_negative("call latency", call_latency_s)
    return attempt / _attempt_success(success, fail_prob, eps)  # EHRR eq. 2


# -- eqs. 3 and 7 ------------------------------------------------------------------------------


def utility(similarity: float, cost: float, alpha: float) -> float:
    """Utility U = Sim − α C (EHRR eq. 3 for servers with α_s, eq. 7 for tools with α_t).

    ``alpha`` > 0 trades similarity against cost (Table V: α_s = 0.1, α_t = 0.25).
    """
    _probability("similarity", similarity)
    _non_negative("cost", cost)
    _positive("alpha", alpha)
    return similarity - alpha * cost  # EHRR eq. 3 / eq. 7


# -- eqs. 4 and 5, Prop. 3 ---------------------------------------------------------------------


def posted_price(
    similarity: float,
    server_cost: float,
    p_bs: float = P_BS,
    p_ofs: float = P_OFS,
    l0: float = L0,
    cap: float | None = None,
) -> float:
    """Posted price τ_i = p_bs Sim + p_ofs log(1 + C_i^s / L0) in USD per call (EHRR eq. 4).

    The logarithm is natural (it reproduces Table I: τ_1 ≈ 0.0249, τ_2 ≈ 0.0351). With a buyer
    budget ``cap`` B > 0 the price is τ'_i = min{τ_i, B}, which keeps the accept rule
    dominant-strategy and ex-post individually rational (EHRR Prop. 3).
    """
    _probability("similarity", similarity)
    _non_negative("server cost", server_cost)
    _positive("p_bs", p_bs)
    _positive("p_ofs", p_ofs)
    _positive("l0", l0)
    tau = p_bs * similarity + p_ofs * math.log1p(server_cost / l0)  # EHRR eq. 4
    if cap is None:
        return tau
    return min(tau, _positive("budget cap", cap))  # EHRR Prop. 3


def accepts(ask_cost: float, price: float) -> bool:
    """One-bit answer of a server to a posted price: a_i = 1{c_i ≤ τ_i} (EHRR eq. 5).

    Accepting iff the private per-call cost c_i is at most the posted price τ_i is the server's
    dominant strategy and ex-post individually rational (EHRR Theorem 1); a tie accepts.
    """
    return _non_negative("ask cost", ask_cost) <= _non_negative("posted price", price)


def affordable(price: float, posted: float) -> bool:
    """Tool feasibility p_ij ≤ τ_i on an accepted server (EHRR Alg. 2 line 20, set F(q_s))."""
    return _non_negative("tool price", price) <= _non_negative("posted price", posted)


# -- eq. 6 -------------------------------------------------------------------------------------


def tool_cost(
    overhead_s: float,
    latency_s: float,
    success: float,
    fail_prob: float,
    price: float,
    kappa: float = KAPPA,
    eps: float = EPS,
    per_attempt: bool = False,
) -> float:
    """Tool execution-aware cost C_ij^t in seconds (EHRR eq. 6).

    C_ij^t = (G_i + l_ij) / max(ε, (1 − p_i^fail) r_ij) + κ p_ij, with the tool-level success
    estimate r_ij (not a conservative one: the paper keeps no tool-level variance) and the
    server's p_i^fail. The price is paid once, since agents reroute after a failure; with
    ``per_attempt`` (billing per attempt, retries common) the paper's variant divides it by the
    same success probability: κ p_ij / max(ε, (1 − p_i^fail) r_ij).
    """
    attempt = _non_negative("overhead", overhead_s) + _non_negative("tool latency", latency_s)
    beta = _attempt_success(success, fail_prob, eps)
    money = _positive("kappa", kappa) * _non_negative("tool price", price)
    if per_attempt:
        return (attempt + money) / beta  # EHRR eq. 6, per-attempt billing variant
    return attempt / beta + money  # EHRR eq. 6
