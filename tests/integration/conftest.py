from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.status import Served, serving_gateway
from toolroute.embed.onnx import OnnxEmbedder
from toolroute.store.local_pg import LocalPostgres, postgres_bin_dir


@pytest.fixture(scope="session")
def onnx() -> OnnxEmbedder:
    return OnnxEmbedder()


@pytest.fixture(scope="session")
def shared_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One store for the session: the embedding cache is shared by every benchmark test."""
    return tmp_path_factory.mktemp("store")


@pytest.fixture(scope="session")
def status_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One `toolroute serve --transport http` (no auth) after one agent turn, for the tests
    that only read its status page (test_status_page, test_browser)."""
    with serving_gateway(tmp_path_factory.mktemp("status-gateway")) as served:
        yield served


@pytest.fixture(scope="session")
def pg() -> Iterator[LocalPostgres]:
    """One real PostgreSQL server for the session (the machine's initdb/pg_ctl, loopback, a
    free port, stopped at the end); each test makes its own database. No fsync: the tests kill
    gateways, never the database server, and a shared CI disk makes each fsync slow."""
    if postgres_bin_dir() is None:
        pytest.skip("PostgreSQL's initdb/pg_ctl not found (bash .ci/run installs postgresql)")
    with LocalPostgres(settings={"fsync": "off", "synchronous_commit": "off"}) as server:
        yield server
