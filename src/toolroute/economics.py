"""EHRR economics: similarity, expected time-to-success, utilities, posted prices, online stats.

Seed ``000_33cbc8800e6eb5c6.txt`` (EHRR, "Clearing MCP Navigation Fog with Economics-Aware
Hierarchical Tool Routing"), Sec. III and Sec. IV. One pure function per equation:

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

:class:`ServerStats` and :class:`ToolStats` hold the eq. 8 state; their ``update`` returns a new
state. Times are in seconds, prices in USD per call. Defaults are the paper's Table V. Every
function validates its arguments and raises :class:`toolroute.errors.ConfigError` on a value
outside the domain the paper gives it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from toolroute.errors import ConfigError

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

# Seed 000 Table V (key hyperparameters) and Sec. III.
EPS = 1e-3
"""ε: floor of success probabilities and of the geometric-retry denominator."""
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
LAMBDA = 0.15
"""λ_r = λ_σ = λ_p = λ_l: EMA smoothing coefficients (eq. 8)."""

# Priors for a server or tool with no observed call. The paper gives none; these are optimistic
# on purpose: an unseen server competes on similarity and its latency prior alone (r̃ = 1, no
# failure risk), so it gets tried, and eq. 8 corrects it within a few calls (effective window
# (2 − λ)/λ ≈ 12 calls at λ = 0.15, seed 000 Corollary 3). A catalog's success_rate,
# failure_rate or latency_s, when given, should replace these via ``from_prior``.
PRIOR_SUCCESS = 1.0
"""Prior success rate r of an unseen server or tool."""
PRIOR_VARIANCE = 0.0
"""Prior variance σ² of an unseen server's Bernoulli outcomes (so r̃ = r at first)."""
PRIOR_FAIL_PROB = 0.0
"""Prior post-accept failure probability p^fail of an unseen server."""
PRIOR_LATENCY_S = L0
"""Prior call latency (s) of an unseen server or tool: the paper's reference time L0."""


# -- argument checks ---------------------------------------------------------------------------
# Written as ``not (lo <= x <= hi)`` so that NaN fails every check.


def _finite(name: str, value: float) -> float:
    if not math.isfinite(value):
        raise ConfigError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def _non_negative(name: str, value: float) -> float:
    if not (_finite(name, value) >= 0.0):
        raise ConfigError(f"{name} must be >= 0, got {value!r}")
    return float(value)


def _positive(name: str, value: float) -> float:
    if not (_finite(name, value) > 0.0):
        raise ConfigError(f"{name} must be > 0, got {value!r}")
    return float(value)


def _probability(name: str, value: float) -> float:
    if not (0.0 <= value <= 1.0):
        raise ConfigError(f"{name} must be a probability in [0, 1], got {value!r}")
    return float(value)


def _smoothing(name: str, value: float) -> float:
    if not (0.0 < value < 1.0):
        raise ConfigError(f"{name} must be a smoothing coefficient in (0, 1), got {value!r}")
    return float(value)


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


def conservative_success(rate: float, variance: float, eps: float = EPS) -> float:
    """Conservative success estimate r̃ = max(ε, r − √σ²) (EHRR Sec. III, before eq. 2).

    ``rate`` is the EMA success rate r_i and ``variance`` the EMA variance σ_i² of eq. 8;
    subtracting one standard deviation makes the router risk-averse toward erratic servers.
    """
    _probability("success rate", rate)
    _probability("success variance", variance)  # an EMA of squares of values in [-1, 1]
    _positive("eps", eps)
    return max(eps, rate - math.sqrt(variance))


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


# -- eq. 8 -------------------------------------------------------------------------------------


def ema(previous: float, observation: float, lam: float = LAMBDA) -> float:
    """Exponential moving average x ← (1 − λ) x + λ z (EHRR eq. 8, each line).

    The mean error decays as (1 − λ)^t (EHRR Lemma 2).
    """
    _finite("previous value", previous)
    _finite("observation", observation)
    _smoothing("lam", lam)
    return (1.0 - lam) * previous + lam * observation


def ema_variance(variance: float, rate: float, outcome: float, lam: float = LAMBDA) -> float:
    """Variance update σ² ← (1 − λ_σ) σ² + λ_σ (y − r)² (EHRR eq. 8, second line).

    ``rate`` is r *before* this outcome's update: eq. 8 is one simultaneous assignment, and the
    pre-update residual is the prediction error of the estimate the router routed with (the
    post-update residual would shrink every term by (1 − λ_r)² and under-state the variance).
    """
    _probability("variance", variance)
    _probability("success rate", rate)
    _probability("outcome", outcome)
    return ema(variance, (outcome - rate) ** 2, lam)


@dataclass(frozen=True, slots=True)
class Smoothing:
    """Smoothing coefficients λ_r, λ_σ, λ_p, λ_l ∈ (0, 1) of EHRR eq. 8 (Table V: all 0.15)."""

    rate: float = LAMBDA
    variance: float = LAMBDA
    fail: float = LAMBDA
    latency: float = LAMBDA

    def __post_init__(self) -> None:
        _smoothing("lambda_r", self.rate)
        _smoothing("lambda_sigma", self.variance)
        _smoothing("lambda_p", self.fail)
        _smoothing("lambda_l", self.latency)


DEFAULT_SMOOTHING = Smoothing()
"""Table V smoothing: every λ = 0.15."""


@dataclass(frozen=True, slots=True)
class ServerStats:
    """Online statistics of one server (EHRR eq. 8): r_i, σ_i², p_i^fail, L̂_i^call.

    The defaults are the documented priors for an unseen server (``PRIOR_*``). ``calls`` counts
    the observations folded in.
    """

    success: float = PRIOR_SUCCESS
    variance: float = PRIOR_VARIANCE
    fail_prob: float = PRIOR_FAIL_PROB
    latency_s: float = PRIOR_LATENCY_S
    calls: int = 0

    def __post_init__(self) -> None:
        _probability("success rate", self.success)
        _probability("success variance", self.variance)
        _probability("failure probability", self.fail_prob)
        _non_negative("call latency", self.latency_s)
        if self.calls < 0:
            raise ConfigError(f"calls must be >= 0, got {self.calls}")

    @classmethod
    def from_prior(
        cls,
        success: float | None = None,
        fail_prob: float | None = None,
        latency_s: float | None = None,
    ) -> ServerStats:
        """Stats of an unseen server from catalog hints; a missing hint takes its ``PRIOR_*``."""
        return cls(
            success=PRIOR_SUCCESS if success is None else success,
            fail_prob=PRIOR_FAIL_PROB if fail_prob is None else fail_prob,
            latency_s=PRIOR_LATENCY_S if latency_s is None else latency_s,
        )

    def conservative(self, eps: float = EPS) -> float:
        """r̃_i = max(ε, r_i − √σ_i²), the success term of eq. 2."""
        return conservative_success(self.success, self.variance, eps)

    def update(
        self,
        success: bool,
        latency_s: float,
        server_failed: bool = False,
        smoothing: Smoothing = DEFAULT_SMOOTHING,
    ) -> ServerStats:
        """Fold in one routed call (EHRR eq. 8) and return the new state; ``self`` is unchanged.

        ``success`` is y_i (a valid, usable result), ``latency_s`` the observed call latency
        l_i and ``server_failed`` the post-accept failure indicator fail_i. Whether a crash
        also counts as y_i = 0 is the caller's choice; eq. 8 takes the two as observed.
        """
        y = 1.0 if success else 0.0
        return replace(
            self,
            success=ema(self.success, y, smoothing.rate),
            variance=ema_variance(self.variance, self.success, y, smoothing.variance),
            fail_prob=ema(self.fail_prob, 1.0 if server_failed else 0.0, smoothing.fail),
            latency_s=ema(self.latency_s, _non_negative("latency", latency_s), smoothing.latency),
            calls=self.calls + 1,
        )


@dataclass(frozen=True, slots=True)
class ToolStats:
    """Online statistics of one tool (EHRR eq. 8, "updated analogously"): r_ij and l_ij.

    The defaults are the documented priors for an unseen tool (``PRIOR_*``).
    """

    success: float = PRIOR_SUCCESS
    latency_s: float = PRIOR_LATENCY_S
    calls: int = 0

    def __post_init__(self) -> None:
        _probability("success rate", self.success)
        _non_negative("tool latency", self.latency_s)
        if self.calls < 0:
            raise ConfigError(f"calls must be >= 0, got {self.calls}")

    @classmethod
    def from_prior(cls, success: float | None = None, latency_s: float | None = None) -> ToolStats:
        """Stats of an unseen tool from catalog hints; a missing hint takes its ``PRIOR_*``."""
        return cls(
            success=PRIOR_SUCCESS if success is None else success,
            latency_s=PRIOR_LATENCY_S if latency_s is None else latency_s,
        )

    def update(
        self, success: bool, latency_s: float, smoothing: Smoothing = DEFAULT_SMOOTHING
    ) -> ToolStats:
        """Fold in one execution of this tool (EHRR eq. 8) and return the new state."""
        return replace(
            self,
            success=ema(self.success, 1.0 if success else 0.0, smoothing.rate),
            latency_s=ema(self.latency_s, _non_negative("latency", latency_s), smoothing.latency),
            calls=self.calls + 1,
        )
