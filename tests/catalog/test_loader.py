from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import SMALL_CATALOG
from toolroute.catalog import catalog_from_dict, demo_catalog, load_catalog, load_queries, tool_hash
from toolroute.catalog.models import Tool
from toolroute.errors import CatalogError


def test_catalog_loads_servers_and_tools_in_order(catalog_file: Path) -> None:
    cat = load_catalog(catalog_file)
    assert [s.id for s in cat.servers] == ["time", "fs", "weather"]
    assert cat.tool_count == 7
    assert next(cat.tools()).key == ("time", "get_current_time")


def test_missing_file_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="nope.json: no such file"):
        load_catalog(tmp_path / "nope.json")


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    p = tmp_path / "bad.json"
    p.write_text('{"servers": [\n  {"id": "a",,}\n]}')
    with pytest.raises(CatalogError, match=r"bad.json: invalid JSON at line 2 column"):
        load_catalog(p)


def test_schema_error_gives_the_json_path(tmp_path: Path) -> None:
    data = json.loads(json.dumps(SMALL_CATALOG))
    data["servers"][1]["tools"][2]["name"] = 42
    p = tmp_path / "c.json"
    p.write_text(json.dumps(data))
    with pytest.raises(CatalogError, match=r"\$\.servers\[1\]\.tools\[2\]\.name"):
        load_catalog(p)


def test_duplicate_tool_names_are_rejected() -> None:
    data = json.loads(json.dumps(SMALL_CATALOG))
    data["servers"][0]["tools"].append(data["servers"][0]["tools"][0])
    with pytest.raises(CatalogError, match="duplicate tool 'get_current_time'"):
        catalog_from_dict(data)


def test_optional_economics_metadata_is_kept() -> None:
    data = json.loads(json.dumps(SMALL_CATALOG))
    data["servers"][0]["ask_cost"] = 0.01
    data["servers"][0]["tools"][0]["price"] = 0.002
    cat = catalog_from_dict(data)
    assert cat.servers[0].ask_cost == 0.01
    assert cat.servers[0].tools[0].price == 0.002


def test_negative_price_is_an_error() -> None:
    data = json.loads(json.dumps(SMALL_CATALOG))
    data["servers"][0]["tools"][0]["price"] = -1
    with pytest.raises(CatalogError, match=r"tools\[0\]\.price"):
        catalog_from_dict(data)


def test_tool_hash_covers_name_description_and_schema() -> None:
    base = tool_hash("t", "d", {"type": "object"})
    assert base == tool_hash("t", "d", {"type": "object"})
    assert base != tool_hash("t", "d2", {"type": "object"})
    assert base != tool_hash("t2", "d", {"type": "object"})
    assert base != tool_hash("t", "d", {"type": "object", "properties": {"x": {}}})
    # key order in the schema does not matter
    a = tool_hash("t", "d", {"a": 1, "b": 2})
    assert a == tool_hash("t", "d", {"b": 2, "a": 1})


def test_queries_flat_relevant_become_singleton_groups(
    catalog_file: Path, queries_file: Path
) -> None:
    qs = load_queries(queries_file, load_catalog(catalog_file))
    assert qs[0].groups == (frozenset({("time", "get_current_time")}),)
    assert qs[0].complexity == "simple"
    assert len(qs[1].groups) == 2 and qs[1].complexity == "complex"


def test_queries_with_unknown_tool_are_rejected(catalog_file: Path, tmp_path: Path) -> None:
    p = tmp_path / "q.jsonl"
    p.write_text(json.dumps({"id": 1, "query": "x", "relevant": [{"server": "a", "tool": "b"}]}))
    with pytest.raises(CatalogError, match=r"q.jsonl:1: .* a/b is not in the catalog"):
        load_queries(p, load_catalog(catalog_file))


def test_queries_bad_line_names_the_line(tmp_path: Path) -> None:
    p = tmp_path / "q.jsonl"
    p.write_text('{"id": 1, "query": "ok"}\n{"id": 2\n')
    with pytest.raises(CatalogError, match=r"q.jsonl:2: invalid JSON"):
        load_queries(p)


def test_a_tool_keeps_its_schema_as_compact_text_and_hands_out_copies(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"b": {"type": "string"}, "a": {}}}
    path = tmp_path / "c.json"
    path.write_text(
        json.dumps({"servers": [{"id": "s", "tools": [{"name": "t", "input_schema": schema}]}]})
    )
    (tool,) = load_catalog(path).tools()
    assert tool.schema_json == '{"type":"object","properties":{"b":{"type":"string"},"a":{}}}'
    assert tool.input_schema == schema and list(tool.input_schema["properties"]) == ["b", "a"]
    tool.input_schema["properties"].clear()  # a copy: the catalog is unchanged
    assert tool.input_schema == schema
    assert tool.hash == Tool("s", "t", "", schema).hash == tool_hash("t", "", schema)


def test_a_schema_that_is_not_an_object_is_named_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(
        json.dumps({"servers": [{"id": "s", "tools": [{"name": "t", "input_schema": "x"}]}]})
    )
    with pytest.raises(CatalogError) as e:
        load_catalog(path)
    assert str(e.value) == (
        f"{path}: $.servers[0].tools[0].input_schema: expected a JSON object, got a string"
    )


def test_a_copied_tool_keeps_its_schema() -> None:
    tool = Tool("s", "t", "d", {"type": "object", "properties": {"x": {}}}, price=0.1)
    copy = replace(tool, server="mirror")
    assert copy.input_schema == tool.input_schema and copy.price == 0.1
    assert copy.hash == tool.hash


def test_a_toolbox_is_read_and_checked_against_the_catalog_and_the_relevant_tools(
    tmp_path: Path,
) -> None:
    cat = demo_catalog()
    p = tmp_path / "q.jsonl"

    def rows(*r: dict) -> Path:
        p.write_text(
            "".join(json.dumps({"id": i, "query": "q", **x}) + "\n" for i, x in enumerate(r))
        )
        return p

    time_ = {"server": "time", "tool": "get_current_time"}
    git = {"server": "git", "tool": "git_log"}
    (q,) = load_queries(rows({"relevant": [time_], "toolbox": [time_, git]}), cat)
    assert q.toolbox == frozenset({("time", "get_current_time"), ("git", "git_log")})
    (q,) = load_queries(rows({"relevant": [time_]}), cat)
    assert q.toolbox is None
    with pytest.raises(
        CatalogError, match=r"\$.relevant: time/get_current_time is not in the toolbox"
    ):
        load_queries(rows({"relevant": [time_], "toolbox": [git]}), cat)
    with pytest.raises(CatalogError, match=r"\$.toolbox: git/nope is not in the catalog"):
        load_queries(rows({"relevant": [], "toolbox": [{"server": "git", "tool": "nope"}]}), cat)
    with pytest.raises(CatalogError, match="toolbox: empty"):
        load_queries(rows({"relevant": [], "toolbox": []}), cat)
