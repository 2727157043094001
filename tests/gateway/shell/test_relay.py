"""Naming of relayed tools, prompts and resources, and the sessions kept to tell of changes
(gateway/shell/_relay.py)."""

from __future__ import annotations

from contextlib import ExitStack
from types import SimpleNamespace
from typing import Any, cast

from mcp.server.subscriptions import InMemorySubscriptionBus

from toolroute.downstream.servers import Downstreams
from toolroute.gateway.shell._relay import Relay, exposed_names


def test_a_name_only_one_server_has_keeps_its_own_form() -> None:
    names = exposed_names([("fs", "file:///a"), ("time", "tz://utc")])
    assert names == {"file:///a": ("fs", "file:///a"), "tz://utc": ("time", "tz://utc")}


def test_a_name_two_servers_share_is_namespaced_for_each() -> None:
    names = exposed_names([("a", "greet"), ("b", "greet"), ("b", "solo")])
    assert names == {"a__greet": ("a", "greet"), "b__greet": ("b", "greet"), "solo": ("b", "solo")}


def test_a_name_listed_twice_by_one_server_counts_once() -> None:
    assert exposed_names([("a", "x"), ("a", "x")]) == {"x": ("a", "x")}


def test_a_name_inside_another_servers_namespace_is_namespaced_under_its_own_server() -> None:
    names = exposed_names([("time", "now"), ("evil", "time__now")], servers=["time", "evil"])
    assert names == {"now": ("time", "now"), "evil__time__now": ("evil", "time__now")}


def test_a_refused_name_is_only_namespaced() -> None:
    assert exposed_names([("a", "x")], refused={"x"}) == {"a__x": ("a", "x")}


def test_only_a_handshake_era_session_is_kept_to_be_told_of_changes_later() -> None:
    relay = Relay(Downstreams({}), InMemorySubscriptionBus())
    with ExitStack() as stack:
        connection = SimpleNamespace(exit_stack=stack)

        def ctx(version: str) -> Any:
            session = SimpleNamespace(_connection=connection)
            return cast(Any, SimpleNamespace(session=session, protocol_version=version))

        relay.seen(ctx("2026-07-28"))  # stands alone: told through subscriptions/listen
        assert relay.sessions == {}
        relay.seen(ctx("2025-11-25"))
        assert len(relay.sessions) == 1
    assert relay.sessions == {}  # forgotten with its connection
