"""Server inventories: find_tools with a ``server`` and no query (Finder.inventory),
``Router.server_tools`` and ``toolroute route --server``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.conftest import SMALL_CATALOG, HashingEmbedder, tool
from toolroute import cli
from toolroute.catalog import catalog_from_dict
from toolroute.errors import ConfigError
from toolroute.gateway.find import Finder
from toolroute.gateway.shared import Shared
from toolroute.route.preconditions import Preconditions, SessionState
from toolroute.router import Router
from toolroute.settings import ToolrouteSettings

CATALOG: dict[str, Any] = {
    "servers": [
        *SMALL_CATALOG["servers"],
        {
            "id": "git",
            "name": "Git Tools",
            "description": "Version control",
            "tools": [tool(f"git_op_{i:02d}", f"Git operation number {i}") for i in range(7)],
        },
    ]
}


def _payload(result: Any) -> dict[str, Any]:
    assert result.structured_content is not None
    out: dict[str, Any] = result.structured_content
    return out


@pytest.fixture
def router(tmp_path: Path) -> Any:
    with Router(catalog_from_dict(CATALOG), store=tmp_path / "s", embedder=HashingEmbedder()) as r:
        yield r


def test_an_inventory_pages_a_servers_tools_in_catalog_order(router: Router) -> None:
    finder = Finder(Shared(router, settings=ToolrouteSettings(k=5)))
    state = finder.shared.sessions.for_connection(None)
    names, cursor, pages = [], None, 0
    while True:
        page = _payload(finder.inventory("git", 3, state, cursor=cursor))
        assert page["server"] == "git" and page["total"] == 7
        names += [c["name"] for c in page["candidates"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages == 3
    assert names == [f"git__git_op_{i:02d}" for i in range(7)]  # stable, complete, no repeats
    assert _payload(finder.inventory("git", 3, state))["candidates"][0]["input_schema"]
    # listed tools are promoted: the call gate admits them in this session only
    assert finder.shared.admits(state, "git__git_op_06") and not finder.shared.admits(
        SessionState(), "git__git_op_06"
    )


def _git(names: list[str]) -> dict[str, Any]:
    servers = [s for s in CATALOG["servers"] if s["id"] != "git"]
    git = {**CATALOG["servers"][-1], "tools": [tool(n, f"Git operation {n}") for n in names]}
    return {"servers": [*servers, git]}


def test_a_tool_added_in_front_between_pages_repeats_none(router: Router, tmp_path: Path) -> None:
    finder = Finder(Shared(router))
    first = _payload(finder.inventory("git", 3))
    assert [c["tool"] for c in first["candidates"]] == ["git_op_00", "git_op_01", "git_op_02"]
    # the server now lists a new tool in front of the others
    catalog = catalog_from_dict(_git(["git_op_new", *(f"git_op_{i:02d}" for i in range(7))]))
    with Router(catalog, store=tmp_path / "s2", embedder=HashingEmbedder()) as changed:
        finder.shared.replace_router(changed)
        second = _payload(finder.inventory("git", 3, cursor=first["next_cursor"]))
        assert [c["tool"] for c in second["candidates"]] == ["git_op_03", "git_op_04", "git_op_05"]
        third = _payload(finder.inventory("git", 3, cursor=second["next_cursor"]))
        assert [c["tool"] for c in third["candidates"]] == ["git_op_06"]
        assert third["next_cursor"] is None


def test_an_inventory_stays_inside_the_clients_allow_list(router: Router) -> None:
    finder = Finder(Shared(router))
    allowed = {"git__git_op_01", "git__git_op_04", "time__get_current_time"}
    page = _payload(finder.inventory("Git Tools", 10, may_use=allowed.__contains__))
    assert [c["tool"] for c in page["candidates"]] == ["git_op_01", "git_op_04"]
    assert page["total"] == 2 and page["next_cursor"] is None
    # a server none of whose tools the client may use is unknown to it, and never suggested
    result = finder.inventory("weather", 5, may_use=allowed.__contains__)
    assert result.is_error and _payload(result)["error"] == "unknown_server"
    result = finder.inventory("weathr", 5, may_use=allowed.__contains__)
    assert "weather" not in _payload(result)["closest"]
    assert "weather" in _payload(finder.inventory("weathr", 5))["closest"]


def test_bad_inventory_arguments_are_refused_with_what_to_send(router: Router) -> None:
    finder = Finder(Shared(router))
    other = _payload(finder.inventory("git", 2))["next_cursor"]
    for server, k, cursor in [
        ("", 5, None),
        (42, 5, None),
        ("x" * 5000, 5, None),
        ("git", 0, None),
        ("git", 51, None),
        ("git", True, None),
        ("git", 5, "not a cursor"),
        ("git", 5, 7),
        ("fs", 5, other),  # another server's cursor
    ]:
        result = finder.inventory(server, k, cursor=cursor)
        assert result.is_error, (server, k, cursor)
        assert _payload(result)["error"] == "invalid_arguments"


def test_a_gated_tool_is_listed_as_gated_out_and_not_promoted(router: Router) -> None:
    finder = Finder(
        Shared(router, tool_preconditions={"git__git_op_00": Preconditions(milestone="ready")})
    )
    state = SessionState()
    page = _payload(finder.inventory("git", 2, state))
    assert [c["tool"] for c in page["candidates"]] == ["git_op_01"]
    assert page["gated_out"][0]["name"] == "git__git_op_00"
    assert not finder.shared.admits(state, "git__git_op_00")


def test_router_server_tools_by_id_or_name_and_a_clear_error_otherwise(router: Router) -> None:
    assert [t.name for t in router.server_tools("time")] == ["get_current_time", "convert_time"]
    assert router.server_tools("git tools") == router.server_tools("git")
    with pytest.raises(ConfigError, match="did you mean time"):
        router.server_tools("tme")
    with pytest.raises(ConfigError, match="servers: time, fs"):
        router.server_tools("zzzzzzzz")


def test_route_server_lists_the_inventory_and_refuses_a_request_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolroute.router

    monkeypatch.setattr(toolroute.router, "OnnxEmbedder", HashingEmbedder)
    catalog = tmp_path / "c.json"
    catalog.write_text(json.dumps(CATALOG))
    base = ["route", "--catalog", str(catalog), "--store", str(tmp_path / "s")]
    res = CliRunner().invoke(cli.main, [*base, "--server", "git", "--json"])
    assert res.exit_code == 0
    assert [d["tool"] for d in json.loads(res.stdout)] == [f"git_op_{i:02d}" for i in range(7)]
    res = CliRunner().invoke(cli.main, [*base, "--server", "fs"])
    assert res.exit_code == 0 and "fs: 3 tools" in res.stdout and "read_file" in res.stdout
    res = CliRunner().invoke(cli.main, [*base, "--server", "gti"])
    assert res.exit_code == 2 and "no server named 'gti'" in res.stderr
    assert "Traceback" not in res.stderr + res.stdout
    res = CliRunner().invoke(cli.main, [*base, "--server", "git", "list tools"])
    assert res.exit_code == 2 and "without a request" in res.stderr


def test_a_query_that_is_only_a_server_name_lists_that_servers_tools(router: Router) -> None:
    finder = Finder(Shared(router, settings=ToolrouteSettings(k=3)))
    for query in ("git", "Git Tools", "the git server", "git tools?"):
        found = finder.find(query, 3, SessionState())
        assert found["server"] == "git" and found["total"] == 7, query
        assert [c["tool"] for c in found["candidates"]] == ["git_op_00", "git_op_01", "git_op_02"]
    # a server outside the client's allow-list is not listed: the words are routed instead
    found = finder.find("git", 3, SessionState(), may_use=lambda n: n.startswith("time__"))
    assert "server" not in found
    assert all(c["server"] == "time" for c in found["candidates"])
