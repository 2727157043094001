"""What the gateway's one bounded parse of a stdio frame costs, against the SDK's.

    python benchmarks/frame_parse.py [--rounds 2000] [--out benchmarks/results/frame_parse.md]

Times, per frame and in this process, the stdio transport before (the SDK's
``jsonrpc_message_adapter.validate_json``, then ``json.loads`` again for a refused frame) and
:func:`toolroute.gateway.shell._stdio_server.parse_frame` (pydantic-core's depth-limited JSON
parser, then
the message model on the parsed value; a refused frame's error
reply is built from that one parse). Frames: a ``tools/call`` of ``call_tool`` as agents send
it, the same with 64 kB of arguments, and refused ones: not JSON, nested 1,000 and 100,000
levels deep. The best of five runs of ``--rounds`` parses each, in microseconds per frame
(nan: the old path raised RecursionError, which ended the gateway).
"""

from __future__ import annotations

import argparse
import json
import sys
import timeit
from pathlib import Path

import mcp.types as types

from toolroute.gateway.shell._stdio_server import parse_frame


def _call(arguments: dict[str, object]) -> bytes:
    params = {"name": "call_tool", "arguments": {"name": "time__get_current_time", **arguments}}
    return json.dumps(
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}
    ).encode()


FRAMES = {
    "tools/call (call_tool)": _call({"arguments": {"timezone": "Asia/Tokyo"}}),
    "tools/call, 64 kB of arguments": _call({"arguments": {"text": "x" * 65536}}),
    "not JSON": b"{not json",
    "nested 1,000 deep": b"[" * 1000 + b"]" * 1000,
    "nested 100,000 deep": b"[" * 100_000 + b"]" * 100_000,
}


def _before(frame: bytes) -> str:
    """The stdio transport before: the SDK's parse, then, for a refused frame, ``json.loads``
    of it again to pick the error code and id (a RecursionError there ended the gateway)."""
    try:
        types.jsonrpc_message_adapter.validate_json(frame, by_name=False)
    except ValueError:
        try:
            json.loads(frame)
        except ValueError:
            return "-32700"
        except RecursionError:
            return "RecursionError: the gateway exits"
        return "-32600"
    return "message"


def _best_us(fn: object, frame: bytes, rounds: int) -> float:
    times = timeit.repeat(lambda: fn(frame), number=rounds, repeat=5)  # type: ignore[operator]
    return min(times) / rounds * 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2000)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    rows = [
        "| frame | before (µs) | before answers | parse_frame (µs) | parse_frame answers |",
        "|---|---|---|---|---|",
    ]
    for name, frame in FRAMES.items():
        rounds = max(1, args.rounds // (10 if len(frame) > 10_000 else 1))
        was = _before(frame)
        old = _best_us(_before, frame, rounds) if "exits" not in was else float("nan")
        ours = _best_us(parse_frame, frame, rounds)
        answer = parse_frame(frame)
        said = (
            f"{answer.error.code} ({answer.error.data})"
            if isinstance(answer, types.JSONRPCError)
            else type(answer).__name__
        )
        rows.append(f"| {name} | {old:.1f} | {was} | {ours:.1f} | {said} |")
    text = "\n".join(["# One bounded parse per stdio frame", "", *rows, ""]) + (
        f"\nPython {sys.version.split()[0]}, best of 5 x {args.rounds} parses "
        "(/10 for frames over 10 kB); `python benchmarks/frame_parse.py`.\n"
    )
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
