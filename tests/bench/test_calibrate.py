from __future__ import annotations

import tomllib
from pathlib import Path

from tests.conftest import HashingEmbedder
from toolroute import Router
from toolroute.bench.calibrate import calibrate, write_threshold
from toolroute.catalog import load_queries


def test_calibration_picks_the_f1_best_threshold(
    tmp_path: Path, catalog_file: Path, queries_file: Path
) -> None:
    with Router(catalog_file, store=tmp_path, embedder=HashingEmbedder()) as r:
        result = calibrate(
            r, load_queries(queries_file, r.catalog), k=3, grid=[0.0, 0.2, 0.4, 0.6, 2.0]
        )
    by_theta = {t: f for t, _, _, f in result.rows}
    assert by_theta[result.best] == max(by_theta.values())
    assert by_theta[2.0] == 0.0  # nothing passes: no recall, no F1
    assert "**best**" in result.table()


def test_threshold_is_written_into_toolroute_toml(tmp_path: Path) -> None:
    path = tmp_path / "toolroute.toml"
    write_threshold(path, 0.4)
    assert tomllib.loads(path.read_text())["toolroute"]["threshold"] == 0.4
    path.write_text("[toolroute]\nk = 3\nthreshold = 0.1\n\n[servers.time]\nask_cost = 0.0\n")
    write_threshold(path, 0.35)
    data = tomllib.loads(path.read_text())
    assert data["toolroute"] == {"k": 3, "threshold": 0.35}
    assert data["servers"]["time"]["ask_cost"] == 0.0


def test_threshold_is_written_under_a_commented_header(tmp_path: Path) -> None:
    path = tmp_path / "toolroute.toml"
    path.write_text("[toolroute]  # my settings\nk = 3\n")
    write_threshold(path, 0.5)
    assert tomllib.loads(path.read_text())["toolroute"] == {"k": 3, "threshold": 0.5}
