"""Abstention: "no tool fits", said when the evidence says no tool serves the request.

A ranking always has a first tool, so a router that only ranks hands an agent five plausible
strangers for a need none of its servers can meet ("pay my electricity bill" → a calculator),
and the agent calls a wrong tool or stops trusting the search. No single score separates the
two kinds of request: the best cosine of a request no tool serves overlaps the best cosine of
one a tool serves, so a similarity threshold trades recall away. This check combines several
signals (route/abstain_signals.py) in a small model of boosted trees (route/abstain_model.py).

The model gives p, the probability that some returned tool fits; the router answers "no tool
fits" when p falls below the threshold of the mode: ``off`` never, ``default`` at the
threshold that cost at most a small share of in-scope recall on every training set,
``strict`` at a higher one (more refusals, more recall lost). An answer between the two is
*doubtful*: the tools go out with a caution to read them before calling one. A request that
names a tool (route/exact.py) is never refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from toolroute.errors import ConfigError
from toolroute.index.build import ToolIndex
from toolroute.route.abstain_model import AbstainModel, default_model, shipped_model
from toolroute.route.abstain_signals import Evidence
from toolroute.route.query import QueryContext, Scores

__all__ = ["ABSTAIN_MODES", "AbstainMode", "Verdict", "decide"]

AbstainMode = Literal["off", "default", "strict"]
ABSTAIN_MODES: tuple[AbstainMode, ...] = ("off", "default", "strict")


@dataclass(frozen=True, slots=True)
class Verdict:
    """The abstention check of one request: whether some tool fits, and why; its
    :meth:`to_dict` is the "no tool fits" answer when none does."""

    fits: bool
    probability: float
    """p that some returned tool fits (the model's)."""
    threshold: float
    mode: AbstainMode
    nearest_servers: tuple[str, ...]
    """The servers closest to the request: where to look if it can be rephrased."""
    signals: dict[str, float]
    doubtful: bool = False
    """Answered, but below the threshold of the mode that refuses most (``strict``): the
    tools share the request's topic and may not do what it asks."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "no_tool_fits": True,
            "message": "no connected tool serves this request as stated",
            "nearest_servers": list(self.nearest_servers),
            "hint": "if a tool should serve it, rephrase the need as the action and its "
            "object (e.g. 'convert a docx file to pdf'), name the server or tool, or ask "
            "for the missing capability with request_capability; otherwise answer without "
            "a tool",
            "confidence": round(1.0 - self.probability, 3),
        }

    def caution(self) -> dict[str, Any]:
        """What an answer that is :attr:`doubtful` carries beside its tools."""
        return {
            "doubtful_fit": True,
            "message": "these tools match the request's topic but may not do what it asks",
            "hint": "read a candidate's description before calling it; if none does the "
            "operation asked, ask for the missing capability with request_capability or "
            "answer without a tool",
            "p_fits": round(self.probability, 3),
        }

    def explain(self) -> dict[str, Any]:
        """What ``route --explain`` shows: p, the mode's threshold and every signal."""
        return {
            "no_tool_fits": not self.fits,
            "doubtful": self.doubtful,
            "p_fits": round(self.probability, 4),
            "threshold": round(self.threshold, 4),
            "mode": self.mode,
            "signals": {k: round(v, 4) for k, v in self.signals.items()},
        }


def decide(
    ix: ToolIndex,
    q: QueryContext,
    scores: Scores,
    mode: AbstainMode,
    model: AbstainModel | None = None,
) -> Verdict | None:
    """The :class:`Verdict` of ``mode``'s threshold on this request (None: ``off``, or a
    model fitted on another embedder's cosines than the index's). Without ``model``, the
    shipped one of the index's embedder (the default's, or plain MiniLM's)."""
    if mode == "off" or not ix.size:
        return None
    if model is None:
        model = default_model()
        if model.embedder and model.embedder != ix.model_id:
            model = shipped_model(ix.model_id) or model
    if model.embedder and model.embedder != ix.model_id:
        return None
    if mode not in model.thresholds:
        raise ConfigError(f"the abstention model has no threshold for mode {mode!r}")
    e = Evidence(ix, q, scores, model.requests)
    sig = e.signals(model.features)
    p = model.probability(np.array([sig[f] for f in model.features]))
    threshold = model.thresholds[mode]
    nearest = e.nearest_servers(3)
    fits = p >= threshold
    doubtful = fits and p < max(model.thresholds.values())
    return Verdict(fits, p, threshold, mode, nearest, sig, doubtful)
