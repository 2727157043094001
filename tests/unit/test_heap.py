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


def test_freeze_heap_moves_what_start_up_built_out_of_the_collectors_scans() -> None:
    import gc

    gc.unfreeze()
    try:
        heap.freeze_heap()
        assert gc.get_freeze_count() > 0
        assert gc.collect() >= 0  # a collection after the freeze still works
    finally:
        gc.unfreeze()


def test_trim_heap_runs_anywhere() -> None:
    heap.trim_heap()  # glibc: malloc_trim; elsewhere a no-op, never an error
