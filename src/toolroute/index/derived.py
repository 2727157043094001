"""Data derived from an index that routing needs (the provider graph, tool action classes,
schema keys): owned by the :class:`~toolroute.index.build.ToolIndex` it was derived from, and
saved with its snapshot.

Computed from a 100k-tool catalog these take seconds (Python loops over every tool and every
pair of a server's tools); a fresh process that recomputed them would spend those seconds on
its first route (benchmarks/scale.py). A :class:`Derivation` names a function of the index
that returns plain arrays; :class:`DerivedData` computes it once per index, and where the index
came from a snapshot, reads it from (and, when missing, writes it into) the snapshot's ``derived/``
folder, memory-mapped like the index's own arrays.

A derivation's files are keyed by its name, its ``version`` and a fingerprint of the source of
the modules its result depends on: editing a verb lexicon or a stop-word list makes a fresh
process recompute it instead of reading a stale array. Files are ``.npy`` (no pickle; string
arrays are fixed-width unicode), one folder per derivation, renamed into place when complete.
"""

from __future__ import annotations

import hashlib
import inspect
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from toolroute.store.base import private_dir, private_tree

IndexT = TypeVar("IndexT")
"""The index a derivation reads (:class:`toolroute.index.build.ToolIndex`)."""

__all__ = ["Arrays", "Derivation", "DerivedData"]

logger = logging.getLogger(__name__)

Arrays = tuple[npt.NDArray[Any], ...]
_MEMO_CAP = 256


@dataclass(frozen=True, slots=True)
class Derivation(Generic[IndexT]):
    """A named function of an index returning arrays (numeric or fixed-width strings)."""

    name: str
    make: Callable[[IndexT], Arrays] = field(compare=False)
    modules: tuple[ModuleType, ...] = field(default=(), compare=False)
    """Modules whose source the result depends on (fingerprinted into the file key)."""
    version: int = 1
    """Bumped when the result's meaning changes in a way the modules' source does not show."""

    @property
    def key(self) -> str:
        """``name-vN-<fingerprint>``: the folder the arrays are saved under."""
        return f"{self.name}-v{self.version}-{_fingerprint(self.modules)}"


_PRINTS: dict[tuple[str, ...], str] = {}


def _fingerprint(modules: tuple[ModuleType, ...]) -> str:
    names = tuple(m.__name__ for m in modules)
    hit = _PRINTS.get(names)
    if hit is None:
        h = hashlib.sha256()
        for m in modules:
            try:
                h.update(inspect.getsource(m).encode("utf-8"))
            except (OSError, TypeError):  # no source shipped: the version alone keys it
                h.update(m.__name__.encode("utf-8"))
        hit = _PRINTS[names] = h.hexdigest()[:12]
    return hit


class DerivedData:
    """Per-index derived values: computed once, kept while the index lives, and persisted
    beside the index's snapshot when there is one (``directory``)."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory
        self._values: dict[tuple[str, Hashable], Any] = {}
        self._lock = threading.Lock()

    def get(self, derivation: Derivation[IndexT], ix: IndexT) -> Arrays:
        """``derivation``'s arrays for ``ix``: from memory, the snapshot, or computed (and then
        written into the snapshot for the next process)."""
        key = ("derivation", derivation.key)
        hit = self._values.get(key)
        if hit is not None:
            return hit  # type: ignore[no-any-return]
        with self._lock:  # two first requests in threads compute once
            hit = self._values.get(key)
            if hit is None:
                hit = self._read(derivation)
                if hit is None:
                    hit = derivation.make(ix)
                    self._write(derivation, hit)
                self._values[key] = hit
        return hit

    def memo(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """Any per-index value kept in memory only (not saved): computed once per index."""
        try:
            return self._values[("memo", key)]
        except KeyError:
            pass
        value = make()
        if len(self._values) > _MEMO_CAP:  # keys built from query text stay bounded
            for k in [k for k in self._values if k[0] == "memo"]:
                del self._values[k]
        self._values[("memo", key)] = value
        return value

    def save(
        self, derivations: tuple[Derivation[IndexT], ...], ix: IndexT, directory: Path
    ) -> None:
        """Compute (or take from memory) every derivation and write it under ``directory``
        (a snapshot being built)."""
        for d in derivations:
            _write_arrays(directory / d.key, self.get(d, ix))

    def _read(self, derivation: Derivation[Any]) -> Arrays | None:
        if self.directory is None:
            return None
        where = self.directory / derivation.key
        try:
            count = int((where / "count").read_text(encoding="utf-8"))
            # plain arrays over the mapping: np.memmap's Python-level indexing hooks cost
            # a visible share of a route at 100k tools (benchmarks/scale.py)
            return tuple(
                np.asarray(np.load(where / f"{i}.npy", mmap_mode="r")) for i in range(count)
            )
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            logger.warning("recomputing the unreadable derived data %s: %s", where, e)
            return None

    def _write(self, derivation: Derivation[Any], arrays: Arrays) -> None:
        if self.directory is None:
            return
        try:
            private_dir(self.directory)
            _write_arrays(self.directory / derivation.key, arrays)
        except OSError as e:  # an optimisation: a read-only store recomputes next time
            logger.warning("could not save derived data under %s: %s", self.directory, e)
        else:
            for old in self.directory.iterdir():  # older versions of this derivation
                if old.name.startswith(f"{derivation.name}-v") and old.name != derivation.key:
                    shutil.rmtree(old, ignore_errors=True)


def _write_arrays(final: Path, arrays: Arrays) -> None:
    """Write ``arrays`` as ``final/{0..n-1}.npy`` + ``final/count``, atomically (a temporary
    folder renamed into place; a concurrent writer of the same data wins harmlessly)."""
    if (final / "count").is_file():
        return
    private_dir(final.parent)
    tmp = Path(tempfile.mkdtemp(prefix=".writing-", dir=final.parent))
    try:
        for i, a in enumerate(arrays):
            if a.dtype.hasobject:
                raise TypeError(f"derived array {i} of {final.name} holds objects")
            np.save(tmp / f"{i}.npy", np.ascontiguousarray(a), allow_pickle=False)
        (tmp / "count").write_text(str(len(arrays)), encoding="utf-8")
        private_tree(tmp)  # owner-only, as the database: whatever the umask
        os.replace(tmp, final)
    except OSError:
        if not (final / "count").is_file():
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
