"""Griffe extension: render Sphinx cross-reference roles in docstrings as inline code.

The docstrings use Sphinx roles (``:meth:`record```, ``:class:`~toolroute.Router```) and the
sphinx docstring parser reads their ``:param:`` fields, but mkdocstrings renders an inline role
as raw text. This rewrites each role to the Markdown code span Sphinx would show: the target as
written, or its last part when it starts with ``~``. Field lists are left alone (a field is
``:name arg:`` with no backtick after the colon).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(
    r":(?:py:)?(?:meth|class|func|data|attr|mod|exc|obj|const|ref|term):`(?P<tilde>~?)(?P<target>[^`]+)`"
)


def _code(m: re.Match[str]) -> str:
    target = m.group("target")
    if m.group("tilde"):
        target = target.rsplit(".", 1)[-1]
    return f"`{target}`"


def plain_roles(text: str) -> str:
    """``text`` with every inline Sphinx role replaced by a code span of its target."""
    return ROLE.sub(_code, text)


class SphinxRoles(griffe.Extension):
    """Rewrites roles in every docstring griffe loads, before the handler parses it."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain_roles(obj.docstring.value)
