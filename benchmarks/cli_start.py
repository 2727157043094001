"""How long ``toolroute`` takes to start: the wall time of a few commands that do little
(``--help``, one command's ``--help``, ``strategies``), and how many modules each imports.

    nice -n 10 python -m benchmarks.cli_start [--runs 15] [--before /other/checkout/src]
        [--command "route --help"]... [--out F]

Each run is a fresh interpreter, ``python -m toolroute.cli ARGS`` with this checkout's src on
PYTHONPATH (so ``--before`` can put another checkout's, e.g. main's, there instead); the
table gives the median and the fastest of ``--runs``. With ``--before``, the two trees take
turns run by run, so both see the same machine load, and the table adds the ratio of the
medians (after / before). Modules are counted once per command from ``python -X importtime``.
Writes a markdown table (benchmarks/results/cli_start.md with --out).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
COMMANDS = ("--help", "route --help", "serve --help", "connect --help", "strategies")


def _argv(command: str) -> list[str]:
    return [sys.executable, "-m", "toolroute.cli", *command.split()]


def _env(src: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(src)}


def _once(command: str, src: Path) -> float:
    start = time.perf_counter()
    subprocess.run(_argv(command), env=_env(src), check=True, capture_output=True, timeout=120)
    return time.perf_counter() - start


def _modules(command: str, src: Path) -> int:
    argv = [sys.executable, "-X", "importtime", *_argv(command)[1:]]
    done = subprocess.run(argv, env=_env(src), check=True, capture_output=True, text=True)
    return sum(line.startswith("import time:") for line in done.stderr.splitlines()) - 1


def measure(commands: list[str], trees: dict[str, Path], runs: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for command in commands:
        times: dict[str, list[float]] = {name: [] for name in trees}
        for src in trees.values():  # a warm-up run each: the page cache, .pyc files
            _once(command, src)
        for _ in range(runs):
            for name, src in trees.items():
                times[name].append(_once(command, src))
        row: dict[str, object] = {"command": f"toolroute {command}"}
        for name, src in trees.items():
            row[f"{name} median s"] = round(statistics.median(times[name]), 3)
            row[f"{name} fastest s"] = round(min(times[name]), 3)
            row[f"{name} modules"] = _modules(command, src)
        if "before" in trees:
            ratio = statistics.median(times["after"]) / statistics.median(times["before"])
            row["after / before"] = round(ratio, 2)
        rows.append(row)
    return rows


def markdown(rows: list[dict[str, object]], runs: int, before: Path | None) -> str:
    heads = list(rows[0])
    lines = [
        f"# toolroute start-up: {runs} runs per command, fresh interpreter each"
        + (f" (before: {before})" if before else ""),
        "",
        f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores",
        "",
        "| " + " | ".join(heads) + " |",
        "|" + "---|" * len(heads),
    ]
    lines += ["| " + " | ".join(str(r[h]) for h in heads) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--before", type=Path, default=None, help="another checkout's src")
    parser.add_argument(
        "--command", action="append", default=None, help="arguments after toolroute"
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    trees = {"after": SRC} if args.before is None else {"before": args.before, "after": SRC}
    table = markdown(
        measure(args.command or list(COMMANDS), trees, args.runs), args.runs, args.before
    )
    print(table, end="")
    if args.out is not None:
        args.out.write_text(table, encoding="utf-8")


if __name__ == "__main__":
    main()
