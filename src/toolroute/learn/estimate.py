"""Running estimates of a server's and a tool's behaviour, fed by executed calls.

Exponential moving averages of success, its variance, post-accept failure and latency, as
*Clearing MCP Navigation Fog with Economics-Aware Hierarchical Tool Routing* defines them (its
eq. 8), held in the frozen :class:`ServerStats` and :class:`ToolStats`; ``update`` returns a new
state. They are the statistics the store persists and every strategy may read, so they live
here, apart from any one routing method. Times are in seconds. Every function validates its
arguments and raises :class:`toolroute.errors.ConfigError` on a value outside its domain.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from toolroute.errors import ConfigError

__all__ = [
    "DEFAULT_SMOOTHING",
    "EPS",
    "LAMBDA",
    "PRIOR_FAIL_PROB",
    "PRIOR_LATENCY_S",
    "PRIOR_SUCCESS",
    "PRIOR_VARIANCE",
    "ServerStats",
    "Smoothing",
    "ToolStats",
    "conservative_success",
    "ema",
    "ema_variance",
]

EPS = 1e-3
"""ε: floor of success probabilities and of the geometric-retry denominator."""
LAMBDA = 0.15
"""λ_r = λ_σ = λ_p = λ_l: EMA smoothing coefficients (eq. 8)."""

# Priors for a server or tool with no observed call. The paper gives none; these are optimistic
# on purpose: an unseen server competes on similarity and its latency prior alone (r̃ = 1, no
# failure risk), so it gets tried, and eq. 8 corrects it within a few calls (effective window
# (2 − λ)/λ ≈ 12 calls at λ = 0.15, the paper's Corollary 3). A catalog's success_rate,
# failure_rate or latency_s, when given, should replace these via ``from_prior``.
PRIOR_SUCCESS = 1.0
"""Prior success rate r of an unseen server or tool."""
PRIOR_VARIANCE = 0.0
"""Prior variance σ² of an unseen server's Bernoulli outcomes (so r̃ = r at first)."""
PRIOR_FAIL_PROB = 0.0
"""Prior post-accept failure probability p^fail of an unseen server."""
PRIOR_LATENCY_S = 1.0
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


# -- the success term of the cost ----------------------------------------------------------


def conservative_success(rate: float, variance: float, eps: float = EPS) -> float:
    """Conservative success estimate r̃ = max(ε, r − √σ²) (EHRR Sec. III, before eq. 2).

    ``rate`` is the EMA success rate r_i and ``variance`` the EMA variance σ_i² of eq. 8;
    subtracting one standard deviation makes the router risk-averse toward erratic servers.
    """
    _probability("success rate", rate)
    _probability("success variance", variance)  # an EMA of squares of values in [-1, 1]
    _positive("eps", eps)
    return max(eps, rate - math.sqrt(variance))


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
