"""The ``steps`` strategy's offline priors on the small test catalog (hashing embedder)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from tests.conftest import SMALL_CATALOG, HashingEmbedder, tool
from toolroute.route.strategy import RouteParams, StepsParams
from toolroute.router import Router

WRITE_LATER = "Summarise the severe weather alerts for Texas and save it as /tmp/out/alerts.md"


DISTRACTORS = {
    "id": "misc",
    "name": "Misc",
    "description": "",
    "tools": [
        tool("get_stock_price", "Latest stock price of a ticker"),
        tool("play_song", "Play a song by its title"),
        tool("find_route", "Driving route between two places"),
        tool("translate_text", "Translate text into another language"),
        tool("search_papers", "Search research papers by keyword"),
        tool("get_news", "Top news headlines of the day"),
        tool("get_alert_history", "Past severe weather alerts for a state"),
        tool("subscribe_alerts", "Subscribe to weather alerts for Texas"),
        tool("weather_radar", "Weather radar image for a region"),
        tool("storm_tracker", "Track severe storms and their alerts"),
    ],
}


@pytest.fixture
def catalog_file(tmp_path: Path) -> Path:
    p = tmp_path / "catalog.json"
    servers = [*SMALL_CATALOG["servers"], DISTRACTORS]
    p.write_text(json.dumps({"servers": servers}), encoding="utf-8")
    return p


def _router(tmp_path: Path, catalog_file: Path, **params: object) -> Router:
    r = Router(
        catalog_file,
        store=tmp_path / "store",
        embedder=HashingEmbedder(),
        params=RouteParams(steps=StepsParams(**params)),  # type: ignore[arg-type]
    )
    r.index()
    return r


def _top(r: Router, query: str, strategy: str = "steps", k: int = 5) -> list[str]:
    return [c.tool for c in r.route(query, k=k, strategy=strategy)]


def test_a_named_destination_file_brings_the_file_writer_into_the_top_5(
    tmp_path: Path, catalog_file: Path
) -> None:
    with _router(tmp_path, catalog_file, destination=False) as r:
        assert "write_file" not in _top(r, WRITE_LATER, k=6)
    with _router(tmp_path, catalog_file) as r:
        top = _top(r, WRITE_LATER)
        assert "write_file" in top and top[0] == "get_alerts"


def test_a_path_that_is_only_read_brings_no_writer(tmp_path: Path, catalog_file: Path) -> None:
    with _router(tmp_path, catalog_file) as r:
        query = "list the severe weather alerts in /data/alerts.md"
        with_prior = _top(r, query, k=20)
        without = _top(r, query, "multi", k=20)
        assert with_prior.index("write_file") >= without.index("write_file")


def test_action_words_rank_the_asked_action_first(tmp_path: Path, catalog_file: Path) -> None:
    with _router(tmp_path, catalog_file) as r:
        assert _top(r, "time in a timezone convert")[0] == "convert_time"
        assert _top(r, "get time in a timezone")[0] == "get_current_time"


READ_LATER = "Summarise the severe weather alerts for Texas listed in /data/alerts.md"


def test_a_file_the_request_only_reads_brings_a_file_reader_into_the_top_5(
    tmp_path: Path, catalog_file: Path
) -> None:
    with _router(tmp_path, catalog_file, source_file=False) as r:
        assert "read_file" not in _top(r, READ_LATER)
    with _router(tmp_path, catalog_file) as r:
        top = _top(r, READ_LATER)
        assert "read_file" in top and top[0] == "get_alerts"
        assert "write_file" not in top  # a source is not a destination


def test_the_file_writer_stays_in_the_top_5_when_implied_steps_lift_providers(
    tmp_path: Path,
) -> None:
    # list_states mentions the state get_alerts requires: its provider, lifted above rank 5.
    # The writer joins after implied steps, so a lifted provider cannot push it out.
    servers = copy.deepcopy([*SMALL_CATALOG["servers"], DISTRACTORS])
    weather = next(s for s in servers if s["id"] == "weather")
    for t in weather["tools"]:
        if t["name"] == "get_alerts":
            t["input_schema"] = {
                "type": "object",
                "properties": {"state": {"type": "string"}},
                "required": ["state"],
            }
    weather["tools"].append(tool("list_states", "List the US state names and their codes"))
    cat = tmp_path / "catalog-states.json"
    cat.write_text(json.dumps({"servers": servers}), encoding="utf-8")
    with _router(tmp_path, cat) as r:
        top = _top(r, WRITE_LATER)
        assert "list_states" in top and "write_file" in top
        assert top[0] == "get_alerts"


def test_the_action_penalty_is_shared_among_the_actions_a_request_asks_for(
    tmp_path: Path, catalog_file: Path
) -> None:
    from toolroute.route import stage as st

    with _router(tmp_path, catalog_file) as r:
        ix = r.built
        row = next(i for i, t in enumerate(ix.tools) if t.name == "convert_time")
        for query, asked in (("what time is it", 1), ("what time should I set", 2)):
            q = r.query_context(query)
            base = st.multi(ix, q, r.params)
            lost = float(base[row] - st.action_prior(ix, q, r.params, base)[row])
            assert lost == pytest.approx(r.params.steps.action_penalty / asked, abs=1e-6)


def test_a_second_copy_of_a_tool_from_another_server_is_demoted_and_nothing_else(
    tmp_path: Path,
) -> None:
    twin = copy.deepcopy(SMALL_CATALOG["servers"][0])  # the time server, merged in twice
    servers = [*SMALL_CATALOG["servers"], {**twin, "id": "clock"}, DISTRACTORS]
    p = tmp_path / "catalog.json"
    p.write_text(json.dumps({"servers": servers}), encoding="utf-8")
    query = "what is the current time in Tokyo"

    def scores(**params: object) -> dict[tuple[str, str], float]:
        with _router(tmp_path / str(len(params)), p, **params) as r:
            return {(c.server, c.tool): c.score for c in r.route(query, k=20, strategy="steps")}

    plain, demoted = scores(duplicate_penalty=0.0), scores()
    first, second = sorted(
        (k for k in plain if k[1] == "get_current_time"), key=lambda k: -plain[k]
    )
    assert demoted[first] == pytest.approx(plain[first])
    assert demoted[second] < plain[second] - 0.04  # near cosine 1: nearly the whole 0.05
    others = [k for k in plain if k[1] not in ("get_current_time", "convert_time")]
    assert all(demoted[k] == pytest.approx(plain[k]) for k in others)
