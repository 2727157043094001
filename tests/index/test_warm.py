"""Embedding ahead of an index (index/warm.py): a big catalog cut into slices."""

from __future__ import annotations

from toolroute.catalog.models import Catalog, Server, Tool
from toolroute.index.build import index_texts
from toolroute.index.document import TemplateQuestions, build_docs
from toolroute.index.tdwa import PRESETS
from toolroute.index.warm import slices


def _texts(catalog: Catalog) -> set[str]:
    docs = PRESETS["toolroute"]
    return set(index_texts(catalog, docs, build_docs(catalog.servers, TemplateQuestions()))[0])


def test_the_slices_of_a_catalog_have_the_whole_catalogs_texts() -> None:
    many = tuple(Tool("many", f"tool_{i:04d}", f"Archive batch {i}.") for i in range(250))
    catalog = Catalog(
        (
            Server("time", "Time", "Tells the time.", (Tool("time", "now", "The time."),)),
            Server("many", "Many", "", many),  # its profile is its tools' names: all of them
        )
    )
    parts = list(slices(catalog, 100))
    assert [p.tool_count for p in parts] == [100, 100, 51]
    assert set().union(*(_texts(p) for p in parts)) == _texts(catalog)
