"""Capabilities: functionally equivalent tools offered by different servers (vendors).

Two tools of *different* servers are one capability when

    they have the same name and the same input schema                   (a vendor's copy), or
    cos(v_a, v_b) ≥ θ for their TDWA tool vectors (θ ≈ 0.8)            (a rewording of it),

closed transitively (connected components). Two tools of one server are never one capability:
a server does not sell the same function twice. Grouping runs per query over a candidate pool
(the best tools by relevance plus every same-name-and-schema sibling of theirs), so it costs
O(pool²) whatever the catalog's size, and a catalog change needs no rebuild.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from toolroute.catalog.models import Tool

__all__ = ["SchemaKeys", "components", "group_pool", "schema_keys"]

Ints = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True, eq=False)
class SchemaKeys:
    """Per tool, the id of its (name, canonical input schema); per id, its tools."""

    key: Ints
    members: tuple[Ints, ...]


def schema_keys(tools: Sequence[Tool]) -> SchemaKeys:
    """Group tools by name and input schema (JSON with sorted keys)."""
    ids: dict[tuple[str, str], int] = {}
    key = np.empty(len(tools), dtype=np.int64)
    for j, t in enumerate(tools):
        sig = (t.name, json.dumps(t.input_schema, sort_keys=True, default=str))
        key[j] = ids.setdefault(sig, len(ids))
    order = np.argsort(key, kind="stable")
    cuts = np.flatnonzero(np.diff(key[order])) + 1
    return SchemaKeys(key, tuple(np.split(order, cuts)) if len(tools) else ())


def components(adjacency: npt.NDArray[np.bool_]) -> Ints:
    """Connected components of a symmetric adjacency matrix: per node, the smallest node of
    its component (min-label propagation; converges within the graph's diameter)."""
    n = adjacency.shape[0]
    labels: Ints = np.arange(n, dtype=np.int64)
    link = adjacency | np.eye(n, dtype=bool)
    while True:
        new = np.where(link, labels[None, :], n).min(axis=1)
        if np.array_equal(new, labels):
            return labels
        labels = new


def group_pool(
    rows: Ints,
    keys: Ints,
    vectors: npt.NDArray[np.floating],
    server_of: npt.NDArray[np.integer],
    cosine: float,
) -> Ints:
    """Capability label (a position in ``rows``) of every pooled tool (module docstring).

    ``keys`` are the pooled tools' schema keys, ``vectors`` their unit tool vectors;
    ``cosine`` > 1 turns off grouping by vectors (names and schemas only).
    """
    servers = server_of[rows]
    other_server = servers[:, None] != servers[None, :]
    same = keys[:, None] == keys[None, :]
    if cosine <= 1.0:
        v = np.asarray(vectors, dtype=np.float32)
        same |= (v @ v.T) >= cosine
    return components(same & other_server)
