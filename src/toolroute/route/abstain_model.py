"""The abstention model ("no tool fits", route/abstain.py): p that some returned tool fits, from
the signals of route/abstain_signals.py. Boosted trees (a near request is one whose topic a server
owns *and* whose operation none of its tools names: an "and" a weighted sum cannot draw), whose
trees and thresholds ship as JSON (``toolroute/data/abstain.json``, with the vectors of the
out-of-scope requests it was trained on beside it; trained by ``benchmarks/abstain_train.py``
on the out-of-scope sets under ``benchmarks/out_of_scope/`` beside the in-scope queries); a
logistic regression in the same file format still loads.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from toolroute.embed.base import Matrix
from toolroute.errors import ConfigError
from toolroute.route.abstain_signals import FEATURES

__all__ = ["SHIPPED", "AbstainModel", "Tree", "default_model", "load_model", "shipped_model"]

SHIPPED = ("abstain.json", "abstain_minilm.json")
"""The shipped models, in ``toolroute/data``: the default embedder's, then the plain
all-MiniLM-L6-v2's (``TOOLROUTE_EMBED_MODEL=minilm``), each fitted on its own model's cosines."""


@dataclass(frozen=True, slots=True)
class Tree:
    """One regression tree of a boosted model: node arrays, node 0 the root; a split sends
    ``x[feature] <= threshold`` left (a NaN where ``missing_left`` says)."""

    feature: tuple[int, ...]
    threshold: tuple[float, ...]
    left: tuple[int, ...]
    right: tuple[int, ...]
    value: tuple[float, ...]
    leaf: tuple[bool, ...]
    missing_left: tuple[bool, ...]

    def __call__(self, x: list[float]) -> float:
        node = 0
        while not self.leaf[node]:
            v = x[self.feature[node]]
            go_left = self.missing_left[node] if v != v else v <= self.threshold[node]
            node = self.left[node] if go_left else self.right[node]
        return self.value[node]

    def to_dict(self) -> dict[str, list[Any]]:
        return {k: list(getattr(self, k)) for k in self.__slots__}


@dataclass(frozen=True, slots=True)
class AbstainModel:
    """p that some returned tool fits, from :data:`FEATURES`: a logistic regression on the
    standardised signals, or (``trees``) gradient-boosted trees on the raw ones, whose logit
    is ``bias`` plus every tree's leaf; thresholds per mode on p."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    thresholds: dict[str, float] = field(hash=False)
    """Mode → the p below which the router abstains."""
    embedder: str = ""
    """The embedding model (``model_id``) whose cosines the weights were fitted on: with
    another, the signals mean something else and the model is not applied ("" : any)."""
    trained_on: tuple[str, ...] = ()
    """The query sets the weights and thresholds were fitted on."""
    requests: Matrix | None = field(default=None, compare=False, repr=False)
    """(n, d) unit vectors of the out-of-scope requests ``oos_gap`` compares against."""
    requests_file: str = ""
    """Where :attr:`requests` are stored: a ``.npy`` file beside the model's JSON."""
    trees: tuple[Tree, ...] = field(default=(), compare=False, repr=False)
    """The boosted trees (empty: the logistic regression)."""

    def probability(self, x: npt.NDArray[np.float64]) -> float:
        """p that some returned tool fits, for one feature vector in :attr:`features` order."""
        if self.trees:
            row = [float(v) for v in x]
            logit = self.bias + sum(tree(row) for tree in self.trees)
        else:
            z = (np.asarray(x, dtype=np.float64) - np.asarray(self.mean)) / np.asarray(self.scale)
            logit = float(z @ np.asarray(self.weights)) + self.bias
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, logit))))

    def to_dict(self) -> dict[str, Any]:
        shape: dict[str, Any] = (
            {"format": 3, "trees": [t.to_dict() for t in self.trees]}
            if self.trees
            else {
                "format": 2,
                "mean": list(self.mean),
                "scale": list(self.scale),
                "weights": list(self.weights),
            }
        )
        return {
            **shape,
            "features": list(self.features),
            "bias": self.bias,
            "thresholds": dict(self.thresholds),
            "embedder": self.embedder,
            "trained_on": list(self.trained_on),
            **({"requests": self.requests_file} if self.requests_file else {}),
        }


def load_model(path: str | Path) -> AbstainModel:
    """An :class:`AbstainModel` from its JSON (a user's own model: a clear error if unusable)."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ConfigError(f"cannot read the abstention model {path}: {e}") from None
    return _model(raw, str(path), lambda name: Path(path).parent / name)


@lru_cache(maxsize=1)
def default_model() -> AbstainModel:
    """The default embedder's shipped model (``toolroute/data/abstain.json`` and the request
    vectors beside it)."""
    return _shipped(SHIPPED[0])


@lru_cache(maxsize=4)
def shipped_model(embedder: str) -> AbstainModel | None:
    """The shipped model fitted on ``embedder``'s cosines (a ``model_id``), None if none is."""
    for name in SHIPPED:
        model = default_model() if name == SHIPPED[0] else _shipped(name)
        if model.embedder == embedder:
            return model
    return None


def _shipped(name: str) -> AbstainModel:
    data = resources.files("toolroute.data")
    text = data.joinpath(name).read_text("utf-8")
    return _model(json.loads(text), f"toolroute/data/{name}", data.joinpath)


def _requests(opener: Any, name: str, where: str) -> Matrix:
    """The request vectors a model names (``.npy``, no pickle), as unit float32 rows."""
    try:
        with opener(name).open("rb") as f:
            vecs = np.asarray(np.load(f, allow_pickle=False), dtype=np.float32)
    except (OSError, ValueError) as e:
        raise ConfigError(f"{where}: cannot read its requests {name}: {e}") from None
    if vecs.ndim != 2 or not len(vecs):
        raise ConfigError(f"{where}: its requests {name} are not a matrix of vectors")
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    out: Matrix = (vecs / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    return out


def _tree(raw: Any, n_features: int) -> Tree:
    tree = Tree(
        feature=tuple(int(v) for v in raw["feature"]),
        threshold=tuple(float(v) for v in raw["threshold"]),
        left=tuple(int(v) for v in raw["left"]),
        right=tuple(int(v) for v in raw["right"]),
        value=tuple(float(v) for v in raw["value"]),
        leaf=tuple(bool(v) for v in raw["leaf"]),
        missing_left=tuple(bool(v) for v in raw["missing_left"]),
    )
    n = len(tree.leaf)
    inner = [i for i in range(n) if not tree.leaf[i]]
    if (
        not n
        or any(
            len(col) != n
            for col in (tree.feature, tree.threshold, tree.left, tree.right, tree.value)
        )
        or any(
            not (
                0 <= tree.feature[i] < n_features and i < tree.left[i] < n and i < tree.right[i] < n
            )
            for i in inner
        )
    ):
        raise ValueError("a tree's nodes are inconsistent")
    return tree


def _model(raw: Any, where: str, opener: Any) -> AbstainModel:
    try:
        feats = tuple(str(f) for f in raw["features"])
        trees = tuple(_tree(t, len(feats)) for t in raw.get("trees", ()))
        model = AbstainModel(
            features=feats,
            mean=() if trees else tuple(float(v) for v in raw["mean"]),
            scale=() if trees else tuple(float(v) or 1.0 for v in raw["scale"]),
            weights=() if trees else tuple(float(v) for v in raw["weights"]),
            bias=float(raw["bias"]),
            thresholds={str(k): float(v) for k, v in raw["thresholds"].items()},
            embedder=str(raw.get("embedder", "")),
            trained_on=tuple(str(s) for s in raw.get("trained_on", ())),
            requests_file=str(raw.get("requests", "")),
            trees=trees,
        )
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ConfigError(f"{where}: not an abstention model ({e!r})") from None
    if set(feats) - set(FEATURES) or not (
        model.trees or len(model.mean) == len(model.scale) == len(model.weights) == len(feats)
    ):
        raise ConfigError(f"{where}: its features do not match {', '.join(FEATURES)}")
    if model.requests_file:
        model = replace(model, requests=_requests(opener, model.requests_file, where))
    elif "oos_gap" in feats:
        raise ConfigError(f"{where}: it reads oos_gap but names no requests file")
    return model
