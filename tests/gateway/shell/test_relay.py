"""Naming of relayed tools, prompts and resources (gateway/shell/_relay.py)."""

from __future__ import annotations

from toolroute.gateway.shell._relay import exposed_names


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
