"""What every scoring stage reads about one query: :class:`QueryContext`, and the score
array a stage returns (:data:`Scores`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from toolroute.embed.base import Matrix
from toolroute.papers.ehrr.routing import EhrrTrace
from toolroute.stats import StatsBook

__all__ = ["QueryContext", "Scores"]

Scores = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class QueryContext:
    """A query, its embedding, and (for strategies that use them) its sub-intents."""

    text: str
    vector: Matrix
    """(d,) unit vector of the whole query; empty for lexical-only strategies."""
    intents: tuple[str, ...] = ()
    intent_vectors: Matrix | None = None
    """(m, d) unit vectors of the sub-intents, or None."""
    stats: StatsBook | None = None
    """Online statistics for economics-aware strategies (EHRR); priors when None."""
    trace: EhrrTrace | None = None
    """Filled by EHRR strategies when set, for ``--explain``."""
    embed: Callable[[list[str]], Matrix] | None = None
    """Embeds new texts (LLM sub-queries) with the router's embedder."""
    client: str = ""
    """Who asks (an authenticated client's name; "" for a local one): the usage memory of
    ``adaptive`` reads only this client's rows."""
    notes: dict[str, Any] = field(default_factory=dict)
    """What set-producing stages decided: ``selected`` (tool rows, the final set), ``path``,
    ``llm`` (whether a model answered or the offline fallback ran)."""
    memo: dict[str, Any] = field(default_factory=dict)
    """Per-query products a stage computed that a later one reads instead of recomputing:
    ``dense``, (the vector, every tool's cosine to it), for the abstention check."""
