"""Routing: strategies (compositions of scoring stages) and offline intent splitting."""

from toolroute.route.intent import split_intents
from toolroute.route.strategy import STRATEGIES, QueryContext, RouteParams, resolve_strategy

# the learned fusion registers itself (fusion, adaptive-fusion) through register_strategy
from toolroute.route import fusion as _fusion  # noqa: E402,F401  isort: skip

__all__ = ["STRATEGIES", "QueryContext", "RouteParams", "resolve_strategy", "split_intents"]
