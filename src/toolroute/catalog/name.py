"""The namespaced name of a tool, ``<server>__<tool>``, built and split in one place.

Server names may not contain :data:`SEPARATOR` (the config refuses them), so the first
occurrence always splits a name unambiguously, whatever the tool's own name holds.
"""

from __future__ import annotations

__all__ = ["SEPARATOR", "qualified_name", "server_of", "split_name"]

SEPARATOR = "__"
"""Between server and tool in a namespaced tool name (``time__get_current_time``). Server names
may not contain it, so the first occurrence always splits a name unambiguously."""


def qualified_name(server: str, tool: str) -> str:
    """``server__tool``: the name the gateway, its clients and the config use for a tool."""
    return f"{server}{SEPARATOR}{tool}"


def split_name(name: str) -> tuple[str, str]:
    """(server, tool) of ``server__tool``; a name without the separator is a server name with
    an empty tool."""
    server, _, tool = name.partition(SEPARATOR)
    return server, tool


def server_of(name: str) -> str:
    """The server part of ``server__tool`` (the whole name when it has no separator)."""
    return name.partition(SEPARATOR)[0]
