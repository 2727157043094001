"""An inventory page's cursor: opaque to the client, naming the server and the last tool the page
returned, so that the next page begins after that tool even when the server's listing changed
in between (and at the page's offset when that tool is gone)."""

from __future__ import annotations

import base64
import json

from toolroute.gateway.calls.arguments import MAX_NAME_CHARS

__all__ = ["page_cursor", "read_cursor"]


def page_cursor(server: str, last: str, offset: int) -> str:
    """An inventory page's opaque cursor: the server, the last tool the page returned, and
    where the next page began when it was made (used only once that tool is gone)."""
    raw = json.dumps([server, last, offset], ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def read_cursor(cursor: object, server: str, names: list[str]) -> int | None:
    """Where the page after ``cursor`` begins in ``server``'s tools ``names`` (0 without a
    cursor; None: not a cursor of this server's inventory): after the tool it names, else,
    when that tool is gone, at its offset."""
    if cursor is None:
        return 0
    if not isinstance(cursor, str) or len(cursor) > 12 * MAX_NAME_CHARS + 100:  # 2 names
        return None
    try:
        raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except ValueError:
        return None
    if not (isinstance(raw, list) and len(raw) == 3 and raw[0] == server):
        return None
    _, last, offset = raw
    if not isinstance(last, str) or type(offset) is not int or offset < 0:
        return None
    return names.index(last) + 1 if last in names else min(offset, len(names))
