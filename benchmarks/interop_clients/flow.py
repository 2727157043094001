"""The flow every interop client runs against the gateway, with no LLM: list the tools,
``find_tools`` for the weather tool, then call the tool it returned (``call_tool`` in meta
mode; in bind mode list again and call the bound tool by its own name), once per downstream
server. Shared by the Python drivers (each runs in the venv of its client library, so this
module imports nothing beyond the standard library).

A driver gives a :class:`Session`: ``names()`` lists the tools, ``call(name, args)`` returns
``(is_error, text)``. It prints one JSON line per server: ``{"server", "cell"}`` where the cell
is ``works``, ``refused: <the gateway's reason>`` or ``fails: <what went wrong>``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

QUERY = "weather forecast for a city"
CITY = {"city": "Oslo"}
EXPECTED = "sunny in Oslo"


@dataclass(frozen=True, slots=True)
class Session:
    names: Callable[[], Awaitable[list[str]]]
    call: Callable[[str, dict[str, Any]], Awaitable[tuple[bool, str]]]


def _short(text: str, n: int = 160) -> str:
    return " ".join(text.split())[:n]


def refusal(text: str) -> str | None:
    """The gateway's reason when ``text`` is its structured refusal (tool_not_available...)."""
    try:
        body = json.loads(text)
    except ValueError:
        return None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return f"{body['error']}: {_short(str(body.get('message', '')), 120)}"
    return None


def candidates(text: str) -> list[dict[str, Any]]:
    body = json.loads(text)
    return list(body.get("candidates", [])) if isinstance(body, dict) else []


async def one_server(session: Session, server: str, expose: str) -> str:
    """The cell for ``server``."""
    listed = await session.names()
    if "find_tools" not in listed:
        return f"fails: find_tools not listed ({', '.join(listed[:5])})"
    err, text = await session.call("find_tools", {"query": QUERY, "k": 10})
    if err:
        return f"fails: find_tools: {_short(text)}"
    found = [c["name"] for c in candidates(text) if c.get("server") == server]
    if not found:
        return "fails: find_tools did not return the server's weather tool"
    name = found[0]
    if expose == "bind":
        listed = await session.names()
        if name not in listed:
            return f"fails: {name} not listed after find_tools"
        err, text = await session.call(name, CITY)
    else:
        err, text = await session.call("call_tool", {"name": name, "arguments": CITY})
    if not err and EXPECTED in text:
        return "works"
    if why := refusal(text):  # some libraries hand an isError result back as plain content
        return f"refused: {why}"
    return f"fails: {_short(text)}"


DONE: set[str] = set()
"""Servers whose cell was printed (a driver that fails after prints the rest)."""


def verdict(server: str, cell: str) -> None:
    DONE.add(server)
    print(json.dumps({"server": server, "cell": cell}), flush=True)


def failed(servers: list[str], e: BaseException) -> None:
    """The cells not yet printed, when the client failed outside a server's flow (connecting,
    closing): that failure is their verdict."""
    why = e.exceptions[0] if isinstance(e, BaseExceptionGroup) and e.exceptions else e
    for server in servers:
        if server not in DONE:
            verdict(server, f"fails: {type(why).__name__}: {_short(str(why))}")


async def run(session: Session, servers: list[str], expose: str) -> None:
    for server in servers:
        try:
            cell = await one_server(session, server, expose)
        except Exception as e:  # a client library's own failure is the cell's verdict
            cell = f"fails: {type(e).__name__}: {_short(str(e))}"
        verdict(server, cell)


def texts(content: Any) -> str:
    """The text of MCP content blocks (objects with ``.text`` or dicts with ``"text"``)."""
    if isinstance(content, str):
        return content
    out = []
    for c in content or []:
        t = c.get("text") if isinstance(c, dict) else getattr(c, "text", None)
        if isinstance(t, str):
            out.append(t)
    return "\n".join(out)


def main_args() -> tuple[str, Any, str, list[str]]:
    """(transport, target, expose, servers) from argv: ``stdio JSON-COMMAND`` or ``http URL``,
    then the expose mode and the comma-separated server names."""
    transport, target, expose, servers = sys.argv[1:5]
    return (
        transport,
        json.loads(target) if transport == "stdio" else target,
        expose,
        (servers.split(",")),
    )
