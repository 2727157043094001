"""Routing strategies: named compositions of scoring stages over a :class:`ToolIndex`.

Every strategy maps (index, query) to one score per tool; ``-inf`` marks a tool the strategy
does not return (e.g. outside the servers a cascade kept). The product's strategies:

- ``bm25``: BM25 over tool documents, no model;
- ``dense``: cosine of the query with the weighted tool vectors;
- ``hybrid``: dense + α · BM25 / max BM25 (linear fusion);
- ``cascade``: top-k servers by server-layer score, then tools scoped to them;
- ``multi``: sub-intents scored separately and merged per tool (offline);
- ``steps``: ``multi`` plus three offline priors: action words (route/action.py), implied
  steps from the catalog's own structure (route/expand.py), and the files a request names by
  path (a writer for a destination, a reader of its type for a source);
- ``adaptive`` (``default``, route/adaptive.py): ``steps``' relevance over capabilities, the
  vendor inside each chosen from executed calls, and the asking client's usage memory;
- ``budget``: ``adaptive`` valuing a success at 0.01 USD, showing two, and no vendor worth
  less than its price;
- ``fusion3``: a shipped learned ranker over ``steps``' signals (route/fusion.py).

The five papers' methods are strategies too (:mod:`toolroute.papers`). Every strategy's scores
then pass the router's exact-name step (route/exact.py). :func:`builtin_strategies` builds the
registry in one place; more are added with :func:`register_strategy` (the benchmark suite
registers its research variants that way).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

from toolroute.errors import ConfigError
from toolroute.papers import atr, pa_rag, scalemcp, tool_attention
from toolroute.papers.ehrr import strategy as ehrr
from toolroute.route.composition import adaptive_over, with_feedback
from toolroute.route.fusion import fusion3
from toolroute.route.stage import (
    CascadeParams,
    Embeds,
    HybridParams,
    MultiParams,
    QueryContext,
    RouteParams,
    Scores,
    StepsParams,
    Strategy,
    StrategyFn,
    baseline_bm25,
    baseline_dense,
    baseline_hier5,
    cascade,
    catalog_order,
    dense,
    hybrid,
    lexical,
    multi,
    server_scores,
    steps,
)

__all__ = [
    "STRATEGIES",
    "CascadeParams",
    "Embeds",
    "HybridParams",
    "MultiParams",
    "QueryContext",
    "RouteParams",
    "Scores",
    "StepsParams",
    "Strategy",
    "StrategyFn",
    "adaptive_over",
    "baseline_bm25",
    "baseline_dense",
    "baseline_hier5",
    "builtin_strategies",
    "cascade",
    "catalog_order",
    "dense",
    "hybrid",
    "lexical",
    "load_plugin",
    "multi",
    "register_strategy",
    "resolve_strategy",
    "server_scores",
    "steps",
    "strategies_in",
    "with_feedback",
]


def _product() -> tuple[Strategy, ...]:
    adaptive = adaptive_over(steps)
    return (
        Strategy(
            "default",
            adaptive,
            "intent-spans",
            "the recommended router, with no LLM: adaptive's ranking, and 'no tool fits' "
            "when none does",
            True,
            group="product",
            abstains=True,
        ),
        Strategy(
            "adaptive",
            adaptive,
            "intent-spans",
            "steps' relevance grouped into capabilities; vendors and usage learned from calls",
            True,
            group="product",
        ),
        Strategy(
            "steps",
            steps,
            "intent-spans",
            "multi + action words, implied steps, named files, near duplicates; no learning",
            group="product",
        ),
        Strategy(
            "multi",
            multi,
            "intent-spans",
            "hybrid, each tool lifted by its best sub-intent of the request",
            group="product",
        ),
        Strategy("hybrid", hybrid, "query", "dense + weighted BM25", group="product"),
        Strategy("dense", dense, "query", "cosine over the weighted tool vectors", group="product"),
        Strategy(
            "bm25",
            lexical,
            "none",
            "BM25 over tool documents: the cheapest, lexical only",
            group="product",
        ),
        Strategy(
            "cascade",
            cascade,
            "query",
            "the top servers first, then hybrid over their tools",
            group="product",
        ),
        Strategy(
            "budget",
            adaptive_over(steps, show=2, value_usd=0.01, reserve=True),
            "intent-spans",
            "adaptive for a tight budget: two shown, none priced above its worth",
            True,
            group="product",
        ),
        Strategy(
            "fusion3",
            fusion3,
            "intent-spans",
            "a learned ranker over steps' signals, anchored to default; slower",
            True,
            group="product",
        ),
    )


def _papers() -> tuple[Strategy, ...]:
    return (
        ehrr.strategy(),
        scalemcp.strategy(),
        tool_attention.strategy(),
        pa_rag.strategy(),
        atr.strategy(),
    )


def builtin_strategies() -> dict[str, Strategy]:
    """The product's strategies, then the papers' methods: the registry every command starts
    from (:data:`STRATEGIES`)."""
    return {s.name: s for s in (*_product(), *_papers())}


STRATEGIES: dict[str, Strategy] = builtin_strategies()
"""Every strategy by name: :func:`builtin_strategies`, plus what :func:`register_strategy`
added."""


def register_strategy(
    name: str, factory: Callable[[], Strategy], *, overwrite: bool = False
) -> Strategy:
    """Add a strategy under ``name`` (``factory()`` builds it, renamed to ``name`` and listed
    among the plugins' strategies); an existing name is an error unless ``overwrite``.
    Returns what was registered."""
    if name in STRATEGIES and not overwrite:
        raise ConfigError(f"strategy {name!r} is already registered")
    strat = replace(factory(), name=name, group="plugin")
    STRATEGIES[name] = strat
    return strat


def strategies_in(group: str) -> Iterable[Strategy]:
    """The registered strategies of one :data:`~toolroute.route.stage.Group`, in order."""
    return (s for s in STRATEGIES.values() if s.group == group)


def load_plugin(spec: str) -> list[str]:
    """Import a module of strategies (a dotted name, or a ``.py`` file) and call its
    ``register_strategies()``, which adds them with :func:`register_strategy`. Returns the
    names it added. The benchmark suite's research variants load this way
    (``--plugin benchmarks/variants.py``)."""
    before = set(STRATEGIES)
    path = Path(spec)
    try:
        if spec.endswith(".py") or path.is_file():
            if not path.is_file():
                raise ConfigError(f"strategy plugin {spec!r}: no such file")
            name = f"toolroute_plugin_{path.stem}"
            loader = importlib.util.spec_from_file_location(name, path)
            if loader is None or loader.loader is None:
                raise ConfigError(f"strategy plugin {spec!r}: not a Python module")
            module = importlib.util.module_from_spec(loader)
            sys.modules[name] = module
            loader.loader.exec_module(module)
        else:
            module = importlib.import_module(spec)
    except ImportError as e:
        raise ConfigError(f"strategy plugin {spec!r}: cannot import it: {e}") from None
    register = getattr(module, "register_strategies", None)
    if not callable(register):
        raise ConfigError(f"strategy plugin {spec!r} has no register_strategies() function")
    register()
    return [n for n in STRATEGIES if n not in before]


def resolve_strategy(name: str) -> Strategy:
    try:
        return STRATEGIES[name]
    except KeyError:
        raise ConfigError(
            f"unknown strategy {name!r}; choose from: {', '.join(STRATEGIES)} (research "
            "variants: --plugin benchmarks/variants.py)"
        ) from None
