"""The MCP conformance suite (``@modelcontextprotocol/conformance`` 0.1.16, all 32 server
scenarios) against the gateway, per scenario and exposure mode.

    python benchmarks/conformance.py [--mode direct] [--mode all] [--mode meta] [--mode bind]
                                     [--dual-era] [--before PATH] [--check] [--out F]

Modes: ``direct`` is the suite against the test server itself (tests/fixtures/
conformance_server.py over streamable HTTP), to show the server is good; ``all``, ``meta`` and
``bind`` are ``toolroute serve --transport http`` in front of that server over stdio, with that
``expose`` setting; with ``--dual-era`` the server behind the gateway serves both protocol eras (as
any server on the SDK 2.x does) while its code asks the client the 2025 way. A scenario counts as
passed when the suite reports no failed check and, where the scenario returns what the server said,
that content is the test server's own (the suite accepts any error text, so an error from the
gateway itself would pass it). In the routed modes (meta, bind) a scenario that calls a tool by its
plain name is not applicable — there a tool runs through ``call_tool`` — and the table shows the
suite's verdict in brackets; tests/gateway/shell/test_relay_processes.py runs the same progress,
logging, sampling and elicitation through ``call_tool``.

Needs node >= 22 and the suite in .toolroute/npm (bash .ci/run installs both). ``--check`` exits 1
unless pass-through passes 32/32 and every applicable routed scenario passes. ``--before PATH``
adds a ``before`` column: the ``toolroute`` executable at PATH (a checkout without the relay,
e.g. main's) in its default routed mode, every scenario counted.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
NPM = REPO / ".toolroute" / "npm" / "node_modules"
NODE = NPM / ".bin" / "node"
SUITE = NPM / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
FIXTURE = REPO / "tests" / "fixtures" / "conformance_server.py"
TOOLROUTE = str(Path(sys.executable).with_name("toolroute"))
OUT = REPO / "benchmarks" / "results" / "conformance.md"

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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_port(port: int, proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"nothing listened on port {port} within {timeout_s} s")


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
    log = (tmp / f"{mode}.log").open("wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_port(port, proc, 180)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


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
    found: dict[str, list[dict[str, Any]]] = {}
    for checks in sorted(out_dir.glob("server-*/checks.json")):
        name = checks.parent.name.removeprefix("server-").rsplit("-", 6)[0]
        found[name] = json.loads(checks.read_text())
    return found


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
    modes: list[str], toolroute: str, before: str | None, dual_era: bool = False
) -> dict[str, Any]:
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", action="append", choices=["direct", "all", "meta", "bind"])
    parser.add_argument("--toolroute", default=TOOLROUTE, help="toolroute executable to test")
    parser.add_argument("--before", help="toolroute executable without the relay (before column)")
    parser.add_argument(
        "--dual-era", action="store_true", help="the server behind the gateway serves both eras"
    )
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--check", action="store_true", help="exit 1 unless the targets hold")
    args = parser.parse_args()
    if not NODE.is_file() or not SUITE.is_file():
        print("node 22 or the conformance suite is missing: bash .ci/run installs them")
        return 2
    modes = (args.mode or ["direct", "all", "meta"]) + (["before"] if args.before else [])
    report = evaluate(modes, args.toolroute, args.before, args.dual_era)
    command = "python benchmarks/conformance.py " + " ".join(
        f"--mode {m}" for m in modes if m != "before"
    )
    if args.dual_era:
        command += " --dual-era"
    if args.before:
        command += f" --before {args.before}"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(markdown(report, command))
    args.out.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    for mode, s in report["summary"].items():
        print(f"{mode}: {s['passed']}/{s['applicable']} applicable scenarios passed")
    if args.check:
        ok = all(
            s["passed"] == s["applicable"] for m, s in report["summary"].items() if m != "before"
        )
        if "all" in report["summary"]:
            ok = ok and report["summary"]["all"]["passed"] == 32
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
