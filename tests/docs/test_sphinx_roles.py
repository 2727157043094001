"""The docs' griffe extension (docs/sphinx_roles.py) shows Sphinx roles as code on the API page."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from tests.conftest import REPO


def _extension() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sphinx_roles", REPO / "docs" / "sphinx_roles.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_inline_roles_become_code_spans_and_fields_stay() -> None:
    text = (
        "Fed by :meth:`record`; see :class:`~toolroute.router.Router` and :py:func:`a.b`.\n\n"
        ":param query: the need, as :data:`RANK_METRICS` names it\n"
        ":returns: ranked candidates"
    )
    assert _extension().plain_roles(text) == (
        "Fed by `record`; see `Router` and `a.b`.\n\n"
        ":param query: the need, as `RANK_METRICS` names it\n"
        ":returns: ranked candidates"
    )


def test_the_site_loads_the_extension() -> None:
    config = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    assert "- docs/sphinx_roles.py" in config
