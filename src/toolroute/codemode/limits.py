"""What one ``execute`` script may use: each limit with its default, read from ``[code_mode]``
in toolroute.toml. Exceeding one ends that script alone, with an error naming the limit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["CodeModeLimits", "LimitName"]

LimitName = Literal["wall_s", "cpu_s", "memory_mb", "max_calls", "result_bytes", "recursion"]
"""The names a limit error carries (the ``[code_mode]`` setting to raise)."""


@dataclass(frozen=True, slots=True)
class CodeModeLimits:
    """Code mode's settings: the limits of one script, large-result paging, typed stubs."""

    wall_s: float = 30.0
    """Wall time of one script, tool calls included; also bounds the wait for a free sandbox."""
    cpu_s: float = 5.0
    """Time the sandbox itself executes (not counting the waits for tool calls)."""
    memory_mb: int = 64
    """Heap of the sandbox's interpreter."""
    max_calls: int = 50
    """Tool calls one script may make."""
    result_bytes: int = 1024 * 1024
    """Largest value (bytes of JSON) a script may return; larger ends it with an error."""
    recursion: int = 200
    """Deepest call stack inside the script."""
    concurrent: int = 2
    """Scripts running at once across all clients (each in its own worker process)."""
    preview_bytes: int = 8 * 1024
    """A result (of execute) above this is answered as a preview and a handle to its pages."""
    page_bytes: int = 8 * 1024
    """Size of one page read through a handle."""
    handle_ttl_s: float = 600.0
    """How long a handle's pages are kept after they were made."""
    handle_store_mb: int = 64
    """All pages kept at once, across clients; the oldest handles go first."""
    stubs: bool = True
    """find_tools answers with Python signatures (``signature``) instead of JSON schemas."""
