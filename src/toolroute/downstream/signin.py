"""``toolroute auth NAME``: the MCP authorization flow once, with the operator's browser
(:mod:`toolroute.downstream.oauth` holds the storage and the provider the gateway shares).

The flow is the SDK's ``OAuthClientProvider`` driven by one ``tools/list``: the server's 401,
protected-resource and authorization-server metadata, dynamic registration (or the entry's
``oauth.clientId``), then the authorization URL shown (and opened in a browser unless
``--no-browser``) and its answer taken on a loopback redirect (``127.0.0.1:PORT/callback``,
RFC 8252). The port is the one the stored registration names, so a dynamically registered
client is reused; a port that changed registers again. Only an answer carrying the ``state``
of this flow's authorization URL is taken: a forged GET to the port (any local process, or a
web page the operator has open) is refused and the sign-in goes on.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import socket
import webbrowser
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlparse, urlsplit

import anyio
import anyio.to_thread
import uvicorn
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from toolroute.config import HttpSpec
from toolroute.downstream.oauth import (
    AuthorizationError,
    AuthorizationNeeded,
    StoredCredentials,
    configured_client,
    make_provider,
    needed_in,
    oauth_options,
    secret_box,
)
from toolroute.sdk import create_mcp_http_client
from toolroute.store import StoreTarget, open_store

__all__ = ["CALLBACK_PATH", "SignIn", "sign_in"]

log = logging.getLogger(__name__)

CALLBACK_PATH = "/callback"


@dataclass(frozen=True, slots=True)
class SignIn:
    """What a finished sign-in got."""

    server: str
    tools: int
    expires_in: int | None
    registered: bool
    """A client was registered dynamically during this sign-in."""


async def sign_in(
    name: str,
    spec: HttpSpec,
    target: StoreTarget,
    *,
    show: Callable[[str], None],
    open_browser: bool = True,
    timeout_s: float = 300.0,
) -> SignIn:
    """The whole MCP authorization flow for ``name``, with the operator; stores the tokens
    (and a dynamic registration) and returns once the server lists its tools with them."""
    options = oauth_options(name, spec)
    box = secret_box()
    storage = StoredCredentials(target, name, spec.url, box, fresh=True)
    registered = await _registered(storage)
    port = options.callback_port or _port_of(registered) or 0
    sock = socket.socket()
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as e:
        sock.close()
        if options.callback_port:
            raise AuthorizationError(f"callback port {port} is busy: {e.strerror}") from None
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.setblocking(False)
    redirect_uri = f"http://127.0.0.1:{sock.getsockname()[1]}{CALLBACK_PATH}"
    storage.configured = configured_client(options, redirect_uri)
    if storage.configured is None and registered is not None:
        uris = [str(u) for u in registered.redirect_uris or []]
        if redirect_uri not in uris:  # registered for another port: register again
            storage.configured = None
            await _forget_client(storage)
    answers: list[AuthorizationCodeResult | str] = []
    arrived = anyio.Event()
    expected: list[str] = []  # the state this flow sent with its authorize URL

    async def redirect(url: str) -> None:
        expected[:] = parse_qs(urlsplit(url).query).get("state", [])[:1]
        show(url)
        if open_browser:
            await anyio.to_thread.run_sync(_open_browser, url)

    async def callback() -> AuthorizationCodeResult:
        with anyio.fail_after(timeout_s):
            await arrived.wait()
        answer = answers[0]
        if isinstance(answer, str):
            raise AuthorizationError(f"the authorization server refused: {answer}")
        return answer

    provider = make_provider(spec.url, storage, options, redirect_uri, redirect, callback)
    failure: AuthorizationError | None = None
    tools = 0
    async with anyio.create_task_group() as tg:
        server = _callback_server(sock, name, answers, arrived, expected)
        tg.start_soon(server.serve, [sock])
        try:
            tools = await _list_with(spec, provider, create_mcp_http_client, Client)
        except Exception as e:  # the SDK's flow errors, transport errors: one line
            failure = _failed(name, e, timeout_s)
        finally:
            server.should_exit = True  # the loopback server stops; the task group waits
    if failure is not None:
        raise failure
    tokens = provider.context.current_tokens
    if tokens is None:
        raise AuthorizationError(f"{name} answered without asking for authorization")
    return SignIn(name, tools, tokens.expires_in, storage.registered)


def _failed(name: str, e: BaseException, timeout_s: float) -> AuthorizationError:
    """One line for what stopped the flow (found inside the transport's exception groups)."""
    ours = _find(e, AuthorizationError)
    if isinstance(ours, AuthorizationError):
        return ours
    if _find(e, TimeoutError) is not None:
        return AuthorizationError(
            f"no answer from the browser within {timeout_s:.0f} s (--timeout)"
        )
    why = _flow_failure(needed_in(e) or e)
    hint = ""
    if "Registration failed" in why or "metadata" in why.lower():
        hint = ' (the server may not offer OAuth sign-in: a token in the entry\'s "headers"?)'
    return AuthorizationError(f"signing in to {name} failed: {why}{hint}")


def _find(e: BaseException, kind: type[BaseException]) -> BaseException | None:
    if isinstance(e, kind):
        return e
    if isinstance(e, BaseExceptionGroup):
        for x in e.exceptions:
            if (found := _find(x, kind)) is not None:
                return found
    return None


def _flow_failure(e: BaseException) -> str:
    if isinstance(e, BaseExceptionGroup):
        return "; ".join(_flow_failure(x) for x in e.exceptions)
    text = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
    return f"{type(e).__name__}: {text}" if type(e).__module__.startswith("mcp") else text


async def _list_with(spec: HttpSpec, provider: Any, http_client: Any, client_cls: Any) -> int:
    if spec.type == "sse":
        target: Any = sse_client(spec.url, headers=spec.headers or None, auth=provider)
        async with client_cls(target, mode="auto") as client:
            return len((await client.list_tools()).tools)

    async with (
        http_client(spec.headers or None, auth=provider) as http,
        client_cls(streamable_http_client(spec.url, http_client=http), mode="auto") as c,
    ):
        return len((await c.list_tools()).tools)


async def _registered(storage: StoredCredentials) -> OAuthClientInformationFull | None:
    try:
        return await storage.get_client_info()
    except AuthorizationNeeded:  # stored with another key: registered again
        return None


async def _forget_client(storage: StoredCredentials) -> None:
    def forget() -> None:
        with open_store(storage.target) as st:
            st.delete_oauth(storage.server)

    await anyio.to_thread.run_sync(forget)


def _port_of(client: OAuthClientInformationFull | None) -> int | None:
    for uri in (client.redirect_uris or []) if client is not None else []:
        parsed = urlparse(str(uri))
        if parsed.hostname in ("127.0.0.1", "localhost") and parsed.port:
            return parsed.port
    return None


def _open_browser(url: str) -> None:
    with contextlib.suppress(webbrowser.Error):  # no browser here: the printed URL is the way
        webbrowser.open(url)


def _callback_server(
    sock: Any,
    name: str,
    answers: list[AuthorizationCodeResult | str],
    arrived: anyio.Event,
    expected: list[str],
) -> Any:
    """The loopback redirect target: takes the first answer (a code, or an error) that carries
    the ``state`` this flow sent (``expected``, once the authorize URL is out). Anything else
    on the port (a forged or stale GET from any local process or web page) is answered 400
    and ignored, so it cannot end the operator's sign-in."""

    async def done(request: Request) -> HTMLResponse:
        q = request.query_params
        if arrived.is_set():
            return HTMLResponse("<p>toolroute: this sign-in is already finished.</p>", 409)
        state = q.get("state") or ""
        if not expected or not hmac.compare_digest(state.encode(), expected[0].encode()):
            log.warning("sign-in of %s: ignored a callback without this sign-in's state", name)
            return HTMLResponse("<p>toolroute: not this sign-in's answer; ignored.</p>", 400)
        if q.get("error"):
            answers.append(f"{q['error']}: {q.get('error_description', '')}".strip(": "))
            page = f"<p>toolroute: signing in to {name} failed ({q['error']}).</p>"
        else:
            answers.append(
                AuthorizationCodeResult(
                    code=q.get("code", ""), state=q.get("state"), iss=q.get("iss")
                )
            )
            page = f"<p>toolroute: signed in to {name}. You can close this tab.</p>"
        arrived.set()
        return HTMLResponse(page)

    app = Starlette(routes=[Route(CALLBACK_PATH, done, methods=["GET"])])
    return uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
