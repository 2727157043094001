"""The preconditions' rule (gateway/calls/preconditions.py): a tool's scopes, earlier calls and
milestones checked against the session's state, its own merged with its server's."""

from __future__ import annotations

from toolroute.gateway.calls.preconditions import blocked_by, preconditions_for
from toolroute.route.preconditions import Preconditions, SessionState


def test_preconditions_gate_on_scope_prior_call_and_milestone() -> None:
    state = SessionState(scopes={"repo:read"})
    assert blocked_by(Preconditions(requires_scope=("repo:write",)), state) == (
        "requires scope repo:write"
    )
    pre = Preconditions(after=("git__git_status",))
    assert "git__git_status" in (blocked_by(pre, state) or "")
    state.succeeded.append("git__git_status")
    assert blocked_by(pre, state) is None
    assert blocked_by(Preconditions(after=("git__",)), state) is None  # a prefix
    assert "plan_confirmed" in (blocked_by(Preconditions(milestone="plan_confirmed"), state) or "")
    state.milestones.add("plan_confirmed")
    assert blocked_by(Preconditions(milestone="plan_confirmed"), state) is None


def test_a_tools_preconditions_add_to_its_servers() -> None:
    tools = {"git__push": Preconditions(requires_scope=("repo:write",))}
    servers = {"git": Preconditions(milestone="plan_confirmed")}
    both = preconditions_for("git__push", "git", tools, servers)
    assert both == Preconditions(requires_scope=("repo:write",), milestone="plan_confirmed")
    assert preconditions_for("git__status", "git", tools, servers) == servers["git"]
    assert preconditions_for("time__now", "time", tools, servers) is None
