"""A read-only status page for the operator of an HTTP gateway: ``GET /status`` (HTML) and
``GET /status.json``.

It shows what a person opens first when an agent "can't find" a tool: each downstream
server's state (``up``, ``down`` with its error, restarts), its tools with their posted price
and the statistics learned from executed calls (success, latency, calls: EHRR eq. 8), and the
last routing decisions with their explanation (candidates and scores, what was promoted, what
was held out and why; the query itself is stored only as a hash, as Tool Attention's audit
log does).

The routes join the gateway's own Starlette app, inside the same ``HttpGuard`` as ``/mcp``
(:mod:`toolroute.gateway.http.auth`: Host, Origin and bearer-token checks), so the page follows the
MCP endpoint's rules exactly. Nothing here writes to the store: the page only reads the downstreams,
the router's catalog and the store (sign-ins live in memory).

A client with an allow-list (``[auth.clients.X]`` ``servers``/``tools``) sees only the servers
and tools it may use, as in the ``toolroute://status`` resource, and no routing decisions (they
are every client's). A browser, which sends no token, signs in at ``POST /status/login`` (a
token, or a one-time code from ``toolroute status --open``) and gets a session cookie that
counts as that client here and nowhere else (:mod:`toolroute.gateway.http.login`); without a
credential ``GET /status`` is the sign-in form (401, no data). Every column header carries its
explanation as a ``title`` (hover help).

The store is read with a bound (the newest :data:`LAST_EVENTS` events, one indexed read, the
table pruned by the store); the page is rendered in a worker thread.
"""

from __future__ import annotations

import html
import json
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from toolroute.catalog.name import qualified_name
from toolroute.gateway.calls.access import CLIENT_SCOPE_KEY
from toolroute.gateway.http.login import COOKIE, LOGIN_SCOPE_KEY, SESSION_TTL_S, Login, LoginBook
from toolroute.learn.estimate import LAMBDA

if TYPE_CHECKING:
    from toolroute.downstream.servers import Downstreams
    from toolroute.gateway.shell.server import Gateway

__all__ = ["Viewer", "mount_status_page", "render_html", "status_snapshot"]

log = logging.getLogger(__name__)

LAST_EVENTS = 20


def status_snapshot(
    gateway: Gateway,
    downstreams: Downstreams,
    last: int = LAST_EVENTS,
    allowed: Callable[[str], bool] | None = None,
) -> dict[str, Any]:
    """Servers (state, tools, statistics) and the last ``last`` routing decisions, newest first;
    with ``allowed`` (a client's allow-list on ``server__tool``), only what it allows and no
    routing decisions."""
    router = gateway.shared.router
    server_stats, tool_stats = router.store.load_stats()
    outcomes = {(s, t): (ok, bad) for s, t, ok, bad, _ in router.store.outcome_counts()}
    by_id = {s.id: s for s in router.catalog.servers}
    servers: list[dict[str, Any]] = []
    for name, down in downstreams.servers.items():
        listed = by_id.get(name)
        st = server_stats.get(name)
        tools: list[dict[str, Any]] = []
        for t in listed.tools if listed is not None else ():
            if allowed is not None and not allowed(qualified_name(name, t.name)):
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
        if allowed is not None and not tools and not allowed(qualified_name(name, "*")):
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
        "strategy": gateway.shared.settings.strategy,
        "k": gateway.shared.settings.k,
        "tool_count": router.catalog.tool_count
        if allowed is None
        else sum(len(s["tools"]) for s in servers),
        "servers": servers,
        "events": events,
    }


def mount_status_page(app: Starlette, gateway: Gateway, url: str | None = None) -> LoginBook:
    """Add the status page's routes to the gateway's Starlette ``app``; returns the book of
    browser logins, for ``HttpGuard``. With ``url`` (the address it serves), writes the key of
    ``toolroute status --open``'s one-time links to the store directory."""
    logins = LoginBook({c.client_id: c.token for c in gateway.clients.values()})
    if url is not None:
        logins.publish(Path(gateway.shared.router.store.directory), url)

    def viewer(request: Request) -> Viewer | None:
        """Who is looking (None: nobody has logged in yet and the gateway has tokens)."""
        scope = request.scope
        login: Login | None = scope.get(LOGIN_SCOPE_KEY)
        client = gateway.clients.get(scope.get(CLIENT_SCOPE_KEY) or "")
        if client is not None:
            return Viewer(client.client_id, client.allows if client.restricted else None, login)
        if login is not None or not logins.required:
            return Viewer(None, None, login)  # the operator, or a gateway without [auth]
        return None

    async def page(request: Request) -> Response:
        who = viewer(request)
        if who is None:
            return _login_page(401)
        snap = status_snapshot(gateway, gateway.shared.downstreams, allowed=who.allowed)
        return _html(await anyio.to_thread.run_sync(render_html, snap, who))

    async def data(request: Request) -> Response:
        who = viewer(request)
        if who is None:  # the guard lets no such request by; kept for safety's sake
            return _login_page(401)
        snap = status_snapshot(gateway, gateway.shared.downstreams, allowed=who.allowed)
        return Response(
            await anyio.to_thread.run_sync(json.dumps, snap),
            media_type="application/json",
            headers=_HEADERS,
        )

    async def confirm(request: Request) -> Response:
        """A one-time link lands here: a button that spends the code (GET changes nothing, so a
        link preview or a prefetch cannot use it up)."""
        code = request.query_params.get("once", "")
        if not logins.required or not code:
            return RedirectResponse("/status", status_code=303, headers=_HEADERS)
        return _login_page(200, once=code)

    async def login(request: Request) -> Response:
        if not logins.required:
            return RedirectResponse("/status", status_code=303, headers=_HEADERS)
        address = request.client.host if request.client is not None else ""
        if (wait := logins.failures.retry_after(address)) is not None:  # guessing: throttled
            return _throttled(wait)
        form = await _form(request)
        if form is None:
            return _login_page(400, "Send the form as application/x-www-form-urlencoded.")
        if "once" in form:
            if not logins.redeem(form["once"]):
                logins.failures.failed(address)
                return _login_page(401, _SPENT, once="")
            client: str | None = None
        else:
            client = logins.client_of(form.get("token", ""))
            if client is None:
                logins.failures.failed(address)
                return _login_page(401, "That is not a token of this gateway.")
        log.info("status page: browser login for %s", client or "the operator (one-time link)")
        response = RedirectResponse("/status", status_code=303, headers=_HEADERS)
        response.set_cookie(
            COOKIE,
            logins.open(client),
            max_age=int(SESSION_TTL_S),
            path="/status",
            secure=request.url.scheme == "https",
            httponly=True,
            samesite="strict",
        )
        return response

    async def logout(request: Request) -> Response:
        login: Login | None = request.scope.get(LOGIN_SCOPE_KEY)
        if login is not None:
            logins.close(request.cookies.get(COOKIE, ""))
        response = RedirectResponse("/status", status_code=303, headers=_HEADERS)
        response.delete_cookie(COOKIE, path="/status", httponly=True, samesite="strict")
        return response

    app.router.routes.extend(
        [
            Route("/status", page, methods=["GET"]),
            Route("/status.json", data, methods=["GET"]),
            Route("/status/json", data, methods=["GET"]),  # under the cookie's path
            Route("/status/login", confirm, methods=["GET"]),
            Route("/status/login", login, methods=["POST"]),
            Route("/status/logout", logout, methods=["POST"]),
        ]
    )
    return logins


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who looks at the page: a client (by token or cookie) or, with ``client`` None, the
    operator or anyone on a gateway without tokens; ``allowed`` cuts to an allow-list."""

    client: str | None
    allowed: Callable[[str], bool] | None
    login: Login | None
    """The browser session, when the request came with the cookie."""


MAX_FORM_BYTES = 4096
_SPENT = (
    "This one-time link has expired or was already used: run toolroute status --open again, "
    "or sign in with a token."
)
_HEADERS = {
    "Cache-Control": "no-store",
    # no script, no external resource, no framing; forms post only back here
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    # a one-time link's code goes nowhere else; not "no-referrer", under which a browser
    # sends "Origin: null" with the form's POST, and the guard refuses it
    "Referrer-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
}


def _html(body: str, status_code: int = 200, headers: dict[str, str] | None = None) -> Response:
    return HTMLResponse(body, status_code=status_code, headers={**_HEADERS, **(headers or {})})


async def _form(request: Request) -> dict[str, str] | None:
    """The urlencoded form of a POST, read up to :data:`MAX_FORM_BYTES` (None: not one)."""
    kind = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        return None
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return None
    try:
        fields = parse_qs(body.decode("utf-8"), max_num_fields=8)
    except (UnicodeDecodeError, ValueError):
        return None
    return {k: v[0] for k, v in fields.items()}


def _throttled(wait_s: float) -> Response:
    """429 for an address that sent too many wrong tokens (RFC 6585), with when to retry."""
    seconds = max(1, math.ceil(wait_s))
    page = _login_page(429, f"Too many failed sign-ins from this address: retry in {seconds} s.")
    page.headers["Retry-After"] = str(seconds)
    return page


def _login_page(status_code: int, message: str | None = None, once: str | None = None) -> Response:
    """The sign-in form (a token), or with ``once`` the button that spends a one-time code."""
    out = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        "<title>toolroute status: sign in</title>",
        f"<style>{_CSS}</style></head><body><main class=login>",
        "<h1>toolroute gateway</h1>",
    ]
    if message:
        out.append(f'<p class="error" role="alert">{_e(message)}</p>')
    if once:
        out += [
            "<p>A one-time link from <code>toolroute status --open</code>. It works once, "
            "within two minutes.</p>",
            '<form method="post" action="/status/login">',
            f'<input type="hidden" name="once" value="{_e(once)}">',
            "<button type=submit>Open the status page</button></form>",
        ]
    else:
        out += [
            "<p>This gateway asks for a token. Sign in with a client's bearer token (the value "
            "of its <code>token_env</code> variable) to see what that client may use.</p>",
            '<form method="post" action="/status/login">',
            '<label for="token">Bearer token</label>',
            '<input type="password" id="token" name="token" autocomplete="off" required '
            'autofocus size="40">',
            "<button type=submit>Sign in</button></form>",
            '<p class="muted">On the gateway\'s machine, <code>toolroute status --open '
            "--config servers.json</code> prints a one-time link that shows every server.</p>",
        ]
    out.append("</main></body></html>")
    headers = {"WWW-Authenticate": 'Bearer realm="toolroute"'} if status_code == 401 else None
    return _html("\n".join(out), status_code, headers)


_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fafafa}
h1{font-size:1.4em;margin:0 0 .2em}h2{font-size:1.15em;margin:1.4em 0 .4em}
table{border-collapse:collapse;background:#fff;margin:.3em 0 1em}
th,td{border:1px solid #ddd;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f0f0f0}td.n{text-align:right;font-variant-numeric:tabular-nums}
[title]{text-decoration:underline dotted #999;cursor:help}
.up{color:#126b12;font-weight:600}.down,.stopped{color:#b00020;font-weight:600}
.starting,.restarting{color:#9a6700;font-weight:600}
.muted{color:#777}code{font-size:.95em}details{margin:.2em 0}
.who{background:#eef3fb;border:1px solid #c9d8ee;padding:.4em .7em;display:inline-block;
margin:.3em 0 .6em}
.who form{display:inline;margin-left:.8em}
main.login{max-width:34em;margin:3em auto;background:#fff;border:1px solid #ddd;padding:1.2em 1.6em}
main.login label{display:block;font-weight:600;margin:.8em 0 .3em}
main.login input{font:inherit;padding:.35em;width:100%;box-sizing:border-box}
button{font:inherit;padding:.35em 1em;margin-top:.8em;cursor:pointer}
.who button{margin:0;padding:.1em .6em}
.error{color:#b00020;font-weight:600}
"""

_EMA = f"a moving average over its executed calls in which each new call weighs {LAMBDA:.0%}"
SERVER_COLUMNS = (
    ("server", "The server's name in your servers file; its tools are named server__tool."),
    (
        "state",
        "up: connected. starting / restarting: connecting, or reconnecting after a crash "
        "(with backoff). down: could not connect or exited (see last error). stopped.",
    ),
    ("restarts", "How many times the gateway has restarted this server since it started."),
    ("tools", "Tools this server lists (those you may use)."),
    ("calls", "Tool calls executed on this server, as recorded in the store."),
    (
        "success rate",
        f"Share of calls that gave a usable result: {_EMA}. Starts at 1.00; "
        "routing prefers servers whose rate is high.",
    ),
    (
        "failure rate",
        "How often the server itself failed after accepting a call (crashed, timed out, broke "
        f"the protocol), as opposed to a tool answering with an error: {_EMA}. Starts at 0.00; "
        "routing ranks the server lower as it rises.",
    ),
    ("avg latency (s)", f"Seconds a call takes: {_EMA}."),
    ("last error", "Why the server is not up: the connect error, or its exit code and last "
     "line on stderr."),
)  # fmt: skip
TOOL_COLUMNS = (
    ("tool", "The tool's name on its server (the agent calls it as server__tool)."),
    ("price (USD/call)", "The tool's posted price per call, from the catalog (– : none)."),
    ("calls", "Executed calls of this tool, as recorded in the store."),
    ("failed", "Of those calls, how many gave no usable result."),
    ("success rate", f"Share of this tool's calls that gave a usable result: {_EMA}."),
    ("avg latency (s)", f"Seconds a call of this tool takes: {_EMA}."),
    ("description", "The tool's description as its server lists it (cut at 120 characters)."),
)
DECISION_COLUMNS = (
    ("time (UTC)", "When the agent asked (find_tools)."),
    (
        "query (hash)",
        "The first 16 hex digits of the query's SHA-256: the query itself is not stored.",
    ),
    ("tools promoted", "Tools whose full schema was given to the agent for this query."),
    (
        "best candidates (score)",
        "The five tools the strategy ranked highest, with their score (higher is better; "
        "the scale depends on the strategy).",
    ),
    (
        "held back (why)",
        "Candidates that were not promoted, and why: beyond the top k, below the score "
        "threshold, or held back by a precondition.",
    ),
    (
        "tokens shown (summaries + schemas)",
        "What this answer put in the agent's context, in tokens: the summary list of tools "
        "or servers (one line each, the same every turn) + the full schemas of the promoted "
        "tools.",
    ),
    ("routing time (ms)", "How long the gateway took to route this query, in milliseconds."),
)


def _e(x: object) -> str:
    return html.escape("" if x is None else str(x))


def _num(x: float | None, fmt: str) -> str:
    return '<span class="muted">–</span>' if x is None else format(x, fmt)


def _header(columns: tuple[tuple[str, str], ...]) -> str:
    """A table's header row, each column with its explanation on hover."""
    cells = "".join(f'<th title="{_e(tip)}">{_e(name)}</th>' for name, tip in columns)
    return f"<tr>{cells}</tr>"


def _server_row(s: dict[str, Any]) -> str:
    return (
        f"<tr><td><code>{_e(s['name'])}</code></td>"
        f'<td class="{_e(s["status"])}">{_e(s["status"])}</td>'
        f'<td class="n">{s["restarts"]}</td><td class="n">{len(s["tools"])}</td>'
        f'<td class="n">{s["calls"]}</td><td class="n">{_num(s["success"], ".2f")}</td>'
        f'<td class="n">{_num(s["fail_prob"], ".2f")}</td>'
        f'<td class="n">{_num(s["latency_s"], ".3f")}</td><td>{_e(s["error"])}</td></tr>'
    )


def _who(viewer: Viewer | None) -> str:
    """Who is signed in, and the sign-out button of a browser session."""
    if viewer is None or (viewer.client is None and viewer.login is None):
        return ""  # a gateway without tokens: nobody to name
    if viewer.client is None:
        who = "the operator (one-time link): every server"
    else:
        sees = "what its allow-list allows" if viewer.allowed is not None else "every server"
        who = f"client <code>{_e(viewer.client)}</code>: {sees}"
    out = f'<div class="who">Signed in as {who}'
    if viewer.login is not None:
        out += (
            '<form method="post" action="/status/logout">'
            "<button type=submit>Sign out</button></form>"
        )
    return out + "</div>"  # a div: a form may not sit inside a <p>


def render_html(snap: dict[str, Any], viewer: Viewer | None = None) -> str:
    """The snapshot as one plain HTML page (no script, no external resource), for ``viewer``."""
    servers = snap["servers"]
    up = sum(s["status"] == "up" for s in servers)
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(snap["generated_at"]))
    k_tip = "k: at most this many tools are promoted (given with their schema) per query"
    out = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        '<meta http-equiv="refresh" content="15">',
        f"<title>toolroute status: {up}/{len(servers)} servers up</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>toolroute gateway</h1>",
        _who(viewer),
        f'<p class="muted">{up} of {len(servers)} servers up · {snap["tool_count"]} tools · '
        f'<span title="How the gateway ranks tools for a query">routing strategy</span> '
        f"<code>{_e(snap['strategy'])}</code>, "
        f'<span title="{k_tip}">tools per query</span> {snap["k"]} · '
        f'updated {when} (every 15 s) · <a href="/status/json">as JSON</a></p>',
        "<h2>Servers</h2><table>",
        _header(SERVER_COLUMNS),
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
            f"({len(s['tools'])} tools)</summary><table>{_header(TOOL_COLUMNS)}"
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
    out.extend(_decisions(snap["events"], viewer))
    out.append("</body></html>")
    return "\n".join(out)


def _decisions(events: list[dict[str, Any]], viewer: Viewer | None) -> list[str]:
    out = [f"<h2>Last {len(events)} routing decisions</h2>"]
    if viewer is not None and viewer.allowed is not None:
        return [
            "<h2>Routing decisions</h2>",
            '<p class="muted">shown only to a client without an allow-list: they name '
            "every client's tools.</p>",
        ]
    if not events:
        out.append('<p class="muted">none yet: the agent has not called find_tools.</p>')
        return out
    out.append(f"<table>{_header(DECISION_COLUMNS)}")
    for ev in events:
        at = time.strftime("%H:%M:%S", time.gmtime(ev.get("at", 0)))
        cands = ", ".join(
            f"<code>{_e(c['name'])}</code> {c['score']:.3f}" for c in ev["candidates"][:5]
        )
        held = "<br>".join(
            f"<code>{_e(g['name'])}</code>: {_e(g['reason'])}" for g in ev["gated_out"][:5]
        )
        active = "<br>".join(f"<code>{_e(a)}</code>" for a in ev["active"])
        out.append(
            f"<tr><td>{at}</td><td><code>{_e(ev['query_hash'])}</code></td>"
            f"<td>{active}</td><td>{cands}</td><td>{held}</td>"
            f'<td class="n">{ev["phase1_tokens"]} + {ev["phase2_tokens"]}</td>'
            f'<td class="n">{ev["latency_ms"]:.1f}</td></tr>'
        )
    out.append("</table>")
    return out
