"""Loopback ports for the processes a test starts."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import anyio


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def wait_for_port(
    port: int, proc: subprocess.Popen[bytes], timeout_s: float, log: Path | None = None
) -> None:
    """Until ``proc`` accepts connections on ``port`` (``timeout_s`` at most); fails at once,
    with ``log``'s text when given, if the process exits first."""
    with anyio.fail_after(timeout_s):
        while True:
            try:
                stream = await anyio.connect_tcp("127.0.0.1", port)
            except OSError:
                if proc.poll() is not None:
                    why = log.read_text() if log is not None else f"exit code {proc.returncode}"
                    raise RuntimeError(f"toolroute serve exited: {why}") from None
                await anyio.sleep(0.1)
            else:
                await stream.aclose()
                return


def stop(proc: subprocess.Popen[bytes], timeout_s: float = 20) -> None:
    """Terminate ``proc`` and reap it (killed if it does not exit within ``timeout_s``)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=timeout_s)
