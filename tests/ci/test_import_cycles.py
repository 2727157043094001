"""`.ci/import_cycles.py`: the CI check that the package's import graph has no cycle, run on
synthetic packages written to tmp_path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

SCRIPT = REPO / ".ci" / "import_cycles.py"


def _package(root: Path, files: dict[str, str]) -> Path:
    pkg = root / "pkg"
    for name, source in {"__init__.py": "", **files}.items():
        path = pkg / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    return pkg


def _check(pkg: Path, *args: str) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(pkg), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def test_a_cycle_through_a_relative_and_an_absolute_import_fails_and_is_listed(
    tmp_path: Path,
) -> None:
    pkg = _package(
        tmp_path,
        {
            "a.py": "from pkg.sub import b\n",
            "sub/__init__.py": "",
            "sub/b.py": "from .. import c\n",
            "c.py": "import pkg.a\n",
            "d.py": "from pkg import a\n",  # into the cycle, not part of it
        },
    )
    code, out = _check(pkg)
    assert code == 1, out
    assert "cycle (module-level): pkg.a -> pkg.sub.b -> pkg.c -> pkg.a" in out
    assert "pkg.d" not in out


def test_an_acyclic_package_passes(tmp_path: Path) -> None:
    pkg = _package(
        tmp_path,
        {
            "a.py": "from pkg import b\n",
            "b.py": (
                "from typing import TYPE_CHECKING\n"
                "import os\n"
                "if TYPE_CHECKING:\n"
                "    from pkg.c import Thing\n"
            ),
            "c.py": "import os\n",
        },
    )
    code, out = _check(pkg)
    assert (code, out.strip()) == (0, f"no import cycles in {pkg}")


def test_a_cycle_closed_only_by_a_type_checking_import_is_reported_as_type_level(
    tmp_path: Path,
) -> None:
    """Two modules that name each other's types are one concept split in two, even when the
    import never runs."""
    pkg = _package(
        tmp_path,
        {
            "a.py": "from pkg import b\n",
            "b.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import Thing\n"
            ),
        },
    )
    code, out = _check(pkg)
    assert code == 1, out
    assert "cycle (type-level): pkg.a -> pkg.b -> pkg.a" in out
    assert "pkg.b -> pkg.a  (type-level, line 3)" in out


def test_a_cycle_dodged_by_a_function_level_import_is_reported_as_one(tmp_path: Path) -> None:
    pkg = _package(
        tmp_path,
        {
            "config.py": "def load():\n    from pkg.access import Rule\n    return Rule\n",
            "access.py": "class Rule:\n    from pkg import config\n",
        },
    )
    code, out = _check(pkg)
    assert code == 1
    assert "cycle (needs a function-level import): pkg.access -> pkg.config -> pkg.access" in out
    assert "pkg.config -> pkg.access  (function-level, line 2)" in out
    assert "pkg.access -> pkg.config  (module-level, line 2)" in out
    code, report = _check(pkg, "--report-only")
    assert code == 0 and report == out


def test_every_edge_of_a_tangle_is_explained_by_a_listed_cycle(tmp_path: Path) -> None:
    pkg = _package(
        tmp_path,
        {
            "hub.py": "from pkg import x, y\n",
            "x.py": "import pkg.hub\n",
            "y.py": "from pkg.hub import name\n",
        },
    )
    code, out = _check(pkg)
    assert code == 1
    assert "2 import cycle(s)" in out
    assert "pkg.hub -> pkg.x -> pkg.hub" in out and "pkg.hub -> pkg.y -> pkg.hub" in out
