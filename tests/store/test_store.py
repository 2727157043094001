from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import SMALL_CATALOG
from toolroute.catalog import catalog_from_dict
from toolroute.errors import ConfigError, StoreError
from toolroute.learn.estimate import DEFAULT_SMOOTHING, ServerStats, ToolStats
from toolroute.stats import Outcome
from toolroute.store import (
    SCHEMA_VERSION,
    Store,
    default_store_target,
    is_store_url,
    open_store,
    parse_store_target,
    sql,
)


def _catalog(mutate=None):  # type: ignore[no-untyped-def]
    data = json.loads(json.dumps(SMALL_CATALOG))
    if mutate:
        mutate(data)
    return catalog_from_dict(data)


def test_sync_reports_added_then_unchanged(tmp_path: Path) -> None:
    with open_store(tmp_path) as st:
        first = st.sync_catalog(_catalog())
        assert (first.added, first.updated, first.removed, first.unchanged) == (7, 0, 0, 0)
        second = st.sync_catalog(_catalog())
        assert (second.added, second.updated, second.removed, second.unchanged) == (0, 0, 0, 7)


def test_sync_updates_changed_and_deletes_vanished(tmp_path: Path) -> None:
    def mutate(d):  # type: ignore[no-untyped-def]
        d["servers"][0]["tools"][0]["description"] = "Now with seconds"
        del d["servers"][2]["tools"][1]

    with open_store(tmp_path) as st:
        st.sync_catalog(_catalog())
        r = st.sync_catalog(_catalog(mutate))
        assert (r.added, r.updated, r.removed, r.unchanged) == (0, 1, 1, 5)
        assert r.changed_keys == {("time", "get_current_time")}
        back = st.load_catalog()
        assert back.tool_count == 6
        assert back.servers[0].tools[0].description == "Now with seconds"


def test_a_tools_title_is_stored_and_a_changed_title_is_stored_again(tmp_path: Path) -> None:
    """A title is an exact name (route/exact.py): a gateway reading the stored catalog must
    have it, and the one the server gives now."""

    def titled(title: str):  # type: ignore[no-untyped-def]
        def mutate(d):  # type: ignore[no-untyped-def]
            d["servers"][0]["tools"][0]["title"] = title

        return mutate

    with open_store(tmp_path) as st:
        st.sync_catalog(_catalog(titled("Clock Now")))
        assert st.load_catalog().servers[0].tools[0].title == "Clock Now"
        st.sync_catalog(_catalog(titled("Quill Board")))
        assert st.load_catalog().servers[0].tools[0].title == "Quill Board"


def test_store_survives_reopen_and_keeps_vectors(tmp_path: Path) -> None:
    v = np.arange(4, dtype=np.float32)
    with open_store(tmp_path) as st:
        st.sync_catalog(_catalog())
        st.put_vectors("m", {"k": v})
    with open_store(tmp_path) as st:
        assert st.tool_hashes()
        got = st.get_vectors("m", ["k", "missing"], 4)
        assert list(got) == ["k"] and np.array_equal(got["k"], v)
        assert st.get_vectors("other-model", ["k"], 4) == {}


def test_failed_write_leaves_previous_state(tmp_path: Path) -> None:
    with open_store(tmp_path) as st:
        st.sync_catalog(_catalog())
        with pytest.raises(TypeError):
            st.put_vectors("m", {"a": np.zeros(2, np.float32), "b": object()})  # type: ignore[dict-item]
        assert st.get_vectors("m", ["a"], 2) == {}


def test_store_of_a_newer_schema_is_refused(tmp_path: Path) -> None:
    open_store(tmp_path).close()
    db = sqlite3.connect(tmp_path / "toolroute.db")
    db.execute("UPDATE meta SET value='999' WHERE key='schema_version'")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="store format 999"):
        open_store(tmp_path)


def test_store_of_an_unknown_legacy_format_is_refused(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "toolroute.db")
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("INSERT INTO meta VALUES ('format', '7')")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="store format 7"):
        open_store(tmp_path)


def test_store_of_format_1_is_migrated_forward_keeping_its_outcomes(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "toolroute.db")
    db.executescript(";".join(sql.migration(0, "sqlite")))
    db.execute("INSERT INTO meta VALUES ('format', '1')")
    db.execute(
        "INSERT INTO outcomes (at, server, tool, success, latency_s, server_failed)"
        " VALUES (0, 'time', 'get_current_time', 1, 0.5, 0)"
    )
    db.commit()
    db.close()
    with open_store(tmp_path) as st:
        assert st.get_meta("schema_version") == str(SCHEMA_VERSION)
        assert st.outcome_counts() == [("time", "get_current_time", 1, 0, 0)]
        st.record_outcome(Outcome("time", "get_current_time", False, 0.1), *_after_prior())
        assert st.outcome_count() == 2


def test_store_uses_wal(tmp_path: Path) -> None:
    with open_store(tmp_path):
        pass
    db = sqlite3.connect(tmp_path / "toolroute.db")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()


def _after_prior() -> tuple[ServerStats, ToolStats]:
    return ServerStats().update(False, 0.1), ToolStats().update(False, 0.1)


def test_stored_statistics_equal_a_sequential_replay(tmp_path: Path) -> None:
    calls = [("a", True, 0.2, False), ("a", False, 1.5, True), ("b", True, 0.1, False)] * 5
    server, tools = ServerStats(), {"a": ToolStats(), "b": ToolStats()}
    with open_store(tmp_path) as st:
        for name, ok, lat, crashed in calls:
            server = server.update(ok, lat, crashed, DEFAULT_SMOOTHING)
            tools[name] = tools[name].update(ok, lat, DEFAULT_SMOOTHING)
            got = st.record_outcome(Outcome("srv", name, ok, lat, crashed), server, tools[name])
            assert got == (server, tools[name])  # bit for bit: same expression, same order
        servers, stored = st.load_stats()
        assert servers == {"srv": server}
        assert stored == {("srv", "a"): tools["a"], ("srv", "b"): tools["b"]}
        assert st.outcome_count() == len(calls)


def test_a_sync_that_changes_nothing_keeps_the_catalog_version(tmp_path: Path) -> None:
    with open_store(tmp_path) as st:
        assert st.catalog_version() == 0
        st.sync_catalog(_catalog())
        st.sync_catalog(_catalog())
        assert st.catalog_version() == 1
        st.sync_catalog(_catalog(lambda d: d["servers"].pop()))
        assert st.catalog_version() == 2


def test_a_postgresql_url_is_never_taken_for_a_path() -> None:
    url = "postgresql://me:secret@db.example:5432/toolroute"
    assert parse_store_target(url) == url and is_store_url(url)
    assert parse_store_target("postgres://h/db") == "postgres://h/db"
    assert parse_store_target("~/stores/a") == Path("~/stores/a").expanduser()
    assert not is_store_url(Path("postgresql:"))


def test_an_unsupported_store_url_is_one_clear_error() -> None:
    with pytest.raises(StoreError, match="unsupported URL scheme 'mysql'.*postgresql://"):
        parse_store_target("mysql://me:secret@h/db")
    with pytest.raises(StoreError) as e:
        parse_store_target("redis://me:secret@h/0")
    assert "secret" not in str(e.value)


def test_toolroute_store_may_name_a_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLROUTE_STORE", "postgresql://h/db")
    assert default_store_target() == "postgresql://h/db"
    monkeypatch.setenv("TOOLROUTE_STORE", "/tmp/x")
    assert default_store_target() == Path("/tmp/x")


def test_unreachable_postgresql_is_one_clear_error_without_the_password() -> None:
    import socket

    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(StoreError, match="cannot connect") as e:
        open_store(f"postgresql://me:secret@127.0.0.1:{port}/db")
    assert "secret" not in str(e.value) and "***" in str(e.value)


def test_config_store_url_stays_a_url_and_bad_scheme_names_the_file(tmp_path: Path) -> None:
    from toolroute.config import load_config

    cfg = tmp_path / "servers.json"
    cfg.write_text(json.dumps({"mcpServers": {"t": {"command": "true"}}}))
    toml = tmp_path / "toolroute.toml"
    toml.write_text('[toolroute]\nstore = "postgresql://h:5432/db"\n')
    assert load_config(cfg).store_target == "postgresql://h:5432/db"
    toml.write_text('[toolroute]\nstore = "ftp://h/db"\n')
    with pytest.raises(ConfigError, match="toolroute.toml.*unsupported URL scheme"):
        load_config(cfg)


def test_cli_store_url_makes_no_directory_and_fails_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    from click.testing import CliRunner

    from toolroute.cli import main

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.chdir(tmp_path)
    url = f"postgresql://me:secret@127.0.0.1:{port}/db"
    result = CliRunner().invoke(main, ["route", "what time is it", "--store", url])
    assert result.exit_code == 2
    assert result.output.strip().startswith("error: postgresql://me:***@127.0.0.1")
    assert len(result.output.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_a_gateway_on_sqlite_follows_no_other_replica(tmp_path: Path) -> None:
    import anyio

    from toolroute.gateway.ops.follow import follow_store

    class _Router:
        store = open_store(tmp_path)

    class _Shared:
        router = _Router()

    class _Gateway:
        shared = _Shared()

    async def main() -> None:
        with anyio.fail_after(5):
            await follow_store(_Gateway())  # returns at once: nothing to follow

    try:
        anyio.run(main)
    finally:
        _Router.store.close()


def test_store_package_api_is_pinned_and_store_opens_the_backend_of_its_target(
    tmp_path: Path,
) -> None:
    import toolroute.store as package
    from toolroute.store.sqlite import SqliteStore

    assert sorted(package.__all__) == sorted(
        [
            "FORMAT_VERSION",
            "SCHEMA_VERSION",
            "Store",
            "StoreInterface",
            "StoreTarget",
            "SyncReport",
            "catalog_digest",
            "default_store_dir",
            "default_store_target",
            "is_store_url",
            "open_store",
            "parse_store_target",
            "redact_url",
        ]
    )
    with open_store(tmp_path) as st:
        assert isinstance(st, SqliteStore) and isinstance(st, Store) and not st.shared


def test_a_promotion_is_seen_by_another_store_handle_until_it_expires(tmp_path: Path) -> None:
    import time

    with open_store(tmp_path) as store, open_store(tmp_path) as other:
        store.promote("name:agent", ["time__get_current_time"], time.time() + 60)
        store.promote("name:agent", ["time__convert_time"], time.time() - 1)
        assert other.is_promoted("name:agent", "time__get_current_time")
        assert not other.is_promoted("name:agent", "time__convert_time")  # expired
        assert not other.is_promoted("name:someone-else", "time__get_current_time")
