"""A stdio relay in front of an MCP server that fixes when its tools/list arrives, for
benchmarks/startup.py: it passes every line through, but holds the last page of the server's
first listing until the file ``--after`` exists (then ``--lag`` seconds more), and once that
page is passed on writes the wall-clock time to ``--mark``. Two servers behind two relays
thus list in a chosen order, and the benchmark reads when each listing reached the gateway.

    python benchmarks/_listing_gate.py --mark F [--after G] [--lag S] -- COMMAND ARGS...

Standalone on purpose (no toolroute import): the gateway spawns it as a plain script.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any


def _parse(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


def _pump_in(child_in: IO[bytes], listing_ids: set[Any]) -> None:
    """The gateway's lines to the server, noting the ids of its tools/list requests."""
    for line in sys.stdin.buffer:
        msg = _parse(line)
        if isinstance(msg, dict) and msg.get("method") == "tools/list":
            listing_ids.add(msg.get("id"))
        child_in.write(line)
        child_in.flush()
    child_in.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--mark", type=Path, required=True)
    ap.add_argument("--after", type=Path, default=None)
    ap.add_argument("--lag", type=float, default=0.0)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    listing_ids: set[Any] = set()
    threading.Thread(target=_pump_in, args=(child.stdin, listing_ids), daemon=True).start()
    out = sys.stdout.buffer
    marked = False
    for line in child.stdout:
        msg = _parse(line)
        last_page = (
            not marked
            and isinstance(msg, dict)
            and msg.get("id") in listing_ids
            and isinstance(msg.get("result"), dict)
            and msg["result"].get("nextCursor") is None
        )
        if last_page and args.after is not None:
            while not args.after.exists():
                time.sleep(0.02)
            time.sleep(args.lag)
        out.write(line)
        out.flush()
        if last_page:
            marked = True
            tmp = args.mark.with_suffix(".tmp")
            tmp.write_text(repr(time.time()))
            tmp.replace(args.mark)
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
