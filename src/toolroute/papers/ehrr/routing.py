"""EHRR's Alg. 2 (*Clearing MCP Navigation Fog with Economics-Aware Hierarchical Tool
Routing*): economics-aware hierarchical routing with a posted-price reverse auction at the
server layer, reading the online statistics of :mod:`toolroute.stats`.

    server layer   U_i  = Sim_i − α_s C_i^s                    (eq. 2, 3)   → top-k servers
    auction        τ_i  = p_bs Sim_i + p_ofs log(1 + C_i^s/L0) (eq. 4), accept iff c_i ≤ τ_i (eq. 5)
    tool layer     U_ij = Sim_ij − α_t C_ij^t, only p_ij ≤ τ_i (eq. 6, 7) → ranked, top-n shown

The cost formulas are the vectorised forms of
:func:`~toolroute.papers.ehrr.economics.server_cost` and
:func:`~toolroute.papers.ehrr.economics.tool_cost` (a unit test checks they agree). Switches for
ablations: ``auction=False`` (no auction), ``execution=False`` (both layers ranked by similarity
alone; the auction still prices from C_i^s, as it needs a cost), ``hierarchy=False`` (no top-k
server shortlist; the auction still filters every server).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from toolroute.index.build import ToolIndex
from toolroute.papers.ehrr import economics as eco
from toolroute.stats import PSEUDO_CALLS, StatsBook

__all__ = ["EhrrParams", "EhrrTrace", "ehrr_route"]

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class EhrrParams:
    """The paper's Table V defaults, and switches for its ablations and our estimators."""

    servers_k: int = 5
    alpha_server: float = eco.ALPHA_SERVER
    alpha_tool: float = eco.ALPHA_TOOL
    p_bs: float = eco.P_BS
    p_ofs: float = eco.P_OFS
    l0: float = eco.L0
    kappa: float = eco.KAPPA
    eps: float = eco.EPS
    route_s: float = 0.0
    """L^route of G_i: the router's own latency, negligible next to a call (≈10 ms)."""
    budget_cap: float | None = None
    """B of Prop. 3: posted prices are capped at it when set."""
    auction: bool = True
    execution: bool = True
    hierarchy: bool = True
    similarity: Literal["hybrid", "cosine"] = "hybrid"
    """Sim of eq. 1: ``cosine`` is the paper's clipped embedding cosine; ``hybrid`` (default)
    clips the router's own fused score (cosine + weighted BM25, as ``hybrid``/``cascade``) to
    [0, 1], so EHRR's economics sit on the same retrieval as the similarity-only baseline."""
    estimator: Literal["ema", "beta", "thompson", "ucb"] = "ema"
    """``ema``: the paper's r̃ and p_fail (eq. 8). The others are beyond the paper.
    ``thompson``: success and failure probabilities are drawn from Beta posteriors of the
    observed calls, which explores unseen tools instead of trusting an optimistic prior.
    ``beta``: posterior means, and r̃ = mean − one posterior standard deviation, which shrinks
    as calls accumulate where the EMA's outcome variance never does. ``ucb``: optimism in the
    face of uncertainty — success rates at their posterior mean plus one posterior standard
    deviation, post-accept failure at its mean minus one, and latencies from observed calls
    only: the EMA's start at L0 is removed (bias correction), and a tool or server with no
    call yet is assumed as fast as the mean of those observed (L0 before any call), so a
    provider that failed is not kept merely because an unseen one's prior latency looks slow.
    The auction runs unchanged on the resulting C_i^s."""
    unseen_cost: Literal["prior", "optimistic"] = "prior"
    """``prior`` (the paper): a server or tool never called keeps the cost of its priors.
    ``optimistic`` (beyond the paper): costs are compared among the observed; one never
    called costs the *lowest* observed cost when it is relevant (similarity within
    ``relevant_band`` of the best), the *mean* observed cost otherwise. Under the prior, an
    irrelevant tool never called keeps a prior cost far below a relevant tool's observed
    one, so it outranks it, is never called, and is never corrected."""
    relevant_band: float = 0.1
    """Similarity below the best within which an unseen tool or server counts as relevant."""
    servers_share: float | None = None
    """The shortlist keeps at least this share of the servers (⌈share · m⌉), so
    it grows with the catalog (5/70 keeps 5 of livemcpbench's 70 servers, 15 of a 3-vendor
    market's 210); None: ``servers_k`` whatever the catalog's size (the paper)."""


@dataclass(slots=True)
class EhrrTrace:
    """What each stage decided, for ``toolroute route --explain``."""

    server_sim: Floats = field(default_factory=lambda: np.zeros(0))
    server_cost: Floats = field(default_factory=lambda: np.zeros(0))
    server_utility: Floats = field(default_factory=lambda: np.zeros(0))
    posted: Floats = field(default_factory=lambda: np.zeros(0))
    accepted: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))
    shortlisted: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    tool_sim: Floats = field(default_factory=lambda: np.zeros(0))
    tool_cost: Floats = field(default_factory=lambda: np.zeros(0))

    def explain(self, ix: ToolIndex, tool: int, utility: float) -> dict[str, Any]:
        i = int(ix.server_of[tool])
        return {
            "server_sim": round(float(self.server_sim[i]), 4),
            "server_cost_s": round(float(self.server_cost[i]), 4),
            "server_utility": round(float(self.server_utility[i]), 4),
            "posted_price": round(float(self.posted[i]), 5),
            "ask_cost": round(float(ix.ask_costs[i]), 5),
            "accepted": bool(self.accepted[i]),
            "tool_sim": round(float(self.tool_sim[tool]), 4),
            "tool_cost_s": round(float(self.tool_cost[tool]), 4),
            "price": round(float(ix.prices[tool]), 5),
            "utility": round(utility, 4),
        }


def _attempt_success(success: Floats, fail: Floats, eps: float) -> Floats:
    out: Floats = np.maximum(eps, (1.0 - fail) * success)
    return out


def _beta_mean(ab: Floats) -> Floats:
    out: Floats = ab[:, 0] / ab.sum(axis=1)
    return out


def _beta_sd(ab: Floats) -> Floats:
    a, b = ab[:, 0], ab[:, 1]
    out: Floats = np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1.0)))
    return out


def _observed_latency(latency: Floats, calls: Floats, lam: float) -> Floats:
    """Latency estimates from the observed calls alone, prior first in line for none.

    The eq. 8 EMA starts at the prior (L0), which weighs (1 − λ)^n after n calls; removing it
    and renormalising (the bias correction of Adam) leaves a weighted mean of the calls. A
    tool or server with no call gets the mean of those with calls (L0 when there are none).
    """
    seen = calls > 0.5
    weight = 1.0 - (1.0 - lam) ** calls
    safe = np.where(seen, weight, 1.0)
    corrected = np.where(seen, (latency - (1.0 - weight) * eco.PRIOR_LATENCY_S) / safe, latency)
    corrected = np.maximum(corrected, 0.0)
    if not seen.any() or seen.all():
        out: Floats = corrected
        return out
    out = np.where(seen, corrected, float(corrected[seen].mean()))
    return out


def _unseen_optimistic(
    cost: Floats, sim: Floats, seen: npt.NDArray[np.bool_], band: float
) -> Floats:
    """Costs with the never-called replaced: the lowest observed cost where ``sim`` is within
    ``band`` of the best, the mean observed cost elsewhere (unchanged when none is observed)."""
    if not seen.any() or seen.all():
        return cost
    relevant = sim >= float(sim.max()) - band
    fill = np.where(relevant, float(cost[seen].min()), float(cost[seen].mean()))
    out: Floats = np.where(seen, cost, fill)
    return out


def ehrr_route(
    ix: ToolIndex,
    server_sim: npt.NDArray[np.floating],
    tool_sim: npt.NDArray[np.floating],
    stats: StatsBook,
    p: EhrrParams,
    trace: EhrrTrace | None = None,
) -> npt.NDArray[np.float32]:
    """Tool utilities U_ij for feasible tools, ``-inf`` elsewhere (EHRR Alg. 2).

    ``server_sim`` / ``tool_sim`` are the raw similarities of both layers; they are clipped to
    [0, 1] as eq. 1 clips the cosine.
    """
    t = trace if trace is not None else EhrrTrace()
    t.server_sim = np.clip(server_sim, 0.0, 1.0).astype(np.float64)
    t.tool_sim = np.clip(tool_sim, 0.0, 1.0).astype(np.float64)

    overhead = p.route_s + stats.connect_s  # G_i
    server_latency, tool_latency = stats.server_latency, stats.tool_latency
    if p.estimator == "ucb":
        server_fail = np.maximum(
            0.0, _beta_mean(stats.server_fail_beta) - _beta_sd(stats.server_fail_beta)
        )
        tool_success = np.minimum(1.0, _beta_mean(stats.tool_beta) + _beta_sd(stats.tool_beta))
        r_tilde = np.minimum(1.0, _beta_mean(stats.server_beta) + _beta_sd(stats.server_beta))
        # Calls observed = posterior weight beyond the prior's PSEUDO_CALLS.
        server_calls = stats.server_beta.sum(axis=1) - PSEUDO_CALLS
        tool_calls = stats.tool_beta.sum(axis=1) - PSEUDO_CALLS
        lam = stats.smoothing.latency
        server_latency = _observed_latency(server_latency, server_calls, lam)
        tool_latency = _observed_latency(tool_latency, tool_calls, lam)
    elif p.estimator == "thompson":
        server_fail = stats.rng.beta(stats.server_fail_beta[:, 0], stats.server_fail_beta[:, 1])
        tool_success = stats.rng.beta(stats.tool_beta[:, 0], stats.tool_beta[:, 1])
        r_tilde = stats.rng.beta(stats.server_beta[:, 0], stats.server_beta[:, 1])
    elif p.estimator == "beta":
        server_fail = _beta_mean(stats.server_fail_beta)
        tool_success = _beta_mean(stats.tool_beta)
        r_tilde = np.maximum(p.eps, _beta_mean(stats.server_beta) - _beta_sd(stats.server_beta))
    else:
        server_fail, tool_success = stats.server_fail, stats.tool_success
        r_tilde = np.maximum(p.eps, stats.server_success - np.sqrt(stats.server_variance))
    # eq. 2: C_i^s = (G_i + L_call) / max(ε, (1 − p_fail) r̃)
    t.server_cost = (overhead + server_latency) / _attempt_success(r_tilde, server_fail, p.eps)
    # eq. 6: C_ij^t = (G_i + l_ij) / max(ε, (1 − p_fail_i) r_ij) + κ p_ij
    fail_of_tool = server_fail[ix.server_of]
    t.tool_cost = (overhead[ix.server_of] + tool_latency) / _attempt_success(
        tool_success, fail_of_tool, p.eps
    ) + p.kappa * ix.prices
    if p.unseen_cost == "optimistic":
        t.server_cost = _unseen_optimistic(
            t.server_cost, t.server_sim, stats.server_counts.sum(axis=1) > 0, p.relevant_band
        )
        t.tool_cost = _unseen_optimistic(
            t.tool_cost, t.tool_sim, stats.tool_counts.sum(axis=1) > 0, p.relevant_band
        )
    # eq. 3: server utility; without execution, servers rank on similarity alone.
    alpha_s = p.alpha_server if p.execution else 0.0
    alpha_t = p.alpha_tool if p.execution else 0.0
    t.server_utility = t.server_sim - alpha_s * t.server_cost
    # eq. 4 (+ Prop. 3 cap) and eq. 5: posted price and the one-bit accept.
    t.posted = p.p_bs * t.server_sim + p.p_ofs * np.log1p(t.server_cost / p.l0)
    if p.budget_cap is not None:
        t.posted = np.minimum(t.posted, p.budget_cap)
    t.accepted = ix.ask_costs <= t.posted if p.auction else np.ones(len(t.posted), dtype=bool)

    # eq. 7: tool utility.
    utility = t.tool_sim - alpha_t * t.tool_cost
    if p.hierarchy:
        k = p.servers_k
        if p.servers_share is not None:
            k = max(k, math.ceil(p.servers_share * len(t.server_utility)))
        k = min(k, len(t.server_utility))
        t.shortlisted = np.argsort(-t.server_utility, kind="stable")[:k]
    else:  # no hierarchy: no server shortlist; the auction still filters every server
        t.shortlisted = np.arange(len(t.server_utility))
    keep = np.zeros(len(t.server_sim), dtype=bool)
    keep[t.shortlisted] = True
    keep &= t.accepted
    feasible = keep[ix.server_of]
    if p.auction:
        feasible &= ix.prices <= t.posted[ix.server_of]  # Alg. 2 line 20: p_ij ≤ τ_i
    return np.where(feasible, utility, -np.inf).astype(np.float32)
