from __future__ import annotations

import random

import numpy as np

from toolroute.catalog.models import Tool
from toolroute.index.document import humanise, tokenise
from toolroute.route import expand as expand_module
from toolroute.route.expand import CREATORS, expand, provider_graph


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


def _pairwise(tools: list[Tool]) -> list[tuple[int, int]]:
    """The two relations as the module docstring states them, over every ordered pair of one
    server's tools (server by server, then served, then provider, in catalog order): what the
    graph must equal, edge for edge and in that order."""

    concept = expand_module._concept
    words = [frozenset(tokenise(f"{t.name} {t.description}")) for t in tools]
    needs = [
        [c for r in t.input_schema["required"] if (c := concept(humanise(r).split()))]
        for t in tools
    ]
    names = [humanise(t.name).split() for t in tools]

    edges = []
    for server in dict.fromkeys(t.server for t in tools):
        rows = [i for i, t in enumerate(tools) if t.server == server]
        for b in rows:
            for a in rows:
                if a == b:
                    continue
                needs_a = frozenset().union(*needs[a])
                producer = any(c <= words[a] and not c <= needs_a for c in needs[b])
                obj = concept(names[a][1:])
                creator = (
                    names[a][0] in CREATORS
                    and bool(obj)
                    and obj <= words[b]
                    and names[b][0] not in CREATORS
                )
                if producer or creator:
                    edges.append((a, b))
    return edges


def test_the_graph_is_every_pair_the_two_relations_name_in_pair_order() -> None:
    rng = random.Random(7)
    verbs = ["create", "open", "get", "add", "find", "list", "load", "delete"]
    nouns = ["document", "page", "station", "date", "latitude", "city", "session", "file"]
    tools = []
    for i in range(300):
        verb, noun, other = rng.choice(verbs), rng.choice(nouns), rng.choice(nouns)
        required = rng.sample([f"{n}_id" for n in nouns] + nouns, rng.randint(0, 2))
        tools.append(
            _tool(
                f"s{i % 3}",
                f"{verb}_{noun}_{i}",
                f"{verb.title()} a {noun} from the {other} it was given",
                required,
            )
        )
    prov, served = provider_graph(tuple(tools))
    edges = list(zip(prov.tolist(), served.tolist(), strict=True))
    want = _pairwise(tools)
    assert len(want) > 100  # both relations, many times over
    assert edges == want
