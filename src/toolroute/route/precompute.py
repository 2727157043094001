"""What routing derives from an index once (not per query), as :class:`Derivation` s the
index owns and its snapshot saves (index/derived.py): a fresh process maps them instead of
recomputing them on its first route.

- :data:`ACTIONS`: the action class of every tool's name (route/action.py);
- :data:`PROVIDERS`: the implied-step provider graph (route/expand.py);
- :data:`SCHEMA_KEYS`: tools grouped by name and input schema (route/capability.py).

:data:`DERIVATIONS` lists them all: what a snapshot computes and saves when it is written.
"""

from __future__ import annotations

import numpy as np

from toolroute.index import document
from toolroute.index.build import ToolIndex
from toolroute.index.derived import Arrays, Derivation
from toolroute.route import action, capability, expand
from toolroute.route.action import ActionClass, tool_actions
from toolroute.route.capability import SchemaKeys, schema_keys
from toolroute.route.expand import ProviderGraph, provider_graph

__all__ = [
    "ACTIONS",
    "DERIVATIONS",
    "PROVIDERS",
    "SCHEMA_KEYS",
    "index_actions",
    "index_providers",
    "index_schema_keys",
]


def _actions(ix: ToolIndex) -> Arrays:
    acts, order = tool_actions([t.name for t in ix.tools])
    return acts, np.array(order, dtype=str)


def _providers(ix: ToolIndex) -> Arrays:
    return provider_graph(ix.tools)


def _schema_keys(ix: ToolIndex) -> Arrays:
    keys = schema_keys(ix.tools)
    order = np.concatenate(keys.members) if keys.members else np.empty(0, dtype=np.int64)
    sizes = np.array([len(m) for m in keys.members], dtype=np.int64)
    return keys.key, order, sizes


ACTIONS = Derivation("actions", _actions, (action, document))
PROVIDERS = Derivation("providers", _providers, (expand, document))
SCHEMA_KEYS = Derivation("schema-keys", _schema_keys, (capability,))
DERIVATIONS = (ACTIONS, PROVIDERS, SCHEMA_KEYS)


def index_actions(ix: ToolIndex) -> tuple[np.ndarray, tuple[ActionClass, ...]]:
    """(class index per tool, −1 when unknown; the class order), as ``tool_actions``."""
    acts, order = ix.derived.get(ACTIONS, ix)
    return acts, tuple(str(c) for c in order)  # type: ignore[misc]


def index_providers(ix: ToolIndex) -> ProviderGraph:
    """The provider graph of ``ix``'s tools, as ``provider_graph``."""
    prov, served = ix.derived.get(PROVIDERS, ix)
    return prov, served


def index_schema_keys(ix: ToolIndex) -> SchemaKeys:
    """``ix``'s tools grouped by name and input schema, as ``schema_keys``."""

    def rebuild() -> SchemaKeys:
        key, order, sizes = ix.derived.get(SCHEMA_KEYS, ix)
        members = tuple(np.split(np.asarray(order), np.cumsum(sizes)[:-1])) if len(sizes) else ()
        return SchemaKeys(key, members)

    out: SchemaKeys = ix.derived.memo("schema-keys", rebuild)
    return out
