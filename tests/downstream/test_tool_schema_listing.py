"""A downstream whose tools/list holds one tool with an input schema that is not an object's:
that tool is skipped by name, the server's other tools are indexed and callable."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.faults import assert_others_fine, config, raw, run_gateway, text
from toolroute.downstream.servers import Downstreams
from toolroute.gateway.shell.server import Gateway

pytestmark = pytest.mark.integration


def test_a_tool_whose_input_schema_is_not_an_object_is_skipped_and_its_server_stays(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = config(tmp_path, {"bad": raw("bad-schema")})

    async def body(gw: Gateway, downstreams: Downstreams) -> None:
        assert [t.name for t in gw.shared.router.catalog.server("bad").tools] == ["echo"]
        r = await gw.calls.checked("bad__echo", {"text": "kept"})
        assert not r.is_error and text(r) == "kept"
        await assert_others_fine(gw)

    run_gateway(cfg, body)
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    broken = [w for w in warned if "bad" in w and "'broken'" in w]
    scalar = [w for w in warned if "bad" in w and "'scalar'" in w]
    assert len(broken) == 1 and "inputSchema" in broken[0], warned
    assert len(scalar) == 1 and "not an object" in scalar[0], warned
