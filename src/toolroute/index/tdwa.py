"""Tool Document Weighted Average (TDWA) and the document presets.

TDWA is eq. 1 of *ScaleMCP: Dynamic and Auto-Synchronizing Model Context Protocol Tools for LLM
Agents* (ScaleMCP):

    z = Σ_i w_i · Embed(c_i) / ‖Σ_i w_i · Embed(c_i)‖₂

Components (``Component``) are the texts of :class:`toolroute.index.document.ToolDoc`. The
synthetic-question component is the mean of its questions' embeddings, so its weight is shared
by the S questions as in the paper. A component that is empty for a tool (no parameters, no
description) drops out and the remaining weights carry the vector.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np

from toolroute.embed.base import Matrix, l2_normalise
from toolroute.errors import ConfigError

__all__ = ["PRESETS", "Component", "DocConfig", "tdwa"]

Component = Literal["concat", "name", "description", "parameters", "questions", "server"]
COMPONENTS: tuple[Component, ...] = (
    "concat",
    "name",
    "description",
    "parameters",
    "questions",
    "server",
)


@dataclass(frozen=True, slots=True)
class DocConfig:
    """How a tool's dense vector is made: weights over components (``concat`` is one text:
    ``"server name: tool name: description"``)."""

    name: str
    weights: Mapping[Component, float]

    def __post_init__(self) -> None:
        bad = [c for c in self.weights if c not in COMPONENTS]
        if bad:
            raise ConfigError(f"unknown document component(s) {bad}; choose from {COMPONENTS}")
        if any(w < 0 for w in self.weights.values()) or sum(self.weights.values()) <= 0:
            raise ConfigError("document weights must be non-negative with a positive sum")

    @property
    def active(self) -> tuple[Component, ...]:
        return tuple(c for c in COMPONENTS if self.weights.get(c, 0.0) > 0)


PRESETS: dict[str, DocConfig] = {
    # The flat baseline text: one embedding of "server: tool: description".
    "concat": DocConfig("concat", {"concat": 1.0}),
    # ScaleMCP's Table 4 presets over name / description / parameters / synthetic questions.
    "var-1": DocConfig(
        "var-1", {"name": 0.2, "description": 0.2, "parameters": 0.2, "questions": 0.4}
    ),
    "var-2": DocConfig("var-2", {"name": 0.2, "description": 0.3, "questions": 0.5}),
    # toolroute's default, chosen on benchmarks/tdwa.py: the flat text keeps the paper's
    # description signal, the server profile adds context a bare tool lacks, the name and the
    # synthetic questions pull the vector toward how users ask.
    "toolroute": DocConfig(
        "toolroute", {"concat": 0.4, "server": 0.2, "name": 0.2, "questions": 0.2}
    ),
}


def tdwa(
    components: Mapping[Component, Matrix],
    present: Mapping[Component, np.ndarray],
    weights: Mapping[Component, float],
) -> Matrix:
    """ScaleMCP eq. 1 for n tools at once.

    ``components[c]`` is an (n, d) matrix of unit vectors; ``present[c]`` an (n,) bool mask of
    tools for which component c is non-empty (absent ones contribute nothing).
    """
    total: Matrix | None = None
    for comp, vecs in components.items():
        w = float(weights.get(comp, 0.0))
        if w <= 0:
            continue
        part = (w * present[comp].astype(np.float32))[:, None] * vecs
        total = part if total is None else total + part
    if total is None:
        raise ConfigError("no document component has a positive weight")
    return l2_normalise(total)
