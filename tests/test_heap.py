from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

from toolroute import heap

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"


@pytest.mark.skipif(not GLIBC, reason="glibc only")
def test_the_mmap_threshold_is_fixed_once_on_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    monkeypatch.setattr(heap, "_done", False)
    assert heap.fix_mmap_threshold() is True
    assert heap.fix_mmap_threshold() is True  # idempotent


def test_a_threshold_the_user_set_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")
    monkeypatch.setattr(heap, "_done", False)
    assert heap.fix_mmap_threshold() is False
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_")
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    assert heap.fix_mmap_threshold() is False


class _Mallopt:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def mallopt(self, param: int, value: int) -> int:
        self.calls.append((param, value))
        return 1


def _fake_glibc(monkeypatch: pytest.MonkeyPatch) -> _Mallopt:
    libc = _Mallopt()
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    monkeypatch.setattr(heap, "_done", False)
    monkeypatch.setattr(heap, "_bulk", 0)
    monkeypatch.setattr(heap.platform, "system", lambda: "Linux")
    monkeypatch.setattr(heap.platform, "libc_ver", lambda: ("glibc", "2.36"))
    monkeypatch.setattr(heap.ctypes, "CDLL", lambda name: libc)
    return libc


MMAP, TRIM = -3, -1  # <malloc.h>
ROUTING = [(MMAP, heap.MMAP_THRESHOLD), (TRIM, heap.TRIM_THRESHOLD)]
BULK = [(MMAP, heap.BULK_MMAP_THRESHOLD), (TRIM, heap.BULK_MMAP_THRESHOLD)]


def test_bulk_allocations_lower_both_thresholds_and_the_last_one_out_restores_routing_s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    libc = _fake_glibc(monkeypatch)
    assert heap.fix_mmap_threshold() is True
    assert libc.calls == ROUTING
    with heap.bulk_allocations():
        assert libc.calls == ROUTING + BULK
        with heap.bulk_allocations():  # nested (or another thread): no change
            pass
        assert libc.calls == ROUTING + BULK
    assert libc.calls == ROUTING + BULK + ROUTING
    assert heap.MMAP_THRESHOLD > 800_000  # a float64 per tool at 100k tools stays below


def test_bulk_allocations_leave_a_process_nobody_tuned_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    libc = _fake_glibc(monkeypatch)
    with heap.bulk_allocations():
        assert libc.calls == []
        assert heap.fix_mmap_threshold() is True  # tuned mid-bulk: bulk's until the end
        assert libc.calls == BULK
    assert libc.calls == BULK + ROUTING
    assert heap._bulk == 0


_FAULTS = """
import resource, numpy as np
from toolroute import heap
assert heap.fix_mmap_threshold()
x = np.ones(100_000)  # one float64 per tool of a 100k catalog: 800 KB
def temporaries():
    for _ in range(3):
        (x * 2.0).sum()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(50):
        (x * 2.0).sum()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
routing = temporaries()
with heap.bulk_allocations():
    bulk = temporaries()
print(routing, bulk)
"""


@pytest.mark.skipif(not GLIBC, reason="glibc only")
def test_routing_temporaries_at_100k_tools_reuse_heap_pages_instead_of_faulting_new_ones() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run(
        [sys.executable, "-c", _FAULTS], capture_output=True, text=True, timeout=60, env=env
    )
    assert out.returncode == 0, out.stderr
    routing, bulk = map(int, out.stdout.split())
    pages = 800_000 // 4096
    assert routing < 5 * pages  # each temporary mmapped would fault in ~200 pages: 50 x 200
    assert bulk > 25 * pages  # bulk's 128 KB threshold: mmapped, faulted in every time


class _Node:
    """A weak-referenceable object that can sit in a reference cycle."""

    def __init__(self) -> None:
        self.me = self


def test_freeze_heap_collects_garbage_first_then_keeps_start_up_objects_out_of_collections() -> (
    None
):
    import gc
    import weakref

    garbage = _Node()
    dead = weakref.ref(garbage)
    del garbage  # a cycle only the cyclic collector frees
    kept = _Node()
    frozen = weakref.ref(kept)
    gc.unfreeze()
    try:
        heap.freeze_heap()
        assert dead() is None  # collected before the freeze, not made permanent
        assert gc.get_freeze_count() > 0
        del kept  # garbage now, but frozen: the collector no longer scans it
        gc.collect()
        assert frozen() is not None
    finally:
        gc.unfreeze()
    gc.collect()
    assert frozen() is None  # unfrozen, it is an ordinary cycle again


class _Libc:
    def __init__(self) -> None:
        self.trims: list[int] = []

    def malloc_trim(self, pad: int) -> int:
        self.trims.append(pad)
        return 1


def test_trim_heap_calls_malloc_trim_through_one_loaded_libc(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    libc = _Libc()
    loads: list[str] = []
    monkeypatch.setattr(heap, "_libc", None)
    monkeypatch.setattr(heap.platform, "system", lambda: "Linux")
    monkeypatch.setattr(heap.ctypes, "CDLL", lambda name: loads.append(name) or libc)
    heap.trim_heap()
    heap.trim_heap()
    assert loads == ["libc.so.6"] and libc.trims == [0, 0]


def test_trim_heap_without_a_glibc_is_a_no_op_tried_once(monkeypatch: pytest.MonkeyPatch) -> None:
    loads: list[str] = []

    def no_glibc(name: str) -> None:  # musl and the like
        loads.append(name)
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(heap, "_libc", None)
    monkeypatch.setattr(heap.platform, "system", lambda: "Linux")
    monkeypatch.setattr(heap.ctypes, "CDLL", no_glibc)
    heap.trim_heap()
    heap.trim_heap()
    assert loads == ["libc.so.6"]
    monkeypatch.setattr(heap, "_libc", None)
    monkeypatch.setattr(heap.platform, "system", lambda: "Darwin")
    heap.trim_heap()
    assert loads == ["libc.so.6"]  # not Linux: no libc.so.6 to look for
