"""The operator's status page of `toolroute serve --transport http`, against a real gateway
process with a real downstream server (mcp-server-time) and one that cannot start; with
tokens, the browser's way in (a login form, a session cookie, `toolroute status --open`)."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request

import pytest

from tests.helpers.status import Served

pytestmark = pytest.mark.integration


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


@pytest.fixture
def gateway_url(status_gateway: Served) -> str:
    return status_gateway.base


def test_status_page_shows_servers_tools_statistics_and_decisions(gateway_url: str) -> None:
    base = gateway_url
    code, body = _get(f"{base}/status.json")
    assert code == 200
    snap = json.loads(body)
    servers = {s["name"]: s for s in snap["servers"]}
    assert servers["time"]["status"] == "up"
    assert servers["broken"]["status"] == "down" and servers["broken"]["error"]
    tools = {t["name"]: t for t in servers["time"]["tools"]}
    assert tools["get_current_time"]["calls"] == 1
    assert tools["get_current_time"]["failed"] == 0
    assert tools["get_current_time"]["latency_s"] is not None
    assert servers["time"]["calls"] == 1
    (event,) = snap["events"]
    assert "time__get_current_time" in event["active"]
    assert event["candidates"][0]["score"] > 0
    code, page = _get(f"{base}/status")
    assert code == 200 and "<h1>toolroute gateway</h1>" in page
    assert "get_current_time" in page and "down" in page and event["query_hash"] in page


def test_every_column_of_the_status_page_is_named_for_a_person_and_explained_on_hover(
    gateway_url: str,
) -> None:
    _, page = _get(f"{gateway_url}/status")
    headers = re.findall(r"<th([^>]*)>([^<]*)</th>", page)
    assert len(headers) == 9 + 7 + 7  # servers, tools, routing decisions
    for attributes, name in headers:
        assert re.fullmatch(r' title="[^"]{20,}"', attributes), name
    names = {name for _, name in headers}
    assert {"failure rate", "success rate", "tokens shown (summaries + schemas)"} <= names
    assert "P(fail)" not in page and "p1 + p2" not in page
    tip = dict((n, a) for a, n in headers)["failure rate"]
    assert "moving average" in tip and "15%" in tip  # what it is computed from


def test_status_page_applies_the_mcp_endpoints_host_and_origin_rules(gateway_url: str) -> None:
    base = gateway_url
    assert _get(f"{base}/status", {"Host": "evil.example:80"})[0] == 421
    assert _get(f"{base}/status.json", {"Origin": "http://evil.example"})[0] == 403
    assert _get(f"{base}/status", {"Origin": base})[0] == 200
