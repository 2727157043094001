"""``toolroute serve`` with stdin or stdout on the null device: served as a regular file would
be (the SDK's transport), not handed to the event loop, whose uvloop aborted the process
(SIGABRT, no message) on a descriptor it cannot watch."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import RAW_INITIALIZE, TOOLROUTE
from tests.helpers.faults import write_config

pytestmark = pytest.mark.integration


def serve(path: Path, stdin: int | None, stdout: int | None, text: str | None) -> tuple[int, str]:
    """Run ``serve`` to its end; (exit code, stdout)."""
    proc = subprocess.run(
        [str(TOOLROUTE), "serve", "--config", str(path)],
        input=text,
        stdin=stdin,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        check=False,
    )
    assert "Fatal Python error" not in proc.stderr, proc.stderr[-2000:]
    return proc.returncode, proc.stdout or ""


def test_serve_with_stdin_on_the_null_device_ends_cleanly_at_its_eof(tmp_path: Path) -> None:
    code, out = serve(write_config(tmp_path, {}), subprocess.DEVNULL, subprocess.PIPE, None)
    assert code == 0 and out == ""


def test_serve_with_stdout_on_the_null_device_reads_its_requests_and_ends(tmp_path: Path) -> None:
    requests = json.dumps(RAW_INITIALIZE) + "\n"
    code, _ = serve(write_config(tmp_path, {}), None, subprocess.DEVNULL, requests)
    assert code == 0
