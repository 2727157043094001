"""The interop matrix's downstream servers, started by a fork instead of an import of ``mcp``.

Every stdio gateway the matrix starts (one per client session over stdio, one per command of
the MCP Inspector CLI) starts the four era servers of tests/fixtures/era_server.py, and each of
those spent ~1.5 s of CPU importing the SDK: three quarters of the matrix's CPU. Here one
process (the farm) imports the SDK once and listens on a Unix socket; a server the gateway starts
is :data:`LAUNCH` (``python -I -S``: the standard library only, milliseconds), which hands the
farm its own stdin, stdout and stderr (``SCM_RIGHTS``) with the server's arguments and waits.
The farm forks a child that takes those descriptors as its own and runs era_server.py as
``__main__``: the same server, reading and writing the gateway's pipes itself (no relay), with
fresh module state. The launcher exits with the child's end (the child holds the connection
until it exits), so the gateway sees its server process live and end as before.

    python benchmarks/interop_clients/era_farm.py SOCKET     (serves until terminated)
"""

from __future__ import annotations

import json
import os
import runpy
import signal
import socket
import sys
from pathlib import Path

ERA_SERVER = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "era_server.py"

LAUNCH = """\
import json, os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
socket.send_fds(s, [json.dumps(sys.argv[2:]).encode()], [0, 1, 2])
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1):
    os.dup2(null, fd)
while s.recv(1):
    pass
"""
"""``python -I -S -c LAUNCH SOCKET ARGS...``: era_server.py ARGS, forked by the farm at SOCKET."""


def launch_command(socket_path: Path, *args: str) -> list[str]:
    """The command a gateway starts for era_server.py ``args`` served by the farm."""
    return [sys.executable, "-I", "-S", "-c", LAUNCH, str(socket_path), *args]


def _child(conn: socket.socket) -> None:
    msg, fds, _, _ = socket.recv_fds(conn, 4096, 3)
    for target, fd in zip((0, 1, 2), fds, strict=True):
        os.dup2(fd, target)
        os.close(fd)
    sys.argv = [str(ERA_SERVER), *json.loads(msg)]
    code = 0
    try:
        runpy.run_path(str(ERA_SERVER), run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


def main() -> None:
    # what era_server.py imports, once: a forked child finds it all in sys.modules
    import anyio  # noqa: F401
    import mcp.server.runner  # noqa: F401
    import mcp.server.stdio  # noqa: F401
    import mcp.server.subscriptions  # noqa: F401
    import mcp.types  # noqa: F401

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the children
    path = Path(sys.argv[1])
    path.unlink(missing_ok=True)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(64)
    while True:
        conn, _ = server.accept()
        if os.fork() == 0:
            server.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _child(conn)
        conn.close()


if __name__ == "__main__":
    main()
