"""Routing: strategies (compositions of scoring stages) and offline intent splitting."""

from toolroute.route.intent import split_intents
from toolroute.route.strategy import STRATEGIES, QueryContext, RouteParams, resolve_strategy

__all__ = ["STRATEGIES", "QueryContext", "RouteParams", "resolve_strategy", "split_intents"]
