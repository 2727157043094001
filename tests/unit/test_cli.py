from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import REPO, HashingEmbedder
from toolroute import cli


@pytest.fixture(autouse=True)
def fast_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    """CLI unit tests use the hashing embedder; the real model runs in tests/integration."""
    import toolroute.embed.onnx

    monkeypatch.setattr(toolroute.embed.onnx, "OnnxEmbedder", lambda: HashingEmbedder())


def _run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(cli.main, list(args))
    return res.exit_code, res.stdout, res.stderr


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
    code, out, _ = _run(
        "bench",
        "--catalog",
        str(catalog_file),
        "--queries",
        str(queries_file),
        "--store",
        str(tmp_path),
        "-s",
        "bm25",
        "-s",
        "default",
        "--json",
        "--out",
        str(tmp_path / "out"),
    )
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
    for f in ("bench.json", "bench.md", "bench.png"):
        assert (tmp_path / "out" / f).stat().st_size > 0


def test_bench_without_strategy_runs_default_only(
    tmp_path: Path, catalog_file: Path, queries_file: Path
) -> None:
    code, out, _ = _run(
        "bench",
        "--catalog",
        str(catalog_file),
        "--queries",
        str(queries_file),
        "--store",
        str(tmp_path),
        "--json",
    )
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
    code, out, err = _run(
        "simulate",
        "--catalog",
        str(catalog_file),
        "--queries",
        str(queries_file),
        "--store",
        str(tmp_path),
        "-s",
        "cascade",
        "-s",
        "ehrr",
        "--seeds",
        "3",
        "--providers",
        "1",
        "--planner",
        "whole",
        "--json",
        "--out",
        str(tmp_path / "sim"),
    )
    assert code == 0, err
    res = json.loads(out)
    assert list(res) == ["cascade", "ehrr"]
    for metric in ("success_rate", "cost_usd", "invalid_calls", "latency_s", "tokens"):
        assert set(res["ehrr"][metric]) == {"mean", "ci95"}
    for f in ("simulate.json", "simulate.md", "simulate.png", "paired.md"):
        assert (tmp_path / "sim" / f).stat().st_size > 0
    assert "| ehrr |" in (tmp_path / "sim" / "paired.md").read_text()


def test_simulate_market_json_keeps_the_shape_and_adds_the_oracle_router(
    tmp_path: Path, catalog_file: Path, queries_file: Path
) -> None:
    code, out, err = _run(
        "simulate",
        "--catalog",
        str(catalog_file),
        "--queries",
        str(queries_file),
        "--store",
        str(tmp_path),
        "-s",
        "cascade",
        "-s",
        "ehrr",
        "--seeds",
        "2",
        "--providers",
        "2",
        "--planner",
        "clauses",
        "--attempts",
        "1",
        "--prices",
        "positive",
        "--json",
    )
    assert code == 0, err
    res = json.loads(out)
    assert list(res) == ["cascade", "ehrr", "oracle-router"]
    for metric in ("success_rate", "cost_usd", "invalid_calls", "latency_s", "tokens"):
        assert set(res["ehrr"][metric]) == {"mean", "ci95"}
    assert set(res["ehrr"]["regret_success"]) == {"mean", "ci95"}


def test_simulate_rejects_a_bad_planner_in_one_line(
    tmp_path: Path, catalog_file: Path, queries_file: Path
) -> None:
    code, _, err = _run(
        "simulate",
        "--catalog",
        str(catalog_file),
        "--queries",
        str(queries_file),
        "--store",
        str(tmp_path),
        "--planner",
        "psychic",
    )
    assert code == 2 and "psychic" in err and "Traceback" not in err
