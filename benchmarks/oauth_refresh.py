"""OAuth refresh: what refreshing a url server's access token adds to the call that needs it.

    python -m benchmarks.oauth_refresh [--calls 100] [--warmup 10] [--out F]

Starts the OAuth-protected MCP server and its authorization server of the tests
(tests/fixtures/oauth_server.py, both on loopback), signs in as ``toolroute auth`` does (the
authorize redirect followed by httpx in place of a browser), and opens the gateway's
downstream downstreams on it with the stored token. Then times, in alternating batches (the order
rotates each round, so machine noise hits both alike), ``echo`` through the downstreams:

- **plain**: the token is valid, sent as it is;
- **refresh**: the token is marked expired just before the call, so the call first refreshes
  it (one POST to the authorization server's token endpoint, the rotated tokens encrypted and
  written to the store) and then goes out with the new one.

Every result is checked, and the authorization server's refresh count must equal the refreshed
calls. Prints a markdown table (p50/p95/mean) and the refresh's added p50 as a ratio of the plain
call measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
from cryptography.fernet import Fernet

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "oauth_server.py"


def _ports(proc: subprocess.Popen[bytes]) -> tuple[int, int]:
    assert proc.stdout is not None
    fd, buf = proc.stdout.fileno(), b""
    while buf.count(b"\n") < 2:
        ready, _, _ = select.select([fd], [], [], 60)
        if not ready:
            raise TimeoutError("the OAuth fixture did not start in 60 s")
        chunk = os.read(fd, 4096)
        if not chunk:
            raise RuntimeError("the OAuth fixture exited")
        buf += chunk
    as_line, mcp_line = buf.decode().splitlines()[:2]
    return int(as_line.split()[1]), int(mcp_line.split()[1])


def _browse(url: str) -> None:
    """The operator's browser: follow the authorize redirect to toolroute's loopback port."""
    threading.Thread(target=httpx2.get, args=(url,), kwargs={"follow_redirects": True}).start()


def _summary(samples: list[float]) -> tuple[float, float, float]:
    ms = sorted(s * 1000 for s in samples)
    p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
    return statistics.median(ms), p95, statistics.fmean(ms)


async def measure(calls: int, warmup: int, store: Path) -> dict[str, Any]:
    from toolroute.config import load_config
    from toolroute.downstream.signin import sign_in
    from toolroute.gateway.ops.app import running_downstreams
    from toolroute.store import Store

    proc = subprocess.Popen(
        [sys.executable, str(FIXTURE)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        bufsize=0,
    )
    try:
        as_port, mcp_port = _ports(proc)
        url = f"http://127.0.0.1:{mcp_port}/mcp"
        config = store / "servers.json"
        config.write_text(json.dumps({"mcpServers": {"prot": {"url": url}}}))
        (store / "toolroute.toml").write_text(f'[toolroute]\nstore = "{store / "db"}"\n')
        cfg = load_config(config)
        spec = cfg.servers["prot"]
        with anyio.fail_after(60):
            await sign_in("prot", spec, store / "db", show=_browse, open_browser=False)  # type: ignore[arg-type]
        samples: dict[str, list[float]] = {"plain": [], "refresh": []}
        # a serving gateway holds its store open (the router's): without that connection the
        # credentials' every close would be the last one, and checkpoint the WAL to disk
        gateway_store = Store(store / "db")
        async with running_downstreams(cfg) as downstreams:
            down = downstreams["prot"]
            assert down.status == "up" and down.auth is not None, down.error

            async def one(kind: str) -> float:
                provider = down.auth.provider if down.auth is not None else None
                assert provider is not None
                if kind == "refresh":
                    provider.context.token_expiry_time = 1.0  # long past (0 reads as "no expiry")
                start = time.perf_counter()
                result, _ = await down.call_tool("echo", {"text": kind})
                took = time.perf_counter() - start
                assert not result.is_error and f"echo: {kind}" in str(result.content), result
                return took

            for _ in range(warmup):
                for kind in samples:
                    await one(kind)
            before = httpx2.get(f"http://127.0.0.1:{as_port}/admin/stats").json()["refreshes"]
            batch, order = 10, ["plain", "refresh"]
            for r in range(0, calls, batch):
                for kind in order if (r // batch) % 2 == 0 else order[::-1]:
                    for _ in range(min(batch, calls - r)):
                        samples[kind].append(await one(kind))
            after = httpx2.get(f"http://127.0.0.1:{as_port}/admin/stats").json()["refreshes"]
            assert after - before == len(samples["refresh"]), (before, after)
            # the store's part of a refresh, alone: encrypt the rotated tokens and write them
            provider = down.auth.provider if down.auth is not None else None
            assert provider is not None and provider.context.current_tokens is not None
            storage, tokens = provider.context.storage, provider.context.current_tokens
            samples["store"] = []
            for _ in range(calls):
                start = time.perf_counter()
                await storage.set_tokens(tokens)
                samples["store"].append(time.perf_counter() - start)
        gateway_store.close()
        return {k: _summary(v) for k, v in samples.items()}
    finally:
        proc.terminate()
        proc.wait(20)
        if proc.stdout is not None:
            proc.stdout.close()


def render(result: dict[str, Any], calls: int, warmup: int, runtime_s: float) -> str:
    plain, refresh, store = result["plain"], result["refresh"], result["store"]
    lines = [
        "| call through the downstreams | calls | p50 ms | p95 ms | mean ms |",
        "|---|---:|---:|---:|---:|",
        f"| plain (valid token) | {calls} | {plain[0]:.2f} | {plain[1]:.2f} | {plain[2]:.2f} |",
        f"| refresh first (expired token) | {calls} | {refresh[0]:.2f} | {refresh[1]:.2f}"
        f" | {refresh[2]:.2f} |",
        f"| the store's part: encrypt + write the rotated tokens | {calls} | {store[0]:.2f}"
        f" | {store[1]:.2f} | {store[2]:.2f} |",
        "",
        f"- the refresh adds p50 +{refresh[0] - plain[0]:.2f} ms, p95 +{refresh[1] - plain[1]:.2f}"
        f" ms: {(refresh[0] - plain[0]) / plain[0]:.2f}x one plain call (p50)",
        "- a refresh is one POST to the token endpoint (loopback) plus the rotated tokens"
        " encrypted (Fernet) and written to the SQLite store in one transaction (the store held"
        " open beside, as a serving gateway's router holds it)",
        f"- {calls} timed calls per kind after {warmup} warm-up pairs, alternating batches of 10;"
        f" runtime {runtime_s:.1f} s",
        "- `python -m benchmarks.oauth_refresh` (run with `nice -n 10` on a shared 2-core machine;"
        f" load average {os.getloadavg()[0]:.1f} at the end: absolute times are inflated by other"
        " jobs, the ratio to the plain call of the same run is the figure)",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    os.environ.setdefault("TOOLROUTE_SECRET_KEY", Fernet.generate_key().decode())
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        result = anyio.run(measure, args.calls, args.warmup, Path(tmp))
    text = render(result, args.calls, args.warmup, time.perf_counter() - start)
    print(text, end="")
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
