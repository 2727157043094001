"""The process's memory: freed model buffers kept from inflating it, routing's temporaries
kept from faulting, and start-up's objects kept out of the garbage collector's way.

Fixed glibc malloc thresholds:

onnxruntime (its CPU arena off, embed/onnx.py) allocates each batch's activations with
``malloc`` and frees them after the batch. glibc serves large allocations with ``mmap`` and
returns them on ``free`` — until the first such free, which raises its *dynamic* mmap threshold
to that size (up to 32 MB): from then on, buffers of that size come from the heap, and a heap
that is freed in the middle is not given back: a cold index grows over its last, longest batches
(benchmarks/index_rss_trace.py measures it both ways). Setting ``M_MMAP_THRESHOLD`` explicitly
turns the dynamic adjustment off (mallopt(3)).

Two settings, since the two workloads want opposite ones. Bulk embedding (indexing, loading
the model) runs under :func:`bulk_allocations`: mmapped from 128 KB, every batch's buffers go
back on free. Routing wants its per-query temporaries (one float per tool) on the heap:
mmapped, each one is fresh zero pages, faulted in on every route and unmapped again, which
slows a fresh process's warm routes; kept on the heap (mmap from 2 MB, and up to 32 MB of
free heap top kept instead of trimmed and faulted in again), they are faulted in once. One
setting for both costs one side: 128 KB slows the routes, anything that spares them raises a
cold index's peak.

A no-op off glibc, and when the user set ``MALLOC_MMAP_THRESHOLD_`` or
``MALLOC_TRIM_THRESHOLD_`` themselves.
:func:`trim_heap` gives the heap's free pages back after one-off work (loading the model,
indexing); :func:`freeze_heap` takes what start-up built out of the cyclic GC's scans.
"""

from __future__ import annotations

import ctypes
import gc
import logging
import os
import platform
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = [
    "BULK_MMAP_THRESHOLD",
    "MMAP_THRESHOLD",
    "TRIM_THRESHOLD",
    "bulk_allocations",
    "fix_mmap_threshold",
    "freeze_heap",
    "trim_heap",
]

logger = logging.getLogger(__name__)

MMAP_THRESHOLD = 2 * 2**20
"""Routing's: allocations from this size are mmapped (a float64 per tool stays below up to
250k tools)."""
TRIM_THRESHOLD = 32 * 2**20
"""Routing's: free heap top kept up to this size instead of given back at every free."""
BULK_MMAP_THRESHOLD = 128 * 1024
"""Bulk embedding's (glibc's default starting threshold): both thresholds, within
:func:`bulk_allocations`."""
_M_TRIM_THRESHOLD = -1  # <malloc.h>
_M_MMAP_THRESHOLD = -3
_done = False
_lock = threading.Lock()
_bulk = 0


def _set(mmap: int, trim: int) -> bool:
    try:
        libc = ctypes.CDLL("libc.so.6")
        ok = bool(libc.mallopt(_M_MMAP_THRESHOLD, mmap))
        return ok and bool(libc.mallopt(_M_TRIM_THRESHOLD, trim))
    except (OSError, AttributeError) as e:
        logger.debug("mallopt unavailable: %s", e)
        return False


def fix_mmap_threshold() -> bool:
    """Fix glibc's mmap and trim thresholds at routing's (:data:`MMAP_THRESHOLD`,
    :data:`TRIM_THRESHOLD`) once per process; True if set."""
    global _done
    if _done:
        return True
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    if "MALLOC_MMAP_THRESHOLD_" in os.environ or "MALLOC_TRIM_THRESHOLD_" in os.environ:
        return False
    with _lock:
        _done = _set(*((BULK_MMAP_THRESHOLD,) * 2 if _bulk else (MMAP_THRESHOLD, TRIM_THRESHOLD)))
    return _done


@contextmanager
def bulk_allocations() -> Iterator[None]:
    """Within, bulk embedding's thresholds (:data:`BULK_MMAP_THRESHOLD`): a batch's buffers
    are mmapped and given back on free. Nests and spans threads (the last one out restores
    routing's); changes nothing in a process whose thresholds :func:`fix_mmap_threshold`
    did not set."""
    global _bulk
    with _lock:
        _bulk += 1
        if _bulk == 1 and _done:
            _set(BULK_MMAP_THRESHOLD, BULK_MMAP_THRESHOLD)
    try:
        yield
    finally:
        with _lock:
            _bulk -= 1
            if _bulk == 0 and _done:
                _set(MMAP_THRESHOLD, TRIM_THRESHOLD)


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
    (benchmarks/load.py measures the gateway's call latency under load)."""
    gc.collect()
    gc.freeze()
