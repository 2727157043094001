"""``python -m benchmarks.call_trace``: one traced ``tools/call`` on a live ``toolroute serve``
(stdio, the reference time server behind it) reports the call path's modules in order of the
pipes it is cut at."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.integration


def test_the_traced_call_passes_the_call_path_and_the_marks_come_in_order() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.call_trace", "--json", "--settle", "1.0"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout)
    marks = [what for what, _ in figures["marks"]]
    assert marks[:4] == ["frame in", "downstream asked", "downstream answered", "reply out"]
    assert marks[-1] == "frame in: tools/call"  # the script's closing find_tools
    call = figures["call"]
    assert {"toolroute.gateway.calls.pipeline", "toolroute.downstream.session"} <= set(
        call["modules"]
    )
    assert "toolroute.gateway.calls" in call["packages"]
    assert len(call["functions"]) >= len(call["modules"]) and call["threads"]
