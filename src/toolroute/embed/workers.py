"""Query embeddings in a bounded pool of worker processes, for a gateway on many cores.

A fresh query's embedding is most of a ``find_tools``'s CPU; the gateway routes in threads, but
its tokenising, pooling and everything around the model pass share one interpreter with the
event loop. :class:`ProcessEmbedder` sends each call to one of ``workers`` processes, each
holding its own model session (made by ``factory`` in the worker; the default one,
``OnnxEmbedder(threads=1)``), and waits for the vectors: the caller's thread blocks as it would
on the model itself, so the call path's ordering and cancellation stay what they were (a routing
thread runs to completion either way). Workers start with the pool, so the first query does not
pay a model load per worker.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from toolroute.embed.base import Embedder, Matrix
from toolroute.embed.onnx import OnnxEmbedder
from toolroute.errors import EmbedError

__all__ = ["ProcessEmbedder", "default_factory"]

_worker: Any = None


def default_factory() -> Embedder:
    """The bundled model on one intra-op thread (each worker is one core's worth)."""
    return OnnxEmbedder(threads=1)


def _start(factory: Callable[[], Embedder]) -> None:
    global _worker
    parent = multiprocessing.parent_process()
    if parent is not None:  # a worker blocks on its task queue, whose both ends it holds: it
        # would outlive a gateway that was killed (each worker holds its own model's memory)
        threading.Thread(target=_exit_with, args=(parent.sentinel,), daemon=True).start()
    _worker = factory()


def _exit_with(sentinel: int) -> None:
    """End this worker as soon as the process that started it has ended, however it ended."""
    multiprocessing.connection.wait([sentinel])
    os._exit(0)


def _describe() -> tuple[str, int, bool]:
    return _worker.model_id, _worker.dim, hasattr(_worker, "embed_spans")


def _embed(texts: list[str]) -> Matrix:
    out: Matrix = np.asarray(_worker.embed(texts), dtype=np.float32)
    return out


def _embed_spans(text: str, spans: list[tuple[int, int]]) -> Matrix:
    out: Matrix = np.asarray(_worker.embed_spans(text, spans), dtype=np.float32)
    return out


class ProcessEmbedder:
    """An :class:`Embedder` (and span embedder, when the workers' one is) over ``workers``
    processes. :meth:`close` stops them; use it as a context manager."""

    def __init__(self, workers: int, factory: Callable[[], Embedder] = default_factory) -> None:
        if workers < 1:
            raise EmbedError(f"embedding workers must be >= 1, got {workers}")
        # spawn: a fork of a process holding threads (the event loop's, onnxruntime's) can
        # deadlock in the child
        self._pool = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start,
            initargs=(factory,),
        )
        self.workers = workers
        try:
            # one call per worker: every worker has loaded its model before the first query
            described = [self._pool.submit(_describe) for _ in range(workers)]
            self._model_id, self._dim, self._spans = described[0].result(timeout=300)
            for f in described[1:]:
                f.result(timeout=300)
        except BaseException:
            self._pool.shutdown(wait=False, cancel_futures=True)
            raise

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> Matrix:
        out: Matrix = self._pool.submit(_embed, list(texts)).result()
        return out

    def embed_spans(self, text: str, spans: Sequence[tuple[int, int]]) -> Matrix:
        if not self._spans:
            return self.embed([text, *(text[a:b] for a, b in spans)])
        out: Matrix = self._pool.submit(_embed_spans, text, list(spans)).result()
        return out

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> ProcessEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
