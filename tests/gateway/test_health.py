"""What the gateway reports of each server (gateway/health.py): a server down for an OAuth
sign-in shows the exact command to fix it for as long as it is down for that reason."""

from __future__ import annotations

from pathlib import Path

from toolroute.config import HttpSpec
from toolroute.downstream.oauth import DownstreamAuth, OAuthOptions
from toolroute.downstream.servers import Downstreams
from toolroute.downstream.session import Downstream
from toolroute.gateway.health import server_states

FIX = "toolroute auth prot --config servers.json"


def _server(tmp_path: Path) -> Downstream:
    spec = HttpSpec(url="http://127.0.0.1:9/mcp")
    auth = DownstreamAuth("prot", spec, str(tmp_path), OAuthOptions(), FIX)
    return Downstream("prot", spec, auth=auth)


def test_the_fix_stays_while_a_reconnect_is_tried_and_goes_once_the_server_is_up(
    tmp_path: Path,
) -> None:
    d = _server(tmp_path)
    downstreams = Downstreams({"prot": d})
    assert d.auth is not None
    d._set("down", d.auth.unauthorized())  # a 401: sign in
    (state,) = server_states(downstreams)
    assert state.fix == FIX
    # the next connect attempt clears the live reason before it knows the outcome; the
    # server is still down for the sign-in, and says so
    d.auth.required = None
    (state,) = server_states(downstreams)
    assert state.status == "down" and state.fix == FIX
    d._set("up", None)
    (state,) = server_states(downstreams)
    assert state.fix is None


def test_a_server_down_for_another_reason_after_a_sign_in_shows_no_fix(tmp_path: Path) -> None:
    d = _server(tmp_path)
    downstreams = Downstreams({"prot": d})
    assert d.auth is not None
    d._set("down", d.auth.unauthorized())
    d.auth.required = None  # a new sign-in: the next connect starts afresh
    d._set("down", "connection refused")  # and fails for another reason
    (state,) = server_states(downstreams)
    assert state.fix is None
