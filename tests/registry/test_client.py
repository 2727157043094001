"""The registry client (registry/client.py) against a registry on loopback serving real
server.json entries: pages, the cache and its ETag, and every way a registry can answer badly,
each ending in one clear error or a bounded listing (fail closed)."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import reply_json
from tests.helpers.registry import Registry, real_entries, serve_registry
from toolroute.errors import RegistryError
from toolroute.registry.client import RegistryClient
from toolroute.settings import RegistrySettings


def _client(url: str, tmp_path: Path | None = None, **settings: object) -> RegistryClient:
    return RegistryClient(RegistrySettings(url=url, **settings), tmp_path)  # type: ignore[arg-type]


def test_a_listing_is_read_page_by_page_and_keeps_the_valid_entries(tmp_path: Path) -> None:
    with serve_registry() as (url, reg):
        listing = _client(url, tmp_path, page_size=10).listing()
    assert len(reg.requests) == -(-len(real_entries()) // 10)  # every page, once
    assert all("version=latest" in r for r in reg.requests)
    names = {e.name for e in listing.entries}
    assert "io.github.modelcontextprotocol/time" in names
    # the seed's entry without a namespace breaks the schema: left out, and said why
    assert [name for name, _ in listing.rejected] == ["kbag"]
    assert not listing.truncated


def test_a_fresh_cache_asks_nothing_and_a_stale_one_asks_with_its_etag(tmp_path: Path) -> None:
    with serve_registry() as (url, reg):
        first = _client(url, tmp_path, page_size=500).listing()
        again = _client(url, tmp_path, page_size=500).listing()
        assert len(reg.requests) == 1 and again.entries == first.entries
        stale = _client(url, tmp_path, page_size=500, cache_ttl_s=0).listing()
        assert len(reg.requests) == 2  # one page, answered 304 Not Modified
        assert stale.entries == first.entries and stale.fetched_at > first.fetched_at


def test_a_registry_that_changed_is_read_again_when_the_cache_is_stale(tmp_path: Path) -> None:
    with serve_registry() as (url, reg):
        _client(url, tmp_path, page_size=500).listing()
        reg.entries = reg.entries[:3]
        listing = _client(url, tmp_path, page_size=500, cache_ttl_s=0).listing()
    assert len(listing.entries) == 3


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("status", "answered HTTP 503"),
        ("notjson", "the answer is not JSON"),
        ("shape", "not a server list"),
        ("redirect", "answered with a redirect to http://evil.example"),
        ("loop", "repeats a cursor"),
    ],
)
def test_each_bad_answer_is_one_clear_error(mode: str, says: str) -> None:
    with (
        serve_registry(Registry(mode=mode)) as (url, reg),
        pytest.raises(RegistryError, match=says) as e,
    ):
        _client(url, page_size=5).listing()
    assert "\n" not in str(e.value)
    assert not any("evil" in r for r in reg.requests)


def test_an_endless_listing_stops_at_max_pages() -> None:
    with serve_registry(Registry(mode="endless")) as (url, reg):
        listing = _client(url, page_size=5, max_pages=4).listing()
    assert len(reg.requests) == 4
    assert listing.truncated


def test_a_listing_longer_than_max_entries_keeps_the_first_ones() -> None:
    with serve_registry() as (url, _):
        listing = _client(url, page_size=10, max_entries=25).listing()
    assert listing.truncated and len(listing.entries) <= 25


def test_a_huge_listing_is_refused_past_max_bytes() -> None:
    too_big = r"over 1048576 bytes \(\[registry\] max_bytes\)"
    with (
        serve_registry(Registry(mode="huge")) as (url, _),
        pytest.raises(RegistryError, match=too_big),
    ):
        _client(url, max_bytes=1024 * 1024).listing()


def test_a_registry_that_does_not_answer_is_given_up() -> None:
    with (
        serve_registry(Registry(mode="slow")) as (url, _),
        pytest.raises(RegistryError, match="no answer within 0.3 s"),
    ):
        _client(url, timeout_s=0.3).listing()


def test_a_registry_that_drips_its_answer_is_given_up_at_the_listing_deadline() -> None:
    # one byte every 0.2 s never trips the per-read timeout; the whole listing has 4 × 0.3 s
    with (
        serve_registry(Registry(mode="drip")) as (url, _),
        pytest.raises(RegistryError, match="the listing took over 1.2 s"),
    ):
        _client(url, timeout_s=0.3).listing()


def test_an_unreachable_registry_is_one_line() -> None:
    from tests.helpers.net import free_port

    with pytest.raises(RegistryError, match="cannot be reached"):
        _client(f"http://127.0.0.1:{free_port()}").listing()


def test_lookup_finds_the_latest_version_by_name() -> None:
    with serve_registry() as (url, reg):
        entry = _client(url).lookup("io.github.domdomegg/airtable-mcp-server")
        with pytest.raises(RegistryError, match="lists no server named 'io.example/none'"):
            _client(url).lookup("io.example/none")
    assert entry.version == "1.7.3"
    assert "search=io.github.domdomegg" in reg.requests[0]


def test_no_registry_url_is_refused_before_any_request() -> None:
    with pytest.raises(RegistryError, match=r"set \[registry\] url"):
        RegistryClient(RegistrySettings())


def test_a_registry_that_fails_later_leaves_the_listing_read_before_in_use(
    tmp_path: Path,
) -> None:
    with serve_registry() as (url, reg):
        first = _client(url, tmp_path, page_size=500).listing()
        reg.mode = "status"
        later = _client(url, tmp_path, page_size=500, cache_ttl_s=0).listing()
    assert later.entries == first.entries
    assert later.stale is not None and "answered HTTP 503" in later.stale


def test_a_failing_registry_is_not_asked_again_by_every_find_tools(
    tmp_path: Path, embedder: Any
) -> None:
    from toolroute.registry.suggest import Suggester

    with serve_registry(Registry(mode="status")) as (url, reg):
        s = Suggester(RegistrySettings(url=url), tmp_path, embedder)
        for _ in range(3):
            with pytest.raises(RegistryError, match="answered HTTP 503"):
                s.suggest("what time is it in Tokyo")
    assert len(reg.requests) == 1


def test_a_private_registry_gets_the_token_and_a_refusal_says_how_to_give_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[str | None] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            seen.append(self.headers.get("Authorization"))
            ok = self.headers.get("Authorization") == "Bearer s3cret-token-of-the-org"
            reply_json(self, 200 if ok else 401, {"servers": []} if ok else {"error": "no"})

    from tests.helpers.net import http_server

    with http_server(Handler) as port:
        url = f"http://127.0.0.1:{port}"
        with pytest.raises(RegistryError, match=r"HTTP 401 \(the token is unset: set"):
            _client(url).listing()
        monkeypatch.setenv("ORG_REGISTRY_TOKEN", "s3cret-token-of-the-org")
        assert _client(url, token_env="ORG_REGISTRY_TOKEN").listing().entries == ()
    assert seen == [None, "Bearer s3cret-token-of-the-org"]
