from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.conftest import REPO, SMALL_CATALOG, HashingEmbedder
from toolroute import cli


@pytest.fixture(autouse=True)
def fast_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    """CLI unit tests use the hashing embedder; the real model runs in test_cli_real.py."""
    import toolroute.router

    monkeypatch.setattr(toolroute.router, "OnnxEmbedder", lambda: HashingEmbedder())


def _run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    res = CliRunner().invoke(cli.main, list(args), input=stdin)
    return res.exit_code, res.stdout, res.stderr


def _measure(
    command: str, store: Path, catalog: Path, queries: Path, *args: str
) -> tuple[int, str, str]:
    """``toolroute COMMAND`` (bench, simulate) over ``catalog`` and ``queries`` with its store in
    ``store``."""
    return _run(
        command, "--catalog", str(catalog), "--queries", str(queries), "--store", str(store), *args
    )


def _simulate(store: Path, catalog: Path, queries: Path, *args: str) -> tuple[int, str, str]:
    return _measure("simulate", store, catalog, queries, *args)


def _simulate_json(store: Path, catalog: Path, queries: Path, *args: str) -> dict[str, Any]:
    """``simulate --json``'s summary, checked for its stable shape: per strategy, every summary
    metric as mean and 95 % half-width."""
    code, out, err = _simulate(store, catalog, queries, *args, "--json")
    assert code == 0, err
    res: dict[str, Any] = json.loads(out)
    for metric in ("success_rate", "cost_usd", "invalid_calls", "latency_s", "tokens"):
        assert all(set(r[metric]) == {"mean", "ci95"} for r in res.values()), metric
    return res


def _long_names_catalog(tmp_path: Path) -> Path:
    """A catalog whose names are long and whose descriptions carry raw newlines."""
    doc = "Convert a Word document to PDF.\n\nArgs:\n    path: the .docx file\n" * 3
    servers = [
        {
            "id": f"word-document-server-{n}",
            "name": "Word documents",
            "tools": [
                {"name": f"convert_document_to_portable_document_format_{n}", "description": doc},
                {"name": f"send_email_with_attachment_{n}", "description": "Send an email."},
            ],
        }
        for n in range(3)
    ]
    p = tmp_path / "long.json"
    p.write_text(json.dumps({"servers": servers}), encoding="utf-8")
    return p


def test_index_json_reports_the_counts(tmp_path: Path, catalog_file: Path) -> None:
    code, out, _ = _run("index", "--catalog", str(catalog_file), "--store", str(tmp_path), "--json")
    assert code == 0
    assert json.loads(out) == {
        "added": 7,
        "updated": 0,
        "removed": 0,
        "unchanged": 0,
        "embedded": json.loads(out)["embedded"],
    }
    code, out, _ = _run("index", "--catalog", str(catalog_file), "--store", str(tmp_path), "--json")
    assert json.loads(out)["embedded"] == 0 and json.loads(out)["unchanged"] == 7


def test_route_json_is_a_ranked_list(tmp_path: Path, catalog_file: Path) -> None:
    code, out, _ = _run(
        "route",
        "weather forecast for Rome",
        "--catalog",
        str(catalog_file),
        "--store",
        str(tmp_path),
        "-k",
        "2",
        "--json",
    )
    assert code == 0
    rows = json.loads(out)
    assert len(rows) == 2 and set(rows[0]) == {"server", "tool", "score"}
    assert rows[0]["score"] >= rows[1]["score"]


def test_bench_json_has_the_stable_keys(
    tmp_path: Path, catalog_file: Path, queries_file: Path
) -> None:
    args = ["-s", "bm25", "-s", "default", "--json", "--out", str(tmp_path / "out")]
    code, out, _ = _measure("bench", tmp_path, catalog_file, queries_file, *args)
    assert code == 0
    res = json.loads(out)
    assert list(res) == ["bm25", "default"]
    keys = {
        "recall@1",
        "recall@3",
        "recall@5",
        "recall@10",
        "ndcg@5",
        "ndcg@10",
        "mrr",
        "full@10",
        "latency_ms",
        "queries",
    }
    assert keys <= set(res["default"])
    assert set(res["default"]["latency_ms"]) == {"p50", "p95"}
    assert res["default"]["queries"] == 3
    for f in ("bench.json", "bench.md", "bench.png", "bench.html"):
        assert (tmp_path / "out" / f).stat().st_size > 0


def test_bench_without_strategy_runs_default_only(
    tmp_path: Path, catalog_file: Path, queries_file: Path
) -> None:
    code, out, _ = _measure("bench", tmp_path, catalog_file, queries_file, "--json")
    assert code == 0 and list(json.loads(out)) == ["default"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["route", "x", "--catalog", "missing.json"], "missing.json: no such file"),
        (["route", "x", "--strategy", "nope"], "unknown strategy 'nope'"),
        (["index", "--documents", "nope"], "unknown document preset 'nope'"),
    ],
)
def test_user_mistakes_exit_2_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    code, out, err = _run(*args, "--store", str(tmp_path))
    assert code == 2
    assert err.strip().startswith("error: ") and message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ([], 'bad.json: $: expected a JSON object {"servers": [...]}, got a list'),
        ({"servers": []}, "bad.json: $.servers: the catalog lists no servers"),
        ({"servers": [{"id": "a", "tools": []}]}, "bad.json: $.servers[*].tools: the catalog"),
        ({"servers": [{"id": "a", "tools": ["x"]}]}, "tools[0]: expected a JSON object, got a"),
    ],
)
def test_catalog_of_the_wrong_shape_names_the_file_not_an_internal_class(
    tmp_path: Path, content: object, message: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(content))
    code, _, err = _run("route", "x", "--catalog", str(bad), "--store", str(tmp_path))
    assert code == 2 and message in err
    assert "_CatalogIn" not in err and "_ToolIn" not in err and len(err.strip().splitlines()) == 1


def test_route_reads_a_one_megabyte_request_from_stdin_or_a_file(
    tmp_path: Path, catalog_file: Path
) -> None:
    request = "what is the weather forecast for Rome? " + "context line. " * 75_000
    assert len(request) > 1_000_000
    (tmp_path / "q.txt").write_text(request, encoding="utf-8")
    base = ("--catalog", str(catalog_file), "--store", str(tmp_path), "--json", "-k", "1")
    by_stdin = _run("route", "-", *base, stdin=request)
    by_file = _run("route", "--query-file", str(tmp_path / "q.txt"), *base)
    assert by_stdin[0] == 0 and by_file[0] == 0, by_stdin[2] + by_file[2]
    assert json.loads(by_stdin[1]) == json.loads(by_file[1])
    assert json.loads(by_file[1])[0]["server"] in {"weather", "time", "fs"}


def test_route_without_a_request_or_with_two_says_how_to_give_one(
    tmp_path: Path, catalog_file: Path
) -> None:
    code, _, err = _run("route", "--catalog", str(catalog_file), "--store", str(tmp_path))
    assert code == 2 and "give QUERY, `-` to read it from stdin, or --query-file" in err
    (tmp_path / "q.txt").write_text("x")
    code, _, err = _run("route", "x", "--query-file", str(tmp_path / "q.txt"))
    assert code == 2 and "not both" in err


def test_route_help_documents_stdin_and_query_file() -> None:
    code, out, _ = _run("route", "--help")
    assert code == 0 and "--query-file" in out and "stdin" in out


VARIANTS = REPO / "benchmarks" / "variants.py"


@pytest.mark.parametrize(
    "strategy", ["default", "bm25", "hybrid", "cascade", "ehrr", "pa-rag", "baseline-dense"]
)
def test_explain_is_one_block_per_candidate_within_80_columns(
    tmp_path: Path, strategy: str
) -> None:
    catalog = _long_names_catalog(tmp_path)
    code, out, err = _run(
        "route",
        "convert my report to pdf, then email it to the team",
        "--catalog",
        str(catalog),
        "--store",
        str(tmp_path),
        "-s",
        strategy,
        "-k",
        "3",
        "--explain",
        *(
            ["--plugin", str(REPO / "benchmarks" / "variants.py")]
            if strategy.startswith("baseline-")
            else []
        ),
    )
    assert code == 0, err
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert sum(line[:2] in ("1.", "2.", "3.") for line in lines) == 3
    assert "Args:" in out and not any(line.strip() == "Args:" for line in lines)
    if strategy.startswith("ehrr"):
        for figure in ("server  sim", "auction ask", "posted", "accepted", "utility"):
            assert figure in out
    else:
        assert "BM25" in out
        if strategy != "bm25":
            assert "dense" in out and "server" in out


def test_explain_json_carries_the_stage_scores(tmp_path: Path, catalog_file: Path) -> None:
    code, out, _ = _run(
        "route",
        "read the contents of a file, then show the weather forecast for Rome",
        "--catalog",
        str(catalog_file),
        "--store",
        str(tmp_path),
        "--explain",
        "--json",
    )
    assert code == 0
    first = json.loads(out)[0]["explain"]
    assert {"dense", "bm25", "bm25_share", "server_score", "best_intent"} <= set(first)


def test_tables_never_fold_names_when_output_is_not_a_terminal(tmp_path: Path) -> None:
    catalog = _long_names_catalog(tmp_path)
    code, out, _ = _run(
        "route", "convert to pdf", "--catalog", str(catalog), "--store", str(tmp_path)
    )
    assert code == 0
    assert "convert_document_to_portable_document_format_" in out
    assert "word-document-server-" in out and "│" not in out
    code, out, _ = _run("demo", "--store", str(tmp_path))
    assert code == 0 and "│" not in out and "get_current_time" in out


def test_malformed_catalog_exits_2_naming_the_json_path(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"servers": [{"id": "a", "tools": [{"description": "x"}]}]}))
    code, _, err = _run("index", "--catalog", str(bad), "--store", str(tmp_path))
    assert code == 2
    assert "bad.json: $.servers[0].tools[0].name: Field required" in err


def test_readme_commands_exist_in_help() -> None:
    """Every `toolroute <command>` the README mentions is a real command with --help."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    used = set(re.findall(r"(?:`|bin/)toolroute ([a-z-]+)", readme))
    assert {"index", "route", "bench", "demo", "simulate"} <= used
    for command in used:
        code, out, _ = _run(command, "--help")
        assert code == 0, command
        assert "Usage:" in out


def test_simulate_json_has_the_stable_shape(
    tmp_path: Path, catalog_file: Path, queries_file: Path
) -> None:
    args = ["-s", "cascade", "-s", "ehrr", "--seeds", "3", "--providers", "1", "--planner", "whole"]
    out = _simulate_json(
        tmp_path, catalog_file, queries_file, *args, "--out", str(tmp_path / "sim")
    )
    assert list(out) == ["cascade", "ehrr"]
    for f in ("simulate.json", "simulate.md", "simulate.png", "paired.md"):
        assert (tmp_path / "sim" / f).stat().st_size > 0
    assert "| ehrr |" in (tmp_path / "sim" / "paired.md").read_text()


def test_simulate_market_json_keeps_the_shape_and_adds_the_oracle_router(
    tmp_path: Path, catalog_file: Path, queries_file: Path
) -> None:
    args = "-s cascade -s ehrr --seeds 2 --providers 2 --planner clauses --attempts 1"
    out = _simulate_json(
        tmp_path, catalog_file, queries_file, *args.split(), "--prices", "positive"
    )
    assert list(out) == ["cascade", "ehrr", "oracle-router"]
    assert set(out["ehrr"]["regret_success"]) == {"mean", "ci95"}


def test_simulate_rejects_a_bad_planner_in_one_line(
    tmp_path: Path, catalog_file: Path, queries_file: Path
) -> None:
    code, _, err = _simulate(tmp_path, catalog_file, queries_file, "--planner", "psychic")
    assert code == 2 and "psychic" in err and "Traceback" not in err


@pytest.fixture
def user_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The per-user data dir (where each config's gateway keeps its store) inside tmp_path."""
    monkeypatch.delenv("TOOLROUTE_STORE", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    return tmp_path / "data"


def _servers_file(tmp_path: Path, servers: dict[str, object], *, key: str = "mcpServers") -> Path:
    p = tmp_path / "servers.json"
    p.write_text(json.dumps({key: servers}), encoding="utf-8")
    return p


def _as_if_synced(config: Path) -> None:
    """Store SMALL_CATALOG as `toolroute sync --config CONFIG` would (same store, indexed)."""
    from toolroute.catalog.loader import catalog_from_dict
    from toolroute.config import load_config
    from toolroute.gateway.ops.app import store_dir_of
    from toolroute.router import Router

    target = store_dir_of(load_config(config))
    with Router(catalog_from_dict(SMALL_CATALOG), store=target, embedder=HashingEmbedder()) as r:
        r.index()


def test_route_over_a_config_that_was_never_synced_says_to_sync_first(
    tmp_path: Path, user_dirs: Path
) -> None:
    config = _servers_file(tmp_path, {"time": {"command": "uvx", "args": ["mcp-server-time"]}})
    code, out, err = _run("route", "what time is it in Tokyo", "--config", str(config))
    assert code == 2 and out == ""
    assert err.strip() == (
        f"error: no tools synced for {config} yet: run `toolroute sync --config {config}` first"
    )


def test_route_and_bench_with_config_use_the_synced_tools_not_the_demo_catalog(
    tmp_path: Path, user_dirs: Path, queries_file: Path
) -> None:
    config = _servers_file(tmp_path, {"time": {"command": "uvx", "args": ["mcp-server-time"]}})
    _as_if_synced(config)
    args = ("what time is it in Tokyo", "--config", str(config), "-k", "20", "--json")
    code, out, err = _run("route", *args)
    assert code == 0, err
    rows = json.loads(out)
    assert rows[0] == {**rows[0], "server": "time", "tool": "get_current_time"}
    # all 7 synced tools and nothing else (the demo catalog has 77, none on a server "fs")
    synced = {(s["id"], t["name"]) for s in SMALL_CATALOG["servers"] for t in s["tools"]}
    assert {(r["server"], r["tool"]) for r in rows} == synced and len(rows) == len(synced)
    code, out, err = _run(
        "bench", "--config", str(config), "--queries", str(queries_file), "-s", "bm25", "--json"
    )
    assert code == 0, err
    assert json.loads(out)["bm25"]["queries"] == 3  # the queries file's, over the synced tools
    code, _, err = _run("route", "x", "--config", str(config), "--catalog", str(config))
    assert code == 2 and "either --catalog or --config" in err


def test_status_reads_without_the_token_variables_of_auth(
    tmp_path: Path, user_dirs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolroute.config import load_config
    from toolroute.gateway.ops.app import store_dir_of
    from toolroute.gateway.ops.status import write_status

    monkeypatch.delenv("TOOLROUTE_TOKEN", raising=False)
    config = _servers_file(tmp_path, {"time": {"command": "t"}})
    (tmp_path / "toolroute.toml").write_text('[auth]\nbearer_token_env = "TOOLROUTE_TOKEN"\n')
    monkeypatch.setenv("TOOLROUTE_TOKEN", "x" * 20)
    store = Path(store_dir_of(load_config(config)))
    monkeypatch.delenv("TOOLROUTE_TOKEN")
    state = {"time": {"status": "up", "tools": 2, "restarts": 0}}
    write_status(store, {"pid": 1, "running": False, "servers": state, "quarantined": {}})
    code, out, err = _run("status", "--config", str(config))
    assert code == 0, err
    assert "not running (last state)" in out and "time" in out
    code, _, err = _run("serve", "--config", str(config), "--transport", "http")
    assert code == 2 and "TOOLROUTE_TOKEN is not set" in err  # serving still needs it


def test_sync_with_a_server_down_exits_1_naming_it_unless_allow_partial(
    tmp_path: Path, user_dirs: Path
) -> None:
    config = _servers_file(tmp_path, {"gone": {"command": str(tmp_path / "no-such-server")}})
    code, out, err = _run("sync", "--config", str(config))
    assert code == 1
    assert "gone" in out and "error" in out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: 1 of 1 servers down: gone (")
    assert "no-such-server" in lines[0] and "--allow-partial" in lines[0]
    code, out, err = _run("sync", "--config", str(config), "--allow-partial", "--json")
    assert code == 0, err
    assert json.loads(out)["servers"]["gone"]["status"] == "error"


def test_approve_of_a_tool_not_in_quarantine_exits_2_suggesting_close_names(
    tmp_path: Path, user_dirs: Path
) -> None:
    config = _servers_file(tmp_path, {"time": {"command": "t"}})
    _as_if_synced(config)
    code, out, err = _run("approve", "--config", str(config), "time__get_curent_time")
    assert code == 2 and out == ""
    assert err.strip().startswith(
        "error: time__get_curent_time is not in quarantine (no tool is); "
        "did you mean time__get_current_time"
    )
    assert len(err.strip().splitlines()) == 1
    code, _, err = _run("approve", "--config", str(config), "time__get_current_time")
    assert code == 2 and "it is served as it is" in err


def test_bench_given_a_catalog_as_queries_says_json_lines_were_expected(
    tmp_path: Path, catalog_file: Path
) -> None:
    pretty = tmp_path / "pretty.json"
    pretty.write_text(
        catalog_file.read_text() and json.dumps(json.loads(catalog_file.read_text()), indent=2)
    )
    for queries in (catalog_file, pretty):
        code, _, err = _run(
            "bench",
            "--catalog",
            str(catalog_file),
            "--queries",
            str(queries),
            "--store",
            str(tmp_path),
        )
        assert code == 2
        assert err.strip().startswith(f"error: {queries}: this is a catalog, not queries; ")
        assert "JSON lines, one query object per line" in err


def test_sync_and_route_show_a_progress_bar_on_a_terminal_while_embedding(
    tmp_path: Path, catalog_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from rich.console import Console

    import toolroute.cli.render

    screen = io.StringIO()
    monkeypatch.setattr(
        toolroute.cli.render, "stderr", Console(file=screen, force_terminal=True, width=100)
    )
    code, _, err = _run(
        "route", "weather", "--catalog", str(catalog_file), "--store", str(tmp_path)
    )
    assert code == 0, err
    assert "embedding" in screen.getvalue()


def test_local_llm_hands_its_endpoint_to_the_router_without_touching_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import os

    import toolroute.cli.common
    from toolroute.cli.common import _local_llm

    class FakeServer:
        base_url, model = "http://127.0.0.1:9/v1", "qwen"

        def __enter__(self) -> FakeServer:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

    monkeypatch.setattr(toolroute.cli.common, "LocalLLMServer", FakeServer)
    monkeypatch.delenv("TOOLROUTE_LLM_BASE_URL", raising=False)
    before = dict(os.environ)
    with _local_llm(True, show=False) as config:
        assert config is not None and config.base_url == FakeServer.base_url
        assert config.model == "qwen" and config.timeout_s == 90.0
        assert dict(os.environ) == before
    with _local_llm(False) as config:
        assert config is None  # nothing configured: offline fallbacks


@pytest.mark.integration  # a fresh Python process
def test_the_command_and_a_gateway_without_code_mode_import_no_tables_and_no_sandbox(
    tmp_path: Path,
) -> None:
    """``toolroute serve`` prints no table and, with code mode off, runs no script: a fresh
    process that loads the command and builds a pass-through gateway imports neither rich nor
    the sandbox (what a pass-through gateway holds in memory)."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "import toolroute.cli.serve\n"
        "from toolroute.catalog.models import Catalog\n"
        "from toolroute.config import GatewayConfig\n"
        "from toolroute.downstream.servers import Downstreams\n"
        "from toolroute.gateway.ops.app import build_router, make_gateway\n"
        "from toolroute.settings import ToolrouteSettings\n"
        "settings = ToolrouteSettings(store=sys.argv[1], expose='all')\n"
        "config = GatewayConfig(servers={}, settings=settings)\n"
        "router = build_router(config, Catalog(servers=()))\n"
        "make_gateway(config, router, Downstreams({}))\n"
        "router.close()\n"
        "print(sorted(m for m in ('rich', 'pydantic_monty') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "store")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stderr
