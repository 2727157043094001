"""State-aware gating (Tool Attention, eq. 6, §5.4): deterministic preconditions checked against the
session's state, beside the similarity threshold (θ, top-k) of :mod:`toolroute.present.presenter`.
This module holds the data (what toolroute.toml declares, and the session state); the rule that
checks one against the other, at find time and at call time, is
:mod:`toolroute.gateway.calls.preconditions`.

Declared in ``toolroute.toml`` per tool (``[tools."server__tool"]``) or per server
(``[servers.name]``, applying to all its tools):

- ``requires_scope = ["github:write"]``: every scope must be granted to the client;
- ``after = ["git__git_status", "search_"]``: some tool whose name equals or starts with one of
  these must have run successfully earlier in the session;
- ``milestone = "plan_confirmed"``: the agent (meta-tool ``set_milestone``) or the config must
  have reached it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Preconditions", "SessionState"]


@dataclass(frozen=True, slots=True)
class Preconditions:
    requires_scope: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    milestone: str | None = None

    def merged(self, other: Preconditions | None) -> Preconditions:
        if other is None:
            return self
        return Preconditions(
            requires_scope=self.requires_scope + other.requires_scope,
            after=self.after + other.after,
            milestone=self.milestone or other.milestone,
        )


@dataclass(slots=True, eq=False, weakref_slot=True)
class SessionState:
    """What one client session has: granted scopes, successful calls, milestones, promotions."""

    scopes: set[str] = field(default_factory=set)
    succeeded: list[str] = field(default_factory=list)
    milestones: set[str] = field(default_factory=set)
    promoted: set[str] = field(default_factory=set)
    last_query: str = ""
    """The latest find_tools request, re-used by request_capability."""
    last_shown: list[tuple[str, str]] = field(default_factory=list)
    """(server, tool) of its answer in rank order, until the next call (memory.learn_from_call)."""
    capability_requests: int = 0
    client: str | None = None
    """The client identity its promotions are shared under, across gateway processes and
    replicas (call gate scope ``client``, and every 2026-07-28 request); None: this
    connection only."""
