"""A read-only status page for the operator of an HTTP gateway: ``GET /status`` (HTML) and
``GET /status.json``.

It shows what a person opens first when an agent "can't find" a tool: each downstream
server's state (``up``, ``down`` with its error, restarts), its tools with their posted price
and the statistics learned from executed calls (success, latency, calls: EHRR eq. 8), and the
last routing decisions with their explanation (candidates and scores, what was promoted, what
was gated out and why; the query itself is stored only as a hash, seed 002 §5.7).

The routes join the gateway's own Starlette app, inside the same ``HttpGuard`` as ``/mcp``
(:mod:`toolroute.gateway.auth`: Host, Origin and bearer-token checks), so the page follows the
MCP endpoint's rules exactly. Nothing here writes: the page only reads the pool, the router's
catalog and the store.

A client with an allow-list (``[auth.clients.X]`` ``servers``/``tools``) sees only the servers
and tools it may use, as in the ``toolroute://status`` resource, and no routing decisions (they
are every client's). The store is read with a bound (the newest :data:`LAST_EVENTS` events, one
indexed read, the table pruned by the store); the page is rendered in a worker thread.
"""

from __future__ import annotations

import html
import json
import logging
import time
from collections.abc import Callable
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from toolroute.config import SEPARATOR
from toolroute.gateway.access import CLIENT_SCOPE_KEY

__all__ = ["mount_status_page", "status_snapshot"]

log = logging.getLogger(__name__)

LAST_EVENTS = 20


def status_snapshot(
    gateway: Any,
    pool: Any,
    last: int = LAST_EVENTS,
    allowed: Callable[[str], bool] | None = None,
) -> dict[str, Any]:
    """Servers (state, tools, statistics) and the last ``last`` routing decisions, newest first;
    with ``allowed`` (a client's allow-list on ``server__tool``), only what it allows and no
    routing decisions."""
    router = gateway.router
    server_stats, tool_stats = router.store.load_stats()
    outcomes = {(s, t): (ok, bad) for s, t, ok, bad, _ in router.store.outcome_counts()}
    by_id = {s.id: s for s in router.catalog.servers}
    servers = []
    for name, down in pool.servers.items():
        listed = by_id.get(name)
        st = server_stats.get(name)
        tools = []
        for t in listed.tools if listed is not None else ():
            if allowed is not None and not allowed(f"{name}{SEPARATOR}{t.name}"):
                continue
            ts = tool_stats.get((name, t.name))
            ok, bad = outcomes.get((name, t.name), (0, 0))
            tools.append(
                {
                    "name": t.name,
                    "description": " ".join(t.description.split()),
                    "price": t.price,
                    "success": None if ts is None else round(ts.success, 4),
                    "latency_s": None if ts is None else round(ts.latency_s, 4),
                    "calls": ok + bad,
                    "failed": bad,
                }
            )
        if allowed is not None and not tools and not allowed(f"{name}{SEPARATOR}*"):
            continue  # another client's server: not even named
        servers.append(
            {
                "name": name,
                "status": down.status,
                "error": down.error,
                "restarts": down.restarts,
                "success": None if st is None else round(st.success, 4),
                "fail_prob": None if st is None else round(st.fail_prob, 4),
                "latency_s": None if st is None else round(st.latency_s, 4),
                "calls": 0 if st is None else st.calls,
                "tools": tools,
            }
        )
    events = []
    for raw in [] if allowed is not None else router.store.events(last=last)[::-1]:
        try:
            events.append(json.loads(raw))
        except ValueError:
            log.exception("unreadable routing event in the store")
    return {
        "generated_at": time.time(),
        "strategy": gateway.strategy,
        "k": gateway.k,
        "tool_count": router.catalog.tool_count
        if allowed is None
        else sum(len(s["tools"]) for s in servers),
        "servers": servers,
        "events": events,
    }


def mount_status_page(app: Starlette, gateway: Any) -> None:
    """Add ``GET /status`` and ``GET /status.json`` to the gateway's Starlette ``app``."""

    def allowed(request: Request) -> Callable[[str], bool] | None:
        client = gateway.clients.get(request.scope.get(CLIENT_SCOPE_KEY) or "")
        return client.allows if client is not None and client.restricted else None

    async def page(request: Request) -> Response:
        snap = status_snapshot(gateway, gateway.pool, allowed=allowed(request))
        return HTMLResponse(await anyio.to_thread.run_sync(render_html, snap))

    async def data(request: Request) -> Response:
        snap = status_snapshot(gateway, gateway.pool, allowed=allowed(request))
        return Response(
            await anyio.to_thread.run_sync(json.dumps, snap), media_type="application/json"
        )

    app.router.routes.extend(
        [Route("/status", page, methods=["GET"]), Route("/status.json", data, methods=["GET"])]
    )


_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fafafa}
h1{font-size:1.4em;margin:0 0 .2em}h2{font-size:1.15em;margin:1.4em 0 .4em}
table{border-collapse:collapse;background:#fff;margin:.3em 0 1em}
th,td{border:1px solid #ddd;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f0f0f0}td.n{text-align:right;font-variant-numeric:tabular-nums}
.up{color:#126b12;font-weight:600}.down,.stopped{color:#b00020;font-weight:600}
.starting,.restarting{color:#9a6700;font-weight:600}
.muted{color:#777}code{font-size:.95em}details{margin:.2em 0}
"""


def _e(x: object) -> str:
    return html.escape("" if x is None else str(x))


def _num(x: float | None, fmt: str) -> str:
    return '<span class="muted">–</span>' if x is None else format(x, fmt)


def _server_row(s: dict[str, Any]) -> str:
    return (
        f"<tr><td><code>{_e(s['name'])}</code></td>"
        f'<td class="{_e(s["status"])}">{_e(s["status"])}</td>'
        f'<td class="n">{s["restarts"]}</td><td class="n">{len(s["tools"])}</td>'
        f'<td class="n">{s["calls"]}</td><td class="n">{_num(s["success"], ".2f")}</td>'
        f'<td class="n">{_num(s["fail_prob"], ".2f")}</td>'
        f'<td class="n">{_num(s["latency_s"], ".3f")}</td><td>{_e(s["error"])}</td></tr>'
    )


def render_html(snap: dict[str, Any]) -> str:
    """The snapshot as one plain HTML page (no script, no external resource)."""
    servers = snap["servers"]
    up = sum(s["status"] == "up" for s in servers)
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(snap["generated_at"]))
    out = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        '<meta http-equiv="refresh" content="15">',
        f"<title>toolroute status: {up}/{len(servers)} servers up</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>toolroute gateway</h1>",
        f'<p class="muted">{up} of {len(servers)} servers up · {snap["tool_count"]} tools · '
        f"strategy <code>{_e(snap['strategy'])}</code>, k = {snap['k']} · {when} · "
        '<a href="/status.json">JSON</a></p>',
        "<h2>Servers</h2><table><tr><th>server</th><th>state</th><th>restarts</th>"
        "<th>tools</th><th>calls</th><th>success</th><th>P(fail)</th><th>latency s</th>"
        "<th>error</th></tr>",
    ]
    out.extend(_server_row(s) for s in servers)
    out.append("</table><h2>Tools</h2>")
    for s in servers:
        if not s["tools"]:
            out.append(
                f'<p><code>{_e(s["name"])}</code>: <span class="muted">no tools listed</span></p>'
            )
            continue
        out.append(
            f"<details open><summary><code>{_e(s['name'])}</code> "
            f"({len(s['tools'])} tools)</summary>"
            "<table><tr><th>tool</th><th>price USD</th><th>calls</th><th>failed</th>"
            "<th>success</th><th>latency s</th><th>description</th></tr>"
        )
        for t in s["tools"]:
            desc = t["description"] if len(t["description"]) <= 120 else t["description"][:119]
            out.append(
                f"<tr><td><code>{_e(t['name'])}</code></td>"
                f'<td class="n">{_num(t["price"], ".4f")}</td><td class="n">{t["calls"]}</td>'
                f'<td class="n">{t["failed"]}</td><td class="n">{_num(t["success"], ".2f")}</td>'
                f'<td class="n">{_num(t["latency_s"], ".3f")}</td><td>{_e(desc)}</td></tr>'
            )
        out.append("</table></details>")
    out.append(f"<h2>Last {len(snap['events'])} routing decisions</h2>")
    if not snap["events"]:
        out.append('<p class="muted">none yet: the agent has not called find_tools.</p>')
    else:
        out.append(
            "<table><tr><th>when</th><th>query (sha256)</th><th>promoted</th>"
            "<th>best candidates (score)</th><th>gated out (reason)</th><th>tokens p1 + p2</th>"
            "<th>ms</th></tr>"
        )
        for ev in snap["events"]:
            at = time.strftime("%H:%M:%S", time.gmtime(ev.get("at", 0)))
            cands = ", ".join(
                f"<code>{_e(c['name'])}</code> {c['score']:.3f}" for c in ev["candidates"][:5]
            )
            gated = "<br>".join(
                f"<code>{_e(g['name'])}</code>: {_e(g['reason'])}" for g in ev["gated_out"][:5]
            )
            active = "<br>".join(f"<code>{_e(a)}</code>" for a in ev["active"])
            out.append(
                f"<tr><td>{at}</td><td><code>{_e(ev['query_hash'])}</code></td>"
                f"<td>{active}</td><td>{cands}</td><td>{gated}</td>"
                f'<td class="n">{ev["phase1_tokens"]} + {ev["phase2_tokens"]}</td>'
                f'<td class="n">{ev["latency_ms"]:.1f}</td></tr>'
            )
        out.append("</table>")
    out.append("</body></html>")
    return "\n".join(out)
