"""An inventory page's cursor (gateway/cursor.py): the next page begins after the tool it names,
at its offset once that tool is gone, and a cursor of another server or of nothing is refused."""

from __future__ import annotations

from toolroute.gateway.cursor import page_cursor, read_cursor

NAMES = ["a", "b", "c", "d"]


def test_the_next_page_begins_after_the_tool_the_cursor_names() -> None:
    assert read_cursor(None, "s", NAMES) == 0
    assert read_cursor(page_cursor("s", "b", 2), "s", NAMES) == 2
    # a tool listed before it since: still after "b", not at the old offset
    assert read_cursor(page_cursor("s", "b", 2), "s", ["x", *NAMES]) == 3


def test_when_that_tool_is_gone_the_page_begins_at_its_offset_within_the_listing() -> None:
    assert read_cursor(page_cursor("s", "gone", 3), "s", NAMES) == 3
    assert read_cursor(page_cursor("s", "gone", 9), "s", NAMES) == len(NAMES)


def test_a_cursor_of_another_server_or_not_a_cursor_at_all_is_refused() -> None:
    assert read_cursor(page_cursor("other", "b", 2), "s", NAMES) is None
    for bad in ("", "!!!", "W10", 7, ["s", "b", 2], "x" * 100_000):
        assert read_cursor(bad, "s", NAMES) is None
