"""A gateway that does not route (pass-through, ``expose = "all"``) loads no embedding model,
no tokenizer, and none of what only routing, code mode or sampling strategies use: a real
`toolroute serve` process in front of mcp-server-time, driven by the official client, with its
memory map read from /proc after the call."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests.helpers.gateways import GatewayProcess, write_config

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]


def test_pass_through_serves_and_calls_without_loading_a_model(tmp_path: Path) -> None:
    config = write_config(tmp_path, str(tmp_path / "store"), expose="all")
    gateway = GatewayProcess(config)
    try:

        async def main() -> str:
            with anyio.fail_after(120):
                await gateway.ready()
                async with Client(gateway.url) as c:
                    names = [t.name for t in (await c.list_tools()).tools]
                    assert "get_current_time" in names, names
                    r = await c.call_tool("get_current_time", {"timezone": "Asia/Tokyo"})
                    assert not r.is_error, r.content
                    return r.content[0].text  # type: ignore[union-attr]

        assert "Asia/Tokyo" in anyio.run(main)
        maps = Path(f"/proc/{gateway.proc.pid}/maps").read_text()
        assert "onnxruntime" not in maps  # the embedding model's runtime
        assert "_toktok" not in maps and "tokenizers.abi3" not in maps  # nor a tokenizer
        assert "pydantic_monty" not in maps  # code mode's sandbox (code mode is off)
        assert "numpy/random" not in maps  # posterior sampling's generator (no routing)
    finally:
        gateway.stop()
