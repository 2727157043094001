from __future__ import annotations

import platform

import pytest

from toolroute import heap


@pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only"
)
def test_the_mmap_threshold_is_fixed_once_on_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    monkeypatch.setattr(heap, "_done", False)
    assert heap.fix_mmap_threshold() is True
    assert heap.fix_mmap_threshold() is True  # idempotent


def test_a_threshold_the_user_set_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")
    monkeypatch.setattr(heap, "_done", False)
    assert heap.fix_mmap_threshold() is False


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
