from __future__ import annotations

import os

import numpy as np
import pytest

from tests.conftest import HashingEmbedder
from toolroute.embed.workers import ProcessEmbedder
from toolroute.errors import ConfigError, EmbedError


def _pid_embedder() -> HashingEmbedder:
    class Pid(HashingEmbedder):
        def embed_spans(self, text: str, spans: list[tuple[int, int]]) -> np.ndarray:
            rows = self.embed([text, *(text[a:b] for a, b in spans)])
            rows[:, 0] = os.getpid()  # which process answered
            return rows

    return Pid()


def test_a_process_pool_embeds_what_the_model_embeds_in_process() -> None:
    texts = ["what time is it in Tokyo", "read a file", ""]
    with ProcessEmbedder(2, HashingEmbedder) as pool:
        assert (pool.model_id, pool.dim) == (HashingEmbedder.model_id, HashingEmbedder.dim)
        np.testing.assert_array_equal(pool.embed(texts), HashingEmbedder().embed(texts))


def test_span_embeddings_run_in_a_worker_process() -> None:
    with ProcessEmbedder(1, _pid_embedder) as pool:
        out = pool.embed_spans("convert a file and mail it", [(0, 14), (19, 26)])
    assert out.shape == (3, HashingEmbedder.dim)
    assert int(out[0, 0]) != os.getpid()


def test_a_pool_needs_a_worker() -> None:
    with pytest.raises(EmbedError, match=">= 1"):
        ProcessEmbedder(0, HashingEmbedder)


def test_a_malformed_worker_count_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolroute.config import GatewayConfig
    from toolroute.gateway.ops.app import gateway_embedder

    monkeypatch.setenv("TOOLROUTE_EMBED_WORKERS", "two")
    with pytest.raises(ConfigError, match="TOOLROUTE_EMBED_WORKERS"):
        gateway_embedder(GatewayConfig(servers={}), "http")


_KILLED_PARENT = """
import os, sys
from tests.conftest import HashingEmbedder
from toolroute.embed.workers import ProcessEmbedder
pool = ProcessEmbedder(2, HashingEmbedder)
print(" ".join(str(p) for p in pool._pool._processes), flush=True)
sys.stdin.read()  # until killed
"""


def test_workers_end_when_the_gateway_that_started_them_is_killed() -> None:
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import REPO

    parent = subprocess.Popen(
        [sys.executable, "-c", _KILLED_PARENT],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    workers: list[int] = []
    try:
        assert parent.stdout is not None
        workers = [int(p) for p in parent.stdout.readline().split()]
        assert len(workers) == 2
        parent.send_signal(signal.SIGKILL)  # no shutdown runs: only the workers can notice
        parent.wait(timeout=30)
        deadline = time.monotonic() + 60
        alive = workers
        while alive and time.monotonic() < deadline:
            alive = [w for w in alive if _running(w)]
            time.sleep(0.05)
        assert not alive, f"workers outlived the killed gateway: {alive}"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait(timeout=10)
        for pipe in (parent.stdin, parent.stdout):
            if pipe is not None:
                pipe.close()
        for w in workers:
            if _running(w):
                os.kill(w, signal.SIGKILL)


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie is reaped by init, not by us)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
