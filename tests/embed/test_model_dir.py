"""A model folder named by TOOLROUTE_EMBED_MODEL: its files are required and its sha256 pinned.

No model is loaded here: a wrong or missing file must fail before onnxruntime sees it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from toolroute.embed.onnx import MODEL_ENV, OnnxEmbedder, model_dir_files
from toolroute.errors import EmbedError


def _folder(tmp_path: Path, pin: str | None = None) -> Path:
    (tmp_path / "model.onnx").write_bytes(b"not really a model")
    (tmp_path / "tokenizer.json").write_text("{}")
    digest = hashlib.sha256(b"not really a model").hexdigest()
    (tmp_path / "model.onnx.sha256").write_text((pin or digest) + "\n")
    return tmp_path


def test_a_folder_whose_model_matches_its_pin_gives_its_two_files(tmp_path: Path) -> None:
    model, tokenizer = model_dir_files(_folder(tmp_path))
    assert (model.name, tokenizer.name) == ("model.onnx", "tokenizer.json")


def test_a_model_that_differs_from_its_pin_is_refused(tmp_path: Path) -> None:
    with pytest.raises(EmbedError, match="differs from the pinned"):
        model_dir_files(_folder(tmp_path, pin="0" * 64))


@pytest.mark.parametrize("missing", ["model.onnx", "tokenizer.json", "model.onnx.sha256"])
def test_a_folder_missing_a_file_is_refused_by_name(tmp_path: Path, missing: str) -> None:
    (_folder(tmp_path) / missing).unlink()
    with pytest.raises(EmbedError, match=missing):
        model_dir_files(tmp_path)


def test_the_setting_is_read_by_the_default_constructor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MODEL_ENV, str(_folder(tmp_path, pin="0" * 64)))
    with pytest.raises(EmbedError, match="differs from the pinned"):
        OnnxEmbedder()
