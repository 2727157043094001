"""The preconditions' rule (Tool Attention, eq. 6): whether a tool's declared scopes, earlier
calls and milestones hold in a session's state. ``find_tools`` leaves out the tools it holds
back (listed under ``gated_out``) and the call path's ``preconditions`` step refuses their calls
(``precondition_failed``); the data it reads, declared in toolroute.toml, is
:class:`toolroute.route.preconditions.Preconditions` and
:class:`~toolroute.route.preconditions.SessionState`.
"""

from __future__ import annotations

from collections.abc import Mapping

from toolroute.route.preconditions import Preconditions, SessionState

__all__ = ["blocked_by", "preconditions_for"]


def blocked_by(pre: Preconditions | None, state: SessionState) -> str | None:
    """Why a tool is held back in this state (Tool Attention eq. 6: g = 0), or None when it
    passes."""
    if pre is None:
        return None
    missing = [s for s in pre.requires_scope if s not in state.scopes]
    if missing:
        return f"requires scope {', '.join(missing)}"
    if pre.after and not any(
        done == need or done.startswith(need) for need in pre.after for done in state.succeeded
    ):
        return f"needs a successful call to {' or '.join(pre.after)} first"
    if pre.milestone and pre.milestone not in state.milestones:
        return f"needs milestone {pre.milestone!r} (set_milestone)"
    return None


def preconditions_for(
    name: str, server: str, tools: Mapping[str, Preconditions], servers: Mapping[str, Preconditions]
) -> Preconditions | None:
    """The tool's own preconditions merged with its server's."""
    own, srv = tools.get(name), servers.get(server)
    if own is None:
        return srv
    return own.merged(srv)
