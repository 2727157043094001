from __future__ import annotations

import numpy as np

from toolroute.catalog.models import Tool
from toolroute.route.expand import expand, provider_graph


def _tool(server: str, name: str, description: str, required: list[str]) -> Tool:
    props = {r: {"type": "string"} for r in required}
    return Tool(
        server=server,
        name=name,
        description=description,
        input_schema={"type": "object", "properties": props, "required": required},
    )


TOOLS = (
    _tool("geo", "geocode_address", "Address to latitude and longitude", ["address"]),
    _tool("geo", "find_parking", "Parking near a point", ["latitude", "longitude"]),
    _tool("doc", "create_document", "Create a new Word document", ["filename"]),
    _tool("doc", "add_paragraph", "Add a paragraph to a Word document", ["filename", "text"]),
    _tool("other", "get_latitude_fact", "Trivia about latitude", []),
)


def _edges() -> set[tuple[str, str]]:
    prov, served = provider_graph(TOOLS)
    return {(TOOLS[a].name, TOOLS[b].name) for a, b in zip(prov, served, strict=True)}


def test_a_tool_that_mentions_a_required_parameter_provides_it() -> None:
    assert ("geocode_address", "find_parking") in _edges()


def test_a_creator_provides_the_tools_that_work_on_what_it_makes() -> None:
    assert ("create_document", "add_paragraph") in _edges()


def test_providers_come_from_the_same_server_only() -> None:
    assert not any(a == "get_latitude_fact" for a, _ in _edges())


def test_expand_lifts_providers_of_top_tools_below_them() -> None:
    scores = np.array([0.1, 0.8, 0.2, 0.3, 0.5], dtype=np.float32)
    out = expand(scores, provider_graph(TOOLS), pool=1, weight=0.9)
    assert out[0] == np.float32(0.9) * np.float32(0.8)  # geocode pulled up by find_parking
    assert out[1] == scores[1] and out[2] == scores[2]  # create_document: add_paragraph not top
    assert out[0] < out[1]


def test_expand_with_an_empty_pool_changes_nothing() -> None:
    scores = np.array([0.1, 0.8, 0.2, 0.3, 0.5], dtype=np.float32)
    assert np.array_equal(expand(scores, provider_graph(TOOLS), pool=0, weight=0.9), scores)
