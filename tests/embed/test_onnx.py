"""The default embedder with the real int8 models (offline): the tool embedder shipped in the
package, and the plain all-MiniLM-L6-v2 from PyPI packages that ``TOOLROUTE_EMBED_MODEL=minilm``
selects."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from toolroute.embed.onnx import OnnxEmbedder
from toolroute.errors import EmbedError

pytestmark = pytest.mark.integration


def test_vectors_are_384_d_and_unit_length(onnx: OnnxEmbedder) -> None:
    v = onnx.embed(["read a file", "what's the weather in Paris?", ""])
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v[:2], axis=1), 1.0, atol=1e-5)


def test_paraphrases_are_closer_than_unrelated_texts(onnx: OnnxEmbedder) -> None:
    a, b, c = onnx.embed(
        ["get the current time in Tokyo", "what time is it in Japan", "delete a git branch"]
    )
    assert a @ b > a @ c + 0.2


def test_batching_and_order_do_not_change_vectors(onnx: OnnxEmbedder) -> None:
    texts = ["short", "a much longer sentence about converting documents to pdf files", "mid one"]
    together = onnx.embed(texts)
    alone = np.stack([onnx.embed([t])[0] for t in texts])
    assert np.allclose(together, alone, atol=1e-4)


def test_span_pooling_row_zero_is_the_whole_text(onnx: OnnxEmbedder) -> None:
    text = "Fetch the news headlines, then draw a word cloud of them"
    rows = onnx.embed_spans(text, [(0, 24), (31, len(text))])
    assert rows.shape == (3, 384)
    assert np.allclose(rows[0], onnx.embed([text])[0], atol=1e-4)
    cloud = onnx.embed(["draw a word cloud"])[0]
    assert rows[2] @ cloud > rows[1] @ cloud


def test_custom_model_needs_both_files(tmp_path: Path) -> None:
    with pytest.raises(EmbedError, match="both model_path and tokenizer_path"):
        OnnxEmbedder(model_path=tmp_path / "m.onnx")


def test_batches_within_the_token_budget_give_the_same_vectors(onnx: OnnxEmbedder) -> None:
    texts = [f"tool number {i} " + "reads and writes files " * (i % 7) for i in range(40)]
    small = OnnxEmbedder(batch_size=32, batch_tokens=64)  # many small batches
    assert np.allclose(small.embed(texts), onnx.embed(texts), atol=1e-4)


def test_a_router_over_a_warm_store_loads_the_model_only_to_route(
    tmp_path: Path, catalog_file: Path, onnx: OnnxEmbedder
) -> None:
    from toolroute import Router

    with Router(catalog_file, store=tmp_path / "s", embedder=onnx) as r:
        r.index()
        expected = r.route("read a file from disk", k=3)
    cold = OnnxEmbedder()
    with Router(catalog_file, store=tmp_path / "s", embedder=cold) as r:
        r.index()
        assert not cold.loaded  # every text came from the cache
        assert r.route("read a file from disk", k=3) == expected
        assert cold.loaded


def test_one_thread_and_the_query_memo_give_the_same_vectors(onnx: OnnxEmbedder) -> None:
    from toolroute.embed.recent import QueryMemo

    memo = QueryMemo(OnnxEmbedder(threads=1), size=4)
    text = "Fetch the news headlines, then draw a word cloud of them"
    assert np.allclose(memo.embed([text]), onnx.embed([text]), atol=1e-4)
    spans = [(0, 24)]
    assert np.allclose(memo.embed_spans(text, spans), onnx.embed_spans(text, spans), atol=1e-4)
    assert np.array_equal(memo.embed([text]), memo.embed([text])) and memo.hits == 2


def test_a_batch_of_texts_embeds_under_bulk_heap_settings_and_a_query_under_routing_s(
    onnx: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    import contextlib
    from collections.abc import Iterator

    from toolroute.embed import onnx as module

    onnx.embed(["load the session"])  # loading is bulk work too
    sizes: list[int] = []

    @contextlib.contextmanager
    def spy() -> Iterator[None]:
        sizes.append(len(sizes))
        yield

    monkeypatch.setattr(module, "bulk_allocations", spy)
    onnx.embed(["read a file", "write it"])
    assert sizes == []  # a query and its parts: routing's heap settings (toolroute.heap)
    onnx.embed([f"tool {i}" for i in range(33)])  # more than one batch (32 texts)
    assert sizes == [0]


def test_a_model_folder_named_by_the_setting_is_loaded_in_place_of_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, onnx: OnnxEmbedder
) -> None:
    import hashlib
    import shutil

    from toolroute.embed.onnx import MODEL_ENV, default_model_files

    model, tokenizer = default_model_files()
    shutil.copy(model, tmp_path / "model.onnx")
    shutil.copy(tokenizer, tmp_path / "tokenizer.json")
    digest = hashlib.sha256(model.read_bytes()).hexdigest()
    (tmp_path / "model.onnx.sha256").write_text(digest + "\n")
    monkeypatch.setenv(MODEL_ENV, str(tmp_path))
    chosen = OnnxEmbedder()
    # its id names its file's digest: the same file is the same cache key wherever it lies
    assert chosen.model_id == f"onnx:model.onnx:{digest[:12]}" == onnx.model_id
    texts = ["merge the pull request", "what's the weather in Paris?"]
    assert np.allclose(chosen.embed(texts), onnx.embed(texts), atol=1e-5)


def test_plain_minilm_is_selected_by_name_under_its_own_id(
    monkeypatch: pytest.MonkeyPatch, onnx: OnnxEmbedder
) -> None:
    from toolroute.embed.onnx import DEFAULT_MODEL_ID, MINILM, MINILM_MODEL_ID, MODEL_ENV

    monkeypatch.setenv(MODEL_ENV, MINILM)
    minilm = OnnxEmbedder()
    assert minilm.model_id == MINILM_MODEL_ID != onnx.model_id == DEFAULT_MODEL_ID
    assert not minilm.loaded and minilm.dim == 384  # a shipped model loads on its first text
    a, b = minilm.embed(["merge the pull request"])[0], onnx.embed(["merge the pull request"])[0]
    assert abs(float(np.linalg.norm(a)) - 1.0) < 1e-5 and float(a @ b) < 0.999  # two models
