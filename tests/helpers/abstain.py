"""The abstention tests' world: a deterministic embedder over the small catalog and a
hand-set model over its cosines (tests/route/test_abstain*.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import SMALL_CATALOG, HashingEmbedder
from toolroute.catalog import catalog_from_dict
from toolroute.route.abstain_model import AbstainModel
from toolroute.route.abstain_signals import FEATURES
from toolroute.route.strategy import RouteParams
from toolroute.router import Router

FAR = "pay my electricity bill before friday"  # no word of it is in any tool's text
NEAR = "what time is it in Tokyo"

HAND_SET = tuple(f for f in FEATURES if f != "oos_gap")  # every signal that needs no requests


def hand_model(threshold: float = 0.5, embedder: str = HashingEmbedder.model_id) -> AbstainModel:
    """p rises with the top five tools' word coverage alone: p 0.12 when they hold none of
    the request's words, 0.5 at a fifth of them (hashed cosines are noisy at this size)."""
    weights = tuple(10.0 if f == "lex_cov5" else 0.0 for f in HAND_SET)
    return AbstainModel(
        features=HAND_SET,
        mean=(0.0,) * len(HAND_SET),
        scale=(1.0,) * len(HAND_SET),
        weights=weights,
        bias=-2.0,
        thresholds={"default": threshold, "strict": min(1.0, threshold + 0.2)},
        embedder=embedder,
    )


def small_router(tmp_path: Path, **params: Any) -> Router:
    r = Router(
        catalog_from_dict(SMALL_CATALOG),
        store=tmp_path / "store",
        embedder=HashingEmbedder(),
        params=RouteParams(**params),
    )
    r.index()
    return r
