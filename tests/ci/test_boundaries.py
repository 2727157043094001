"""`.ci/boundaries.py`: the CI check that the layered package's parts depend one way, that `_`
modules stay private to their package and that function-level imports do not grow, each with
today's exceptions in a list that can only shrink; run on synthetic packages in tmp_path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

SCRIPT = REPO / ".ci" / "boundaries.py"


def _package(root: Path, files: dict[str, str]) -> Path:
    pkg = root / "pkg"
    for name, source in {"__init__.py": "", "layers/__init__.py": "", **files}.items():
        path = pkg / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    return pkg


def _allowed(
    root: Path, two_way: str = "[]", private: str = "[]", function_imports: int = 0
) -> Path:
    path = root / "allowed.toml"
    path.write_text(
        f'layered = "pkg.layers"\ntwo_way = {two_way}\nprivate = {private}\n'
        f'optional = ["json5", "pkg.pg"]\nfunction_imports = {function_imports}\n',
        encoding="utf-8",
    )
    return path


def _check(pkg: Path, allowed: Path, *args: str) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(pkg), "--allowed", str(allowed), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


TWO_WAY = {
    "layers/shell/__init__.py": "",
    "layers/shell/server.py": "from pkg.layers.calls import step\n",
    "layers/calls/__init__.py": "",
    "layers/calls/step.py": (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pkg.layers.shell.server import Server\n"
    ),
    "layers/core.py": "from pkg.layers.calls import step\n",  # one way: fine
}


def test_parts_that_import_each_other_fail_unless_listed(tmp_path: Path) -> None:
    pkg = _package(tmp_path, TWO_WAY)
    code, out = _check(pkg, _allowed(tmp_path))
    assert code == 1, out
    assert "calls <-> shell  NEW" in out and "calls and shell now import each other" in out
    assert "core" not in out.split("two-way")[1].split("imports of")[0]
    code, out = _check(pkg, _allowed(tmp_path, two_way='[["shell", "calls"]]'))
    assert code == 0, out


def test_a_listed_exception_that_is_gone_fails_so_the_list_shrinks(tmp_path: Path) -> None:
    pkg = _package(tmp_path, {"layers/core.py": "import os\n"})
    code, out = _check(pkg, _allowed(tmp_path, two_way='[["calls", "shell"]]'))
    assert code == 1
    assert "calls <-> shell is gone: strike it" in out
    assert _check(pkg, _allowed(tmp_path, two_way='[["calls", "shell"]]'), "--report-only")[0] == 0


def test_a_private_module_imported_from_another_package_fails_unless_listed(
    tmp_path: Path,
) -> None:
    pkg = _package(
        tmp_path,
        {
            "layers/calls/__init__.py": "",
            "layers/calls/_limits.py": "",
            "layers/calls/step.py": "from . import _limits\n",  # its own package: fine
            "layers/calls/deep/__init__.py": "",
            "layers/calls/deep/more.py": "from pkg.layers.calls import _limits\n",  # inside: fine
            "layers/core.py": "from .calls._limits import thing\n",
        },
    )
    code, out = _check(pkg, _allowed(tmp_path))
    assert code == 1
    assert "pkg.layers.core -> pkg.layers.calls._limits (line 1)  NEW" in out
    assert "deep" not in out and "step" not in out
    listed = '[["pkg.layers.core", "pkg.layers.calls._limits"]]'
    assert _check(pkg, _allowed(tmp_path, private=listed))[0] == 0


def test_function_level_imports_are_held_at_the_ceiling_optional_ones_aside(
    tmp_path: Path,
) -> None:
    pkg = _package(
        tmp_path,
        {
            "a.py": "def f():\n    import os\n    from json import dumps\n    return os, dumps\n",
            "b.py": "def g():\n    import json5\n    return json5\n",  # optional: not counted
            # a module of the package that wraps an optional dependency: not counted either,
            # but a module whose name only begins like it is
            "c.py": "def h():\n    from pkg.pg import S\n    from pkg.pgx import T\n    return S\n",
        },
    )
    code, out = _check(pkg, _allowed(tmp_path, function_imports=3))
    assert code == 0, out
    assert "function-level imports (PLC0415, optional dependencies aside): 3" in out
    code, out = _check(pkg, _allowed(tmp_path, function_imports=2))
    assert code == 1 and "over the ceiling" in out and "a.py:2 os" in out
    assert "c.py:3 pkg.pgx" in out and "c.py:2" not in out
    code, out = _check(pkg, _allowed(tmp_path, function_imports=4))
    assert code == 1 and "fell to 3: lower the ceiling to it" in out
