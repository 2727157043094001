"""What one ``execute`` script may use: each limit with its default, read from ``[code_mode]``
in toolroute.toml. Exceeding one ends that script alone, with an error naming the limit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["CodeModeLimits", "LimitName"]

LimitName = Literal[
    "wall_s",
    "cpu_s",
    "memory_mb",
    "max_calls",
    "result_bytes",
    "result_depth",
    "int_digits",
    "recursion",
    "queue_s",
    "handle_store_mb",
    "message_chars",
]
"""The names a limit error carries: the ``[code_mode]`` setting to raise, or one of two fixed
lengths: ``int_digits`` (4,300 digits), past which Python writes no integer as text, and
``message_chars`` (1,000), past which a script's error message is cut in the worker."""


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
    """Largest value (bytes of JSON) a script may return; larger ends it with an error. The
    value is written as JSON in the sandbox's worker and stopped there at this size, so no
    value costs the gateway more."""
    result_depth: int = 100
    """Deepest nesting of the value a script returns (the value itself at depth 1)."""
    recursion: int = 200
    """Deepest call stack inside the script."""
    concurrent: int = 2
    """Scripts running at once across all clients (each in its own worker process)."""
    per_client: int = 1
    """Scripts one client may run at once, out of ``concurrent``: a client's next script waits
    for one of its own to end, never for another client's."""
    queue_s: float = 60.0
    """How long a script may wait for a free slot (not counted in its ``wall_s``)."""
    preview_bytes: int = 8 * 1024
    """A result (of execute) above this is answered as a preview and a handle to its pages."""
    page_bytes: int = 8 * 1024
    """Size of one page read through a handle."""
    handle_ttl_s: float = 600.0
    """How long a handle's pages are kept after they were made."""
    handle_store_mb: int = 64
    """All pages kept at once, across clients; a result that finds it full of other clients'
    pages is refused, never stored by dropping theirs."""
    handle_client_mb: int = 16
    """Pages one client keeps at once; past it, that client's own oldest handles go first."""
    stubs: bool = True
    """find_tools answers with Python signatures (``signature``) instead of JSON schemas."""
