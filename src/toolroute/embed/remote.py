"""Embedders for users with a model hub or an embeddings server.

- :class:`SentenceTransformerEmbedder`: any sentence-transformers model name or local path
  (``pip install toolroute[st]``; needs a hub for names it has not cached).
- :class:`OpenAIEmbedder`: any OpenAI-compatible ``/v1/embeddings`` endpoint.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

import numpy as np

from toolroute.embed.base import Matrix, l2_normalise
from toolroute.errors import EmbedError

__all__ = ["OpenAIEmbedder", "SentenceTransformerEmbedder"]


class SentenceTransformerEmbedder:
    """A sentence-transformers model, loaded lazily from a name or a local path."""

    def __init__(self, name_or_path: str, *, device: str | None = None) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise EmbedError(
                "sentence-transformers is not installed: pip install 'toolroute[st]'"
            ) from None
        try:
            self._model: Any = SentenceTransformer(name_or_path, device=device)
        except Exception as e:  # hub/network/file errors come in many types
            raise EmbedError(
                f"cannot load sentence-transformers model {name_or_path!r}: {e}"
            ) from None
        self._id = f"st:{name_or_path}"
        self._dim = int(self._model.get_sentence_embedding_dimension())

    @property
    def model_id(self) -> str:
        return self._id

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> Matrix:
        vecs = self._model.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True)
        return l2_normalise(np.asarray(vecs).reshape(len(texts), self._dim))


class OpenAIEmbedder:
    """POSTs to ``{base_url}/embeddings``; the key comes from the argument or ``api_key_env``."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        dim: int,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout_s: float = 30.0,
        batch_size: int = 64,
    ) -> None:
        self._url = base_url.rstrip("/") + "/embeddings"
        self._model = model
        self._dim = dim
        self._key = api_key if api_key is not None else os.environ.get(api_key_env)
        self._timeout = timeout_s
        self._batch = batch_size

    @property
    def model_id(self) -> str:
        return f"openai:{self._url}:{self._model}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> Matrix:
        rows: list[list[float]] = []
        for start in range(0, len(texts), self._batch):
            rows.extend(self._post(list(texts[start : start + self._batch])))
        if not rows:
            return np.zeros((0, self._dim), dtype=np.float32)
        m = np.asarray(rows, dtype=np.float32)
        if m.shape[1] != self._dim:
            raise EmbedError(
                f"{self._url}: vectors have dimension {m.shape[1]}, expected {self._dim}"
            )
        return l2_normalise(m)

    def _post(self, batch: list[str]) -> list[list[float]]:
        body = json.dumps({"model": self._model, "input": batch}).encode()
        headers = {"Content-Type": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        req = urllib.request.Request(self._url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self._timeout) as resp:
                payload = json.loads(resp.read())
        except urllib.error.HTTPError as e:
            raise EmbedError(f"{self._url}: HTTP {e.code}: {e.reason}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as e:
            raise EmbedError(f"{self._url}: {e}") from None
        except json.JSONDecodeError:
            raise EmbedError(f"{self._url}: response is not JSON") from None
        try:
            data = sorted(payload["data"], key=lambda d: d["index"])
            vectors: list[list[float]] = [d["embedding"] for d in data]
        except (KeyError, TypeError):
            raise EmbedError(f"{self._url}: response lacks data[].embedding") from None
        if len(vectors) != len(batch):
            raise EmbedError(f"{self._url}: {len(vectors)} vectors for {len(batch)} texts")
        return vectors
