"""The ``adaptive`` strategy: capabilities ranked by relevance, the vendor inside each chosen
from the outcomes of executed calls, and a usage memory of what the agent actually called.

    relevance    R_c = max_{t ∈ c} s_t + b_c                        s: the base strategy's score,
                                                                    b_c: usage-memory boost
    global       μ_g = (S_g + a₀) / (N_g + a₀ + b₀)                  a₀ + b₀ = PSEUDO_CALLS
    server       μ_i = (S_i + m_s μ_g) / (N_i + m_s)                 pooled toward the market
    tool         q_t ~ Beta(S_t + m_t μ_i, F_t + m_t (1 − μ_i))      pooled toward its server
                 (its mean when neither the tool nor its server has a call)
    vendor       u_t = V_t q_t − p_t                                 V_t: value of a success (USD)

S and F count the observed successes and failures (no prior), N = S + F. Posterior (Thompson)
sampling explores a vendor with few calls as often as its chance of being the best one, so a
vendor once rejected is tried again, unlike a point estimate. Ties (no record anywhere, same
price) go to the more relevant vendor. Capabilities
(route/capability.py) are ranked by R_c with no server shortlist; inside one, vendors by u_t.
Inside a capability, a member less relevant than its best by more than a band ranks after the
others whatever its value (a loose grouping never trades relevance for price). Each
capability shows its best vendor at R_c and its second (the fallback) at R_c − δ: after
every capability within δ of it, so an agent sees either the best two vendors of a clear
winner or the best vendor of each of two close capabilities. Further vendors rank below every
pooled capability; tools outside the pool keep their order below those. With ``reserve``
(the budget setting) a vendor with u_t < 0 is not shown at all, as no agent valuing a success
at V pays more than V q for a call (EHRR's auction likewise rejects asks above τ_i).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from toolroute.catalog.name import qualified_name
from toolroute.errors import ConfigError
from toolroute.index.build import ToolIndex
from toolroute.learn.memory import memory_boost
from toolroute.route.capability import group_pool
from toolroute.route.precompute import index_schema_keys
from toolroute.settings import DEFAULTS
from toolroute.stats import PRIOR_SUCCESS_MEAN, PSEUDO_CALLS, StatsBook

__all__ = [
    "DEFAULT_VALUE_USD",
    "AdaptiveParams",
    "adaptive_route",
    "global_mean",
    "server_means",
    "tool_posterior",
    "value_table",
    "vendor_value",
]

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]

DEFAULT_VALUE_USD = DEFAULTS.value_usd
"""V: what one successful call is worth to the agent (USD), where nothing else is set: about
twice a high-tier price in EHRR's market (§V), so a vendor 10 points more reliable is worth
0.005 USD more per call."""


@dataclass(frozen=True, slots=True)
class AdaptiveParams:
    """Knobs of ``adaptive`` (module docstring)."""

    value_usd: float = DEFAULT_VALUE_USD
    """V, the one economic knob: small favours price, large favours reliability."""
    values: tuple[tuple[str, float], ...] = ()
    """V per server (``"server"``) or tool (``"server__tool"``), over ``value_usd``."""
    pool: int = 40
    """Best tools by relevance grouped into capabilities per query."""
    capability_cosine: float = 0.9
    """θ: tool vectors this close (different servers) are one capability; > 1: names only.
    Chosen by the coverage of oracle steps on a three-vendor market
    (benchmarks/capability_coverage.py); without the relevance band below, tools that close
    in TDWA vectors can be other functions."""
    margin: float = 0.05
    """δ: a capability's fallback vendor ranks after every capability within δ of it."""
    relevance_band: float = 0.1
    """A member less relevant than its capability's best by more than this ranks after the
    others (above ``steps``' near-duplicate demotion, 0.05, which vendor copies incur)."""
    server_strength: float = 4.0
    """m_s: weight, in calls, of the market's mean in a server's mean."""
    tool_strength: float = 4.0
    """m_t: weight, in calls, of the server's mean in a tool's posterior."""
    show: int = 0
    """Return only this many tools (the rest ``-inf``): 2 is the primary and fallback of a
    clear capability, or the best vendor of each of two close ones. 0: rank every tool."""
    memory: bool = True
    """Lift capabilities by the usage memory (off: the ablation without it)."""
    learn: bool = True
    """Choose vendors by the posterior (off: by price alone, V·q at the prior)."""
    reserve: bool = False
    """Show no vendor worth less than its price (u_t < 0), nor tools outside the pool (never
    valued): V becomes a reservation value, the budget knob."""

    def __post_init__(self) -> None:
        if self.value_usd < 0 or any(v < 0 for _, v in self.values):
            raise ConfigError("value_usd must be >= 0")
        if self.pool < 1 or self.margin < 0 or self.show < 0:
            raise ConfigError("adaptive pool must be >= 1 and margin >= 0")
        if self.server_strength <= 0 or self.tool_strength <= 0:
            raise ConfigError("adaptive pooling strengths must be > 0")


def global_mean(server_counts: Floats) -> float:
    """μ_g = (S_g + a₀) / (N_g + a₀ + b₀): the market's success rate, prior PRIOR_SUCCESS_MEAN
    worth PSEUDO_CALLS calls."""
    s, f = float(server_counts[:, 0].sum()), float(server_counts[:, 1].sum())
    return (s + PSEUDO_CALLS * PRIOR_SUCCESS_MEAN) / (s + f + PSEUDO_CALLS)


def server_means(server_counts: Floats, mu_g: float, strength: float) -> Floats:
    """μ_i = (S_i + m_s μ_g) / (N_i + m_s): a server's success rate shrunk to the market's."""
    n = server_counts.sum(axis=1)
    out: Floats = (server_counts[:, 0] + strength * mu_g) / (n + strength)
    return out


def tool_posterior(tool_counts: Floats, prior_mean: Floats, strength: float) -> Floats:
    """(α, β) = (S_t + m_t μ, F_t + m_t (1 − μ)) per tool, μ its server's mean: a tool with no
    call starts at its vendor's record, one with many at its own."""
    out: Floats = np.stack(
        [
            tool_counts[:, 0] + strength * prior_mean,
            tool_counts[:, 1] + strength * (1 - prior_mean),
        ],
        axis=1,
    )
    return out


def vendor_value(value: Floats, quality: Floats, price: Floats) -> Floats:
    """u = V q − p: the expected worth of one call net of its price (USD)."""
    out: Floats = value * quality - price
    return out


def value_table(ix: ToolIndex, default: float, values: tuple[tuple[str, float], ...]) -> Floats:
    """V_t per tool: the tool's own (``server__tool``), else its server's, else ``default``."""
    out: Floats = np.full(ix.size, float(default))
    if not values:
        return out
    table = dict(values)
    for j, (server, tool) in enumerate(ix.keys):
        v = table.get(qualified_name(server, tool), table.get(server))
        if v is not None:
            out[j] = v
    return out


def _pool(ix: ToolIndex, rel: Floats, size: int, extra: Ints) -> Ints:
    """The ``size`` best finite rows, the rows in ``extra``, and every schema sibling of them."""
    finite = np.flatnonzero(np.isfinite(rel))
    top = finite
    if finite.size > size:
        top = finite[np.argpartition(-rel[finite], size - 1)[:size]]
    keys = index_schema_keys(ix)
    rows = set(top.tolist()) | set(extra.tolist())
    for k in {int(keys.key[j]) for j in rows}:
        rows.update(keys.members[k].tolist())
    out = np.array(sorted(j for j in rows if np.isfinite(rel[j])), dtype=np.int64)
    return out


def adaptive_route(
    ix: ToolIndex,
    relevance: npt.NDArray[np.floating],
    stats: StatsBook,
    p: AdaptiveParams,
    evidence: Mapping[int, float] | None = None,
    memory_beta: float = 0.0,
) -> npt.NDArray[np.float32]:
    """Scores whose order is the module docstring's (``-inf`` where ``relevance`` is).

    ``evidence`` is the usage memory's e_t per tool row; a capability's boost is
    b_c = β Σ_{t∈c} e_t / (1 + |Σ e_t|) with β = ``memory_beta``.
    """
    rel = np.asarray(relevance, dtype=np.float64)
    ev = dict(evidence or {}) if p.memory else {}
    rows = _pool(ix, rel, p.pool, np.array(sorted(ev), dtype=np.int64))
    out = rel.copy()
    if rows.size == 0:
        return out.astype(np.float32)
    labels = group_pool(
        rows,
        index_schema_keys(ix).key[rows],
        ix.tool_vectors[rows],
        ix.server_of,
        p.capability_cosine,
    )
    server_of = np.asarray(ix.server_of[rows], dtype=np.int64)
    if p.learn:
        mu_s = server_means(
            stats.server_counts, global_mean(stats.server_counts), p.server_strength
        )
        ab = tool_posterior(stats.tool_counts[rows], mu_s[server_of], p.tool_strength)
        # Sampled where the vendor has a record (its tool's or its server's calls), the mean
        # elsewhere: with no record at all a draw is noise, and the most relevant vendor
        # (then the cheaper) should go first, not a random one.
        seen = (
            stats.tool_counts[rows].sum(axis=1) + stats.server_counts[server_of].sum(axis=1)
        ) > 0
        quality = np.where(seen, stats.rng.beta(ab[:, 0], ab[:, 1]), ab[:, 0] / ab.sum(axis=1))
    else:
        quality = np.full(rows.size, PRIOR_SUCCESS_MEAN)
    value = value_table(ix, p.value_usd, p.values)[rows]
    worth = vendor_value(value, quality, ix.prices[rows])
    assigned = np.empty(rows.size)
    for label in np.unique(labels):
        members = np.flatnonzero(labels == label)
        e = sum(ev.get(int(rows[m]), 0.0) for m in members)
        top = float(rel[rows[members]].max())
        r_c = top + memory_boost(e, memory_beta)
        # A member much less relevant than the best is not a vendor of the same function
        # (a loose grouping): it never takes the primary or fallback slot on price alone.
        far = rel[rows[members]] < top - p.relevance_band
        order = members[np.lexsort((rows[members], -rel[rows[members]], -worth[members], far))]
        assigned[order] = r_c - p.margin * np.arange(len(order))
    out[rows] = assigned
    rest = np.ones(ix.size, dtype=bool)
    rest[rows] = False
    rest &= np.isfinite(rel)
    if p.reserve:  # a call expected to be worth less than it costs is not offered
        out[rows[worth < 0]] = -np.inf
        out[rest] = -np.inf
        rest[:] = False
    if rest.any():  # below every pooled tool, in their own order
        floor = float(assigned.min())
        top_rest = float(rel[rest].max())
        if top_rest >= floor:
            out[rest] = rel[rest] - (top_rest - floor) - 1e-3
    if p.show > 0:
        finite = np.flatnonzero(np.isfinite(out))
        if finite.size > p.show:
            keep = finite[np.lexsort((finite, -out[finite]))[: p.show]]
            cut = np.full(ix.size, -np.inf)
            cut[keep] = out[keep]
            out = cut
    return out.astype(np.float32)
