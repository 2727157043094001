"""Learned fusion: a logistic regression over the signals the router already computes.

Hand weights (α = 0.2 for BM25, w = 0.5 for sub-intents, the action penalty …) were tuned on
the visible sets. Here one small linear model weighs them instead, trained leave-one-dataset-
out (benchmarks/train_fusion.py) and shipped as a versioned JSON file
(``toolroute/data/fusion-v1.json``: feature names, standardisation, coefficients, where it
came from). At query time it is a dot product over a candidate pool: no model library, no
deep model.

Per query, the pool is ``steps``' top :attr:`FusionModel.pool` tools plus the top 10 of the
flat dense, BM25 (name + description) and stemmed BM25 rankings. Each pooled tool gets the
features of :data:`FEATURES`; its fused score is the model's logit × ``score_scale`` (on the
cosine scale the adaptive layer's margins assume), and every tool outside the pool ranks below
the pool in ``steps``' order.

Version 2 (``fusion-v2.json``, :func:`second_model`; benchmarks/models.py measures it) adds a
second dense signal: :data:`SECOND_FEATURES`, the cosines of another embedding model
(bge-small, embed/bge.py) over the same tool documents, from a :class:`SecondDense` view
attached to the index with :func:`attach_second_dense`; that model's flat top 10 joins the pool.

Version 3 (``fusion-v3.json``, :func:`third_model`, strategy ``fusion3``; trained by
benchmarks/train_fusion_v3.py) keeps v1's pool and features and adds
:data:`POSITION_FEATURES`: where ``default`` and ``steps`` rank the tool, and v1's main
columns as z-scores within the query's pool. It is trained on per-step needs beside whole
requests with a pairwise (RankNet-linear) objective, and ranks the pool by its logit's z-score
plus :attr:`FusionModel.anchor` × the z-score of ``default``'s rank: how close it stays to
``default``, chosen leave-one-set-out as the smallest weight under which no held-out set loses.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from toolroute.embed.base import Matrix
from toolroute.errors import ConfigError
from toolroute.index.build import ToolIndex
from toolroute.index.document import humanise
from toolroute.index.fields import FIELDS, field_index, stem_text
from toolroute.route import stage
from toolroute.route.composition import adaptive_over
from toolroute.route.expand import expand
from toolroute.route.precompute import index_providers

__all__ = [
    "FEATURES",
    "FEATURES_V2",
    "FEATURES_V3",
    "FORMAT",
    "SECOND_FEATURES",
    "FusionModel",
    "SecondDense",
    "attach_second_dense",
    "candidate_features",
    "default_model",
    "fused_scores",
    "fusion",
    "fusion3",
    "load_model",
    "second_dense",
    "second_model",
    "third_model",
]

FORMAT = "toolroute-fusion"
VERSION = 3
"""The newest model file version (1: :data:`FEATURES`; 2: :data:`FEATURES_V2`;
3: :data:`FEATURES_V3`)."""
FEATURES = (
    "dense",  # TDWA cosine (ScaleMCP eq. 1)
    "flat",  # cosine of "server: tool: description"
    "bm25",  # the router's BM25 over the whole document, / max
    "bm25_name_desc",  # BM25 over name + description, / max
    *(f"bm25_{f}" for f in FIELDS),  # per field, / max (index/fields.py)
    "server",  # server layer: profile cosine + α BM25
    "intent_best",  # best sub-intent cosine (the query's when one clause)
    "multi",  # hybrid lifted by sub-intents
    "action",  # action-word penalty applied (≤ 0)
    "implied",  # implied-step lift (≥ 0)
    "steps",  # the steps score
    "steps_gap",  # steps − the query's best steps score
    "dense_gap",  # dense − the query's best dense
    "steps_rank",  # 1 / log2(rank + 1) in steps' order
    "name_overlap",  # share of the tool name's words (stemmed) in the query
)
SECOND_FEATURES = (
    "dense2",  # the second model's TDWA cosine
    "flat2",  # the second model's flat cosine
    "intent_best2",  # the second model's best sub-intent cosine (the query's when one clause)
    "dense2_gap",  # dense2 − the query's best dense2
)
FEATURES_V2 = FEATURES + SECOND_FEATURES
_ZSCORED: tuple[str, ...] = ("dense", "flat", "bm25", "bm25_name_desc", "bm25_stemmed")
_ZSCORED += ("server", "intent_best", "multi", "steps", "name_overlap")
POSITION_FEATURES = (
    "default_rank",  # 1 / log2(rank + 1) in default's order (adaptive over steps)
    "default_top5",  # 1 when default ranks the tool in its top 5
    "steps_top5",  # 1 when steps ranks the tool in its top 5
    *(f"{f}_z" for f in _ZSCORED),  # z-score within the query's pool
)
FEATURES_V3 = FEATURES + POSITION_FEATURES
_VERSIONS = {1: FEATURES, 2: FEATURES_V2, 3: FEATURES_V3}

Floats = npt.NDArray[np.float64]
Scores = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class SecondDense:
    """Another embedding model's view of an index's tools, row for row."""

    model_id: str
    tool_vectors: Matrix
    """TDWA document vectors under the index's document configuration."""
    flat_vectors: Matrix
    """Embeddings of ``"server name: tool name: description"``."""
    embed: Callable[[list[str]], Matrix]
    """Embeds a query and its sub-intents with that model."""


# Keyed by the index's DerivedData (the index itself is a slotted dataclass, not weakly
# referenceable): the view lives exactly as long as the index it describes.
_SECOND: weakref.WeakKeyDictionary[Any, SecondDense] = weakref.WeakKeyDictionary()


def attach_second_dense(ix: ToolIndex, view: SecondDense) -> None:
    """Give ``ix`` a second dense signal (what a v2 model reads); replaces an older one."""
    if view.tool_vectors.shape[0] != ix.size or view.flat_vectors.shape[0] != ix.size:
        raise ConfigError(f"a second dense view needs {ix.size} rows, one per tool of the index")
    _SECOND[ix.derived] = view


def second_dense(ix: ToolIndex) -> SecondDense | None:
    """The view attached to ``ix``, if any."""
    return _SECOND.get(ix.derived)


@dataclass(frozen=True, slots=True)
class FusionModel:
    """A standardised logistic regression over :data:`FEATURES` (or :data:`FEATURES_V2`)."""

    mean: Floats
    scale: Floats
    coef: Floats
    intercept: float
    pool: int = 30
    score_scale: float = 0.05
    provenance: tuple[tuple[str, Any], ...] = ()
    features: tuple[str, ...] = FEATURES
    anchor: float = 0.0
    """v3: a query's pool is ranked by z(logit) + anchor · z(default_rank), z-scores within
    the pool: how close the model stays to ``default``'s order (0: the logit alone)."""

    @property
    def version(self) -> int:
        return next(v for v, f in _VERSIONS.items() if f == self.features)

    def logits(self, x: Floats) -> Floats:
        out: Floats = ((x - self.mean) / self.scale) @ self.coef + self.intercept
        return out

    def pool_scores(self, x: Floats) -> Floats:
        """One query's pool ``x`` → the scores it is ranked by (see :attr:`anchor`)."""
        logit = self.logits(x)
        if not self.anchor:
            return logit
        return _z(logit) + self.anchor * _z(x[:, self.features.index("default_rank")])

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": self.version,
            "features": list(self.features),
            "mean": [round(float(v), 6) for v in self.mean],
            "scale": [round(float(v), 6) for v in self.scale],
            "coef": [round(float(v), 6) for v in self.coef],
            "intercept": round(self.intercept, 6),
            "pool": self.pool,
            "score_scale": self.score_scale,
            **({"anchor": self.anchor} if self.anchor else {}),
            "provenance": dict(self.provenance),
        }


def load_model(path: Path) -> FusionModel:
    """A model file written by :meth:`FusionModel.to_json`; a file of another format,
    version or feature list is a :class:`ConfigError` (its weights would mean other things)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ConfigError(f"cannot read fusion model {path}: {e}") from None
    version = data.get("version") if isinstance(data, dict) else None
    features = _VERSIONS.get(version) if isinstance(version, int) else None
    if (
        not isinstance(data, dict)
        or data.get("format") != FORMAT
        or features is None
        or data.get("features") != list(features)
    ):
        raise ConfigError(
            f"{path} is not a {FORMAT} v{'/v'.join(map(str, _VERSIONS))} model over this "
            "router's features"
        )
    n = len(features)
    arrays = [np.asarray(data[k], dtype=np.float64) for k in ("mean", "scale", "coef")]
    if any(a.shape != (n,) for a in arrays) or (arrays[1] <= 0).any():
        raise ConfigError(f"{path}: mean, scale and coef need {n} values (scale > 0)")
    return FusionModel(
        arrays[0],
        arrays[1],
        arrays[2],
        float(data["intercept"]),
        int(data.get("pool", 30)),
        float(data.get("score_scale", 0.05)),
        tuple(sorted(dict(data.get("provenance", {})).items())),
        features,
        float(data.get("anchor", 0.0)) if features == FEATURES_V3 else 0.0,
    )


_SHIPPED: dict[str, FusionModel] = {}


def _shipped(name: str) -> FusionModel:
    if name not in _SHIPPED:
        _SHIPPED[name] = load_model(Path(str(resources.files("toolroute") / "data" / name)))
    return _SHIPPED[name]


def default_model() -> FusionModel:
    """The shipped model (``toolroute/data/fusion-v1.json``), read once."""
    return _shipped("fusion-v1.json")


def second_model() -> FusionModel:
    """The shipped two-model fusion (``toolroute/data/fusion-v2.json``), read once."""
    return _shipped("fusion-v2.json")


def third_model() -> FusionModel:
    """The shipped v3 fusion (``toolroute/data/fusion-v3.json``), read once."""
    return _shipped("fusion-v3.json")


def _z(v: Floats) -> Floats:
    """Z-scores of ``v`` (of each column, for a matrix); a constant column stays at 0."""
    sd = v.std(axis=0)
    out: Floats = (v - v.mean(axis=0)) / np.where(sd > 1e-9, sd, 1.0)
    return out


def _max_norm(s: Scores) -> Scores:
    top = float(s.max()) if s.size else 0.0
    return s / top if top > 0 else s


def _top(s: Scores, k: int) -> npt.NDArray[np.intp]:
    finite = np.flatnonzero(np.isfinite(s))
    if finite.size <= k:
        return finite
    out: npt.NDArray[np.intp] = finite[np.argpartition(-s[finite], k - 1)[:k]]
    return out


def _name_words(ix: ToolIndex) -> list[frozenset[str]]:
    """Each tool name's stemmed words, kept by the index (computed once per index)."""
    words: list[frozenset[str]] = ix.derived.memo(
        "fusion-name-words",
        lambda: [frozenset(stem_text(humanise(t.name)).split()) for t in ix.tools],
    )
    return words


def candidate_features(
    ix: ToolIndex, q: Any, p: Any, pool: int = 30, second: SecondDense | None = None
) -> tuple[npt.NDArray[np.intp], Floats, Scores]:
    """(pooled rows, their (rows × features) matrix, ``steps``' scores of every tool): the
    features are :data:`FEATURES`, or :data:`FEATURES_V2` with a ``second`` dense view."""
    d = stage.dense(ix, q, p)
    flat = ix.flat_vectors @ q.vector
    lex = _max_norm(ix.tool_lexical.scores(q.text))
    nd = _max_norm(ix.name_desc_lexical.scores(q.text))
    fields = {f: _max_norm(v) for f, v in field_index(ix).scores(q.text).items()}
    m = stage.multi(ix, q, p)
    a = stage.action_prior(ix, q, p, m)
    e = expand(a, index_providers(ix), p.steps.expand_pool, p.steps.expand_weight)
    s = stage.near_duplicates(ix, q, p, stage.file_steps(ix, q, p, e))  # = steps(ix, q, p)
    tops = [_top(s, pool), _top(flat, 10), _top(nd, 10), _top(fields["stemmed"], 10)]
    if second is not None:
        qv = second.embed([q.text, *q.intents])
        d2 = second.tool_vectors @ qv[0]
        flat2 = second.flat_vectors @ qv[0]
        tops.append(_top(flat2, 10))
    rows = np.unique(np.concatenate(tops))
    rows = rows[np.isfinite(s[rows])]
    srv = stage.server_scores(ix, q, p)[ix.server_of[rows]]
    if q.intent_vectors is not None and len(q.intent_vectors):
        best = (ix.tool_vectors[rows] @ q.intent_vectors.T).max(axis=1)
    else:
        best = d[rows]
    order = np.argsort(-s[rows], kind="stable")
    rank = np.empty(rows.size)
    rank[order] = np.arange(1, rows.size + 1)
    words = frozenset(stem_text(q.text).split())
    names = _name_words(ix)
    overlap = np.array([len(names[j] & words) / max(1, len(names[j])) for j in rows])
    x = np.column_stack(
        [
            d[rows],
            flat[rows],
            lex[rows],
            nd[rows],
            *(fields[f][rows] for f in FIELDS),
            srv,
            best,
            m[rows],
            a[rows] - m[rows],
            e[rows] - a[rows],
            s[rows],
            s[rows] - float(s[rows].max()) if rows.size else s[rows],
            d[rows] - float(d.max()),
            1.0 / np.log2(rank + 1.0),
            overlap,
        ]
    ).astype(np.float64)
    if second is not None:
        best2 = (second.tool_vectors[rows] @ qv[1:].T).max(axis=1) if len(qv) > 1 else d2[rows]
        extra = np.column_stack([d2[rows], flat2[rows], best2, d2[rows] - float(d2.max())])
        x = np.hstack([x, extra.astype(np.float64)])
    return rows, x, s


def default_ranks(ix: ToolIndex, q: Any, p: Any, s: Scores, rows: npt.NDArray[np.intp]) -> Floats:
    """Each pooled row's 1-based rank in ``default``'s order (adaptive over ``steps``' scores
    ``s``), among every tool of the index."""
    a = np.asarray(adaptive_over(lambda *_: s)(ix, q, p), dtype=np.float64)
    ranked = np.sort(a[np.isfinite(a)])
    below = np.searchsorted(ranked, a[rows], side="right")
    return np.asarray(1.0 + ranked.size - below, dtype=np.float64)


def position_features(x: Floats, ranks: Floats) -> Floats:
    """(rows × :data:`POSITION_FEATURES`) of one query's pool: where ``default`` and ``steps``
    put each tool, and :data:`FEATURES`' columns ``x`` as z-scores within the pool (what a
    model learns then holds for pools of any score scale)."""
    steps_top5 = x[:, FEATURES.index("steps_rank")] >= 1.0 / np.log2(6.0) - 1e-9
    z = _z(x[:, [FEATURES.index(f) for f in _ZSCORED]])
    return np.column_stack([1.0 / np.log2(ranks + 1.0), ranks <= 5, steps_top5, z]).astype(
        np.float64
    )


def fused_scores(ix: ToolIndex, q: Any, p: Any, model: FusionModel) -> Scores:
    """The model's order over the pool, ``steps``' order below it (module docstring)."""
    second = None
    if model.features == FEATURES_V3:
        rows, x, s = candidate_features(ix, q, p, model.pool)
        if rows.size:
            x = np.hstack([x, position_features(x, default_ranks(ix, q, p, s, rows))])
        return _place(rows, x, s, model)
    if model.features != FEATURES:
        second = second_dense(ix)
        if second is None:
            raise ConfigError(
                "this fusion model needs a second dense view of the index "
                "(route.fusion.attach_second_dense, e.g. bge-small from toolroute[models])"
            )
    rows, x, s = candidate_features(ix, q, p, model.pool, second)
    return _place(rows, x, s, model)


def _place(rows: npt.NDArray[np.intp], x: Floats, s: Scores, model: FusionModel) -> Scores:
    out = s.astype(np.float64, copy=True)
    if not rows.size:
        return s
    fused = model.pool_scores(x) * model.score_scale
    out[rows] = fused
    rest = np.isfinite(s)
    rest[rows] = False
    if rest.any():
        floor = float(fused.min())
        top_rest = float(s[rest].max())
        if top_rest >= floor:
            out[rest] = s[rest] - (top_rest - floor) - 1e-3
    return out.astype(np.float32)


def fusion(ix: ToolIndex, q: Any, p: Any) -> Scores:
    """The shipped learned fusion over ``steps``' candidates."""
    return fused_scores(ix, q, p, default_model())


def fusion3(ix: ToolIndex, q: Any, p: Any) -> Scores:
    """The shipped v3 fusion: a pairwise-trained model anchored to ``default``'s order."""
    return fused_scores(ix, q, p, third_model())
