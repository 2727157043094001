"""The MCP conformance suite (``@modelcontextprotocol/conformance`` 0.1.16, all 32 server
scenarios of protocol 2025-11-25) against the gateway, per scenario and exposure mode.

Modes: ``direct`` is the suite against the test server itself (tests/fixtures/
conformance_server.py over streamable HTTP), to show the server is good; ``all``, ``meta`` and
``bind`` are ``toolroute serve --transport http`` in front of that server over stdio, with that
``expose`` setting; ``before`` is another ``toolroute`` executable (an older checkout) in its
default routed mode. With ``dual_era`` the server behind the gateway serves both protocol eras
(as any server on the SDK 2.x does) while its code asks the client the 2025 way.

A scenario counts as passed when the suite reports no failed check and, where the scenario
returns what the server said, that content is the test server's own (the suite accepts any
error text, so an error from the gateway itself would pass it). In the routed modes (meta,
bind) a scenario that calls a tool by its plain name is not applicable — there a tool runs
through ``call_tool`` — and the table shows the suite's verdict in brackets;
tests/gateway/shell/test_relay_processes.py runs the same progress, logging, sampling and
elicitation through ``call_tool``.

Needs node >= 22 and the suite in .toolroute/npm (``bash .ci/run`` installs both). The gate is
tests/conformance/test_conformance.py; ``python -m benchmarks.conformance`` writes the table
the docs quote.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.conftest import NPM_MODULES, REPO, TOOLROUTE
from tests.helpers.net import free_port, stop, wait_port

NODE = NPM_MODULES / ".bin" / "node"
SUITE = NPM_MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
FIXTURE = REPO / "tests" / "fixtures" / "conformance_server.py"
SCENARIOS = 32
"""Server scenarios of ``--suite all``: pass-through must pass every one."""

SIMPLE_TEXT = "This is a simple text response for testing."
ERROR_TEXT = "This tool intentionally returns an error for testing"
BY_TOOL_NAME = {
    "tools-call-simple-text": "test_simple_text",
    "tools-call-image": "test_image_content",
    "tools-call-audio": "test_audio_content",
    "tools-call-embedded-resource": "test_embedded_resource",
    "tools-call-mixed-content": "test_multiple_content_types",
    "tools-call-with-logging": "test_tool_with_logging",
    "tools-call-error": "test_error_handling",
    "tools-call-with-progress": "test_tool_with_progress",
    "tools-call-sampling": "test_sampling",
    "tools-call-elicitation": "test_elicitation",
    "json-schema-2020-12": "json_schema_2020_12_tool",
    "elicitation-sep1034-defaults": "test_elicitation_sep1034_defaults",
    "elicitation-sep1330-enums": "test_elicitation_sep1330_enums",
    "server-sse-polling": "test_reconnection",
}
"""Scenarios that call (or look up) a tool by its plain name, and that tool."""


def missing() -> str | None:
    """What this machine lacks to run the suite (None: nothing)."""
    if not NODE.is_file() or not SUITE.is_file():
        return "node 22 or the conformance suite is missing: bash .ci/run installs them"
    return None


def _texts(result: Any) -> list[str]:
    return [c.get("text", "") for c in (result or {}).get("content", []) if isinstance(c, dict)]


OWN_CONTENT: dict[str, Callable[[dict[str, Any]], bool]] = {
    "tools-call-simple-text": lambda d: SIMPLE_TEXT in _texts(d.get("result")),
    "tools-call-error": lambda d: ERROR_TEXT in _texts(d.get("result")),
    "tools-call-sampling": lambda d: any(
        t.startswith("LLM response: This is a test response from the client")
        for t in _texts(d.get("result"))
    ),
    "tools-call-elicitation": lambda d: any(
        "testuser" in t and t.startswith("User response: action=accept")
        for t in _texts(d.get("result"))
    ),
    "tools-call-with-progress": lambda d: any(
        "progress executed successfully" in t for t in _texts(d.get("result"))
    ),
    "prompts-get-with-args": lambda d: (
        "Prompt with arguments: arg1='testValue1'" in json.dumps(d.get("messages"))
    ),
    "resources-read-text": lambda d: d.get("uri") == "test://static-text" and d.get("hasText"),
    "completion-complete": lambda d: isinstance(
        (d.get("result") or {}).get("completion", {}).get("values"), list
    ),
}
"""Checks that what came back is the test server's own content (the suite's `details`)."""


def stop_all(procs: list[subprocess.Popen[bytes]]) -> None:
    """Terminate ``procs`` (last started first) and reap them, killing any that lingers."""
    for proc in reversed(procs):
        stop(proc, 10)


@contextmanager
def serving(mode: str, toolroute: str, tmp: Path, dual_era: bool = False) -> Iterator[str]:
    """The URL of the server under test in ``mode``; the process is stopped on exit."""
    port = free_port()
    fixture = [str(FIXTURE), *(["--dual-era"] if dual_era else [])]
    if mode == "direct":
        cmd = [sys.executable, str(FIXTURE), "--http", str(port)]
    else:
        expose = "meta" if mode == "before" else mode
        config = tmp / f"servers-{mode}.json"
        config.write_text(
            json.dumps(
                {"mcpServers": {"conformance": {"command": sys.executable, "args": fixture}}}
            )
        )
        config.with_name("toolroute.toml").write_text(
            f'[toolroute]\nstore = "{tmp / ("store-" + mode)}"\nexpose = "{expose}"\n'
        )
        cmd = [toolroute, "serve", "--config", str(config), "--transport", "http"]
        cmd += ["--port", str(port)]
    with (tmp / f"{mode}.log").open("wb") as log:
        procs = [subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)]
        try:
            wait_port(port, procs[0], 180)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            stop_all(procs)


def scenario_checks(out_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """Every scenario's checks the suite wrote under ``out_dir``, by scenario name."""
    found: dict[str, list[dict[str, Any]]] = {}
    for checks in sorted(out_dir.glob("server-*/checks.json")):
        name = checks.parent.name.removeprefix("server-").rsplit("-", 6)[0]
        found[name] = json.loads(checks.read_text())
    return found


def run_suite(url: str, out_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """Every server scenario's checks, by scenario name."""
    subprocess.run(
        [str(NODE), str(SUITE), "server", "--url", url, "--suite", "all", "-o", str(out_dir)],
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=900,
        env={**os.environ, "NO_COLOR": "1"},
    )
    return scenario_checks(out_dir)


def verdict(scenario: str, checks: list[dict[str, Any]]) -> tuple[bool, str]:
    """(passed, cell text): no FAILURE check, and the server's own content where we can tell."""
    failed = [c for c in checks if c.get("status") == "FAILURE"]
    if failed:
        return False, "fail: " + "; ".join(
            str(c.get("errorMessage") or c.get("id"))[:80] for c in failed[:2]
        )
    own = OWN_CONTENT.get(scenario)
    if own is not None:
        details = next((c.get("details") or {} for c in checks if c.get("details")), {})
        if not own(details):
            return False, "fail: not the server's own content"
        return True, "pass (own content)"
    return True, "pass"


def evaluate(
    modes: list[str],
    toolroute: str = str(TOOLROUTE),
    before: str | None = None,
    dual_era: bool = False,
) -> dict[str, Any]:
    """The suite run once per mode: every scenario's cell per mode, and per mode how many
    scenarios ran, were applicable and passed."""
    table: dict[str, dict[str, dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="toolroute-conformance-") as d:
        tmp = Path(d)
        for mode in modes:
            exe = before if mode == "before" and before else toolroute
            with serving(mode, exe, tmp, dual_era) as url:
                results = run_suite(url, tmp / f"results-{mode}")
            for scenario, checks in results.items():
                ok, cell = verdict(scenario, checks)
                applicable = mode in ("direct", "all", "before") or scenario not in BY_TOOL_NAME
                table.setdefault(scenario, {})[mode] = {
                    "passed": ok,
                    "applicable": applicable,
                    "cell": cell if applicable else f"n/a [{cell.split(':')[0]}]",
                }
    summary = {}
    for mode in modes:
        cells = [row[mode] for row in table.values() if mode in row]
        applicable = [c for c in cells if c["applicable"]]
        summary[mode] = {
            "scenarios": len(cells),
            "applicable": len(applicable),
            "passed": sum(c["passed"] for c in applicable),
        }
    return {"modes": modes, "scenarios": table, "summary": summary, "dual_era": dual_era}


def passed(report: dict[str, Any]) -> bool:
    """The gate: every applicable scenario passes in every mode but ``before``, and
    pass-through (``all``) passes all :data:`SCENARIOS`."""
    ok = all(s["passed"] == s["applicable"] for m, s in report["summary"].items() if m != "before")
    if "all" in report["summary"]:
        ok = ok and report["summary"]["all"]["passed"] == SCENARIOS
    return ok


def markdown(report: dict[str, Any], command: str) -> str:
    modes = report["modes"]
    lines = [
        "# MCP conformance suite through the gateway",
        "",
        f"Command: `{command}`",
        "",
        "Suite: `@modelcontextprotocol/conformance` 0.1.16, `--suite all` (32 server scenarios),"
        " on node 22. Test server: tests/fixtures/conformance_server.py. `direct` = the test"
        " server over streamable HTTP; `all` = `toolroute serve --transport http` with"
        ' `expose = "all"` (pass-through); `meta`/`bind` = routed. n/a = the scenario calls a'
        " tool by its plain name, which routed modes run through `call_tool` (the suite's own"
        " verdict in brackets). `before` = the gateway without the relay (`--before`), default"
        " routed mode."
        + (
            " Behind the gateway the test server serves both protocol eras (`--dual-era`, as an"
            " SDK 2.x server does) and asks the client the 2025 way."
            if report.get("dual_era")
            else ""
        ),
        "",
        "| mode | scenarios | applicable | passed |",
        "|---|---|---|---|",
    ]
    for mode in modes:
        s = report["summary"][mode]
        lines.append(f"| {mode} | {s['scenarios']} | {s['applicable']} | {s['passed']} |")
    lines += scenario_table(modes, report["scenarios"])
    return "\n".join(lines) + "\n"


def scenario_table(
    columns: list[str], scenarios: dict[str, dict[str, Any]], note: Callable[[str], str] = str
) -> list[str]:
    """The per-scenario markdown table (a row per scenario, a cell per column), after a blank
    line; ``note(scenario)`` is the row's label."""
    lines = ["", "| scenario | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for scenario, row in scenarios.items():
        cells = [row.get(c, {}).get("cell", "missing") for c in columns]
        lines.append(f"| {note(scenario)} | " + " | ".join(cells) + " |")
    return lines
