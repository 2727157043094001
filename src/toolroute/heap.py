"""The process's memory: freed model buffers kept from inflating it, and start-up's objects
kept out of the garbage collector's way.

A fixed glibc mmap threshold:

onnxruntime (its CPU arena off, embed/onnx.py) allocates each batch's activations with
``malloc`` and frees them after the batch. glibc serves large allocations with ``mmap`` and
returns them on ``free`` — until the first such free, which raises its *dynamic* mmap
threshold to that size (up to 32 MB): from then on, buffers of that size come from the heap,
and a heap that is freed in the middle is not given back: a cold index of livemcpbench grew
by hundreds of MB over its last, longest batches (benchmarks/index_rss_trace.py measures it
both ways). Setting ``M_MMAP_THRESHOLD`` explicitly turns the dynamic adjustment off
(mallopt(3)).

A no-op off glibc, and when the user set ``MALLOC_MMAP_THRESHOLD_`` themselves.
:func:`trim_heap` gives the heap's free pages back after one-off work (loading the model,
indexing); :func:`freeze_heap` takes what start-up built out of the cyclic GC's scans.
"""

from __future__ import annotations

import ctypes
import gc
import logging
import os
import platform
from typing import Any

__all__ = ["MMAP_THRESHOLD", "fix_mmap_threshold", "freeze_heap", "trim_heap"]

logger = logging.getLogger(__name__)

MMAP_THRESHOLD = 128 * 1024
"""glibc's default starting threshold, kept fixed."""
_M_MMAP_THRESHOLD = -3  # <malloc.h>
_done = False


def fix_mmap_threshold() -> bool:
    """Fix glibc's mmap threshold at :data:`MMAP_THRESHOLD` once per process; True if set."""
    global _done
    if _done:
        return True
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    if "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        ok = bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))
    except (OSError, AttributeError) as e:
        logger.debug("mallopt unavailable: %s", e)
        return False
    _done = ok
    return ok


_libc: Any = None


def trim_heap() -> None:
    """Return the heap's free pages to the OS (glibc ``malloc_trim``; a no-op elsewhere)."""
    global _libc
    if _libc is None:
        try:
            _libc = ctypes.CDLL("libc.so.6") if platform.system() == "Linux" else False
        except OSError:  # musl and the like: nothing to trim with
            _libc = False
    if _libc:
        _libc.malloc_trim(0)


def freeze_heap() -> None:
    """Move what start-up built (modules, the catalog, the SDK's server) into the permanent
    generation: the cyclic GC's full collections then walk only what requests allocate,
    instead of pausing every session to re-scan objects that live as long as the process
    (the gateway's call_tool p99 at 100 req/s roughly halved, benchmarks/load.py)."""
    gc.collect()
    gc.freeze()
