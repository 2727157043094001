"""The MCP conformance suite's frozen 2026-07-28 requirement set through the gateway, with the
python-sdk's own everything-server behind it, per downstream transport and exposure mode.

Suite: ``@modelcontextprotocol/conformance`` 0.2.0-alpha.12, ``server --requirements
2026-07-28`` (the scenarios that revision requires; extension and pending scenarios also run
and are listed, not scored). Server: ``examples/servers/everything-server`` of the ``mcp``
2.3.0 sdist on PyPI (MIT; ``bash .ci/run`` unpacks it into .toolroute/everything-server after
checking the sdist's sha256). ``direct`` is the suite against that server over streamable HTTP;
``all``, ``meta`` and ``bind`` are ``toolroute serve --transport http`` in front of it with that
``expose`` setting, the server reached over streamable HTTP or over stdio (the downstream).
In the routed modes a scenario that calls a tool by its plain name is not applicable (there a
tool runs through ``call_tool``); the table shows the suite's own verdict in brackets.

The gate is tests/conformance/test_conformance.py; ``python -m benchmarks.conformance_2026``
writes the table the docs quote.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.conftest import NPM_MODULES, REPO, TOOLROUTE
from tests.helpers.conformance import scenario_checks, scenario_table, stop_all
from tests.helpers.net import free_port, wait_port

NODE = NPM_MODULES / ".bin" / "node"
SUITE = (
    REPO / ".toolroute" / "conformance-2026" / "node_modules" / "@modelcontextprotocol"
    / "conformance" / "dist" / "index.js"
)  # fmt: skip
EVERYTHING = REPO / ".toolroute" / "everything-server"
STDIO_MAIN = "from mcp_everything_server.server import mcp; mcp.run('stdio')"
"""``python -c STDIO_MAIN``, with :data:`EVERYTHING` on its path: the server over stdio."""
ROUTED_NOT_APPLICABLE = re.compile(
    r"^(tools-call-|tools-list$|json-schema-|input-required-result-)"
)
"""Scenarios that list tools or call one by its plain name; in routed modes a tool runs through
call_tool. ``input-required-result-non-tool-request`` (prompts/get) stays applicable."""
APPLICABLE_EVERYWHERE = {"input-required-result-non-tool-request"}


def missing() -> str | None:
    """What this machine lacks to run the suite (None: nothing)."""
    if not NODE.is_file() or not SUITE.is_file() or not EVERYTHING.is_dir():
        return (
            "node 22, the 2026 conformance suite or the everything-server is missing: "
            "bash .ci/run installs them"
        )
    return None


def texts(checks: list[dict[str, Any]]) -> list[str] | None:
    """The text content of the result the scenario saw (None: it recorded no result)."""
    for c in checks:
        result = (c.get("details") or {}).get("result")
        if isinstance(result, dict) and isinstance(result.get("content"), list):
            return [x.get("text", "") for x in result["content"] if isinstance(x, dict)]
    return None


ECHOES_THE_REQUEST = {
    "tools-call-with-progress": "its text is the request's progress token: the gateway's own "
    "downstream (it maps the notifications back to the caller's token)",
}
"""Scenarios whose result quotes the request itself, so through the gateway it differs."""


def verdict(
    checks: list[dict[str, Any]], direct: list[dict[str, Any]] | None, scenario: str = ""
) -> tuple[bool, str]:
    """(passed, cell): no FAILURE check and, through the gateway, the result's text is the one
    the suite saw from the server directly (the suite accepts any error text, so an error made
    by the gateway would otherwise pass)."""
    failed = [c for c in checks if c.get("status") == "FAILURE"]
    if failed:
        return False, "fail: " + "; ".join(
            str(c.get("errorMessage") or c.get("id"))[:80] for c in failed[:2]
        )
    if direct is None or texts(direct) is None:
        return True, "pass"
    if texts(checks) != texts(direct):
        if scenario in ECHOES_THE_REQUEST:
            return True, f"pass ({ECHOES_THE_REQUEST[scenario]})"
        return False, "fail: not the server's own content"
    return True, "pass (own content)"


def routed_applicable(scenario: str) -> bool:
    if scenario in APPLICABLE_EVERYWHERE:
        return True
    return not ROUTED_NOT_APPLICABLE.match(scenario) and scenario != "server-stateless"


@contextmanager
def serving(mode: str, downstream: str, tmp: Path) -> Iterator[str]:
    """The URL under test; every process started here is stopped on exit."""
    procs: list[subprocess.Popen[bytes]] = []
    path = [str(EVERYTHING), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}  # the server's package, importable
    with (tmp / f"{mode}-{downstream}.log").open("wb") as log:

        def start(cmd: list[str], port: int) -> None:
            procs.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env))
            wait_port(port, procs[-1], 180)

        try:
            server_port = free_port()
            if mode == "direct" or downstream == "http":
                start([sys.executable, "-m", "mcp_everything_server", "--port", str(server_port),
                       "--log-level", "WARNING"], server_port)  # fmt: skip
            if mode == "direct":
                yield f"http://127.0.0.1:{server_port}/mcp"
                return
            spec: dict[str, Any] = (
                {"url": f"http://127.0.0.1:{server_port}/mcp"}
                if downstream == "http"
                else {
                    "command": sys.executable,
                    "args": ["-c", STDIO_MAIN],
                    "env": {"PYTHONPATH": str(EVERYTHING)},
                }
            )
            config = tmp / f"servers-{mode}-{downstream}.json"
            config.write_text(json.dumps({"mcpServers": {"everything": spec}}))
            store = tmp / f"store-{mode}-{downstream}"
            config.with_name("toolroute.toml").write_text(
                f'[toolroute]\nstore = "{store}"\nexpose = "{mode}"\n'
            )
            port = free_port()
            start([str(TOOLROUTE), "serve", "--config", str(config), "--transport", "http",
                   "--port", str(port)], port)  # fmt: skip
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            stop_all(procs)


def run_suite(url: str, out_dir: Path) -> tuple[dict[str, list[dict[str, Any]]], set[str]]:
    """Every scenario's checks by name, and the names the suite says are not scored."""
    done = subprocess.run(
        [str(NODE), str(SUITE), "server", "--url", url, "--requirements", "2026-07-28",
         "-o", str(out_dir)],
        check=False, capture_output=True, text=True, timeout=1200,
        env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    tail = done.stdout.partition("Not scored")[2]
    unscored = set(re.findall(r"^\s*\S+\s+([\w-]+) \((?:extension|pending)\)", tail, re.M))
    return scenario_checks(out_dir), unscored


def columns(modes: list[str], downstreams: list[str]) -> list[tuple[str, str]]:
    """(mode, downstream) per suite run: ``direct`` once, every other mode per downstream."""
    out = [(m, "http") for m in modes if m == "direct"]
    return out + [(m, s) for m in modes if m != "direct" for s in downstreams]


def evaluate(runs: list[tuple[str, str]]) -> dict[str, Any]:
    """The suite once per (mode, downstream): every scenario's cell per column, the scenarios
    it does not score, and per column how many were scored, applicable and passed."""
    table: dict[str, dict[str, dict[str, Any]]] = {}
    unscored: set[str] = set()
    seen_direct: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="toolroute-conformance-2026-") as d:
        tmp = Path(d)
        for mode, downstream in runs:
            column = mode if mode == "direct" else f"{mode}/{downstream}"
            with serving(mode, downstream, tmp) as url:
                results, skipped = run_suite(url, tmp / f"results-{column.replace('/', '-')}")
            unscored |= skipped
            if mode == "direct":
                seen_direct = results
            for scenario, checks in results.items():
                direct = None if mode == "direct" else seen_direct.get(scenario)
                ok, cell = verdict(checks, direct, scenario)
                applicable = mode in ("direct", "all") or routed_applicable(scenario)
                table.setdefault(scenario, {})[column] = {
                    "passed": ok,
                    "applicable": applicable,
                    "cell": cell if applicable else f"n/a [{cell.split(':')[0]}]",
                }
    names = [m if m == "direct" else f"{m}/{s}" for m, s in runs]
    summary = {}
    for name in names:
        cells = [row[name] for s, row in table.items() if name in row and s not in unscored]
        applicable = [c for c in cells if c["applicable"]]
        summary[name] = {
            "scored": len(cells),
            "applicable": len(applicable),
            "passed": sum(c["passed"] for c in applicable),
        }
    return {"columns": names, "scenarios": table, "unscored": sorted(unscored), "summary": summary}


def passed(report: dict[str, Any]) -> bool:
    """The gate: every column scored something, and passed every applicable scenario."""
    summary = report["summary"].values()
    return all(s["passed"] == s["applicable"] and s["scored"] > 0 for s in summary)


def markdown(report: dict[str, Any], command: str) -> str:
    names = report["columns"]
    lines = [
        "# MCP conformance 2026-07-28 through the gateway",
        "",
        f"Command: `{command}`",
        "",
        "Suite: `@modelcontextprotocol/conformance` 0.2.0-alpha.12, `server --requirements"
        " 2026-07-28`, node 22. Server: the python-sdk everything-server of the `mcp` 2.3.0 sdist."
        " `direct` = that server over streamable HTTP; `MODE/http` and `MODE/stdio` ="
        " `toolroute serve --transport http` with `expose = MODE`, the server behind it over"
        " streamable HTTP or stdio. n/a = the scenario lists or calls tools by plain name, which"
        " routed modes run through `call_tool` (the suite's own verdict in brackets). Scenarios"
        " the suite does not score for 2026-07-28 (extensions, pending) are listed, not counted.",
        "",
        "| column | scored scenarios | applicable | passed |",
        "|---|---|---|---|",
    ]
    for name in names:
        s = report["summary"][name]
        lines.append(f"| {name} | {s['scored']} | {s['applicable']} | {s['passed']} |")
    unscored = set(report["unscored"])
    lines += scenario_table(
        names, report["scenarios"], lambda s: s + (" (not scored)" if s in unscored else "")
    )
    return "\n".join(lines) + "\n"
