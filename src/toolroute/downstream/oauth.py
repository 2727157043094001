"""OAuth 2.1 for ``url`` servers: the MCP authorization flow through the SDK's client auth
(``mcp.client.auth.OAuthClientProvider``), with tokens kept in the store, encrypted.

Two sides, one storage:

- ``toolroute auth NAME`` (:mod:`toolroute.downstream.signin`) runs the whole flow once, with
  the operator: the server's 401 and ``WWW-Authenticate``, protected-resource metadata
  (RFC 9728), authorization-server metadata (RFC 8414), dynamic client registration
  (RFC 7591) unless a client id is configured, then authorization code + PKCE through the
  operator's browser and a loopback redirect (RFC 8252). Tokens and registration are stored.
- the gateway (:class:`DownstreamAuth`, one per url server without its own
  ``Authorization`` header) sends the stored access token and refreshes it before it
  expires (:data:`REFRESH_BEFORE`), storing rotated tokens. It never opens a browser: when
  the server refuses (never signed in, token revoked, refresh refused) the server is down
  with the exact command that fixes it, the agent's calls to it fail with
  ``auth_required``, the other servers keep serving, and a new sign-in is picked up within
  a second (:meth:`DownstreamAuth.until_signed_in`).

Tokens and client secrets are encrypted with Fernet (AES-128-CBC + HMAC-SHA256) under
``TOOLROUTE_SECRET_KEY`` (several keys, comma-separated: the first encrypts, any decrypts,
for rotation), keyed by server name *and* URL, so a token is only ever sent to the URL it
was issued for. Nothing here logs a token, and none reaches the agent.

Configuration, in the server's entry of the servers JSON (all optional)::

    "docs": {"url": "https://docs.example/mcp",
             "oauth": {"clientId": "toolroute-docs", "clientSecretEnv": "DOCS_SECRET",
                       "scope": "read", "callbackPort": 8976}}
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolroute.config import HttpSpec
from toolroute.errors import ConfigError, ToolrouteError
from toolroute.sdk import EarlyRefreshProvider
from toolroute.store import StoreTarget, is_store_url, open_store

__all__ = [
    "SECRET_KEY_ENV",
    "AuthorizationError",
    "AuthorizationNeeded",
    "DownstreamAuth",
    "OAuthOptions",
    "StoredCredentials",
    "configured_client",
    "downstream_auth",
    "make_provider",
    "needed_in",
    "oauth_options",
    "refresh_margin",
    "secret_box",
]

log = logging.getLogger(__name__)

SECRET_KEY_ENV = "TOOLROUTE_SECRET_KEY"
REFRESH_BEFORE = 60.0
"""An access token is refreshed this long before it expires, at most a fifth of its life (its
lifetime counts from when the server issued it, the client only knows when the answer came)."""
POLL_S = 1.0
"""How often a server waiting for a sign-in looks for new tokens in the store."""
NEW_KEY = (
    'python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"'
)


class AuthorizationError(ToolrouteError):
    """The OAuth flow of ``toolroute auth`` failed (refused, timed out, not OAuth)."""


class AuthorizationNeeded(Exception):
    """The gateway cannot reach a server without the operator signing in again."""


class OAuthOptions(BaseModel):
    """The ``oauth`` object of a url server's entry."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    client_id: str | None = Field(default=None, alias="clientId", min_length=1)
    """A client registered by hand with the authorization server (else: dynamic
    registration)."""
    client_secret_env: str | None = Field(default=None, alias="clientSecretEnv", min_length=1)
    """The variable holding that client's secret (a confidential client)."""
    scope: str | None = None
    """Scopes to ask for (default: what the server's 401 or metadata names)."""
    callback_port: int | None = Field(default=None, alias="callbackPort", ge=1, le=65535)
    """Loopback port of the redirect (default: a free one, kept for the next sign-in)."""


def oauth_options(name: str, spec: HttpSpec) -> OAuthOptions:
    raw = (spec.model_extra or {}).get("oauth") or {}
    try:
        return OAuthOptions.model_validate(raw)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"server {name}: oauth.{where}: {first['msg']}") from None


def secret_box() -> Any:
    """The Fernet keys of ``TOOLROUTE_SECRET_KEY`` (a MultiFernet); ConfigError if unset or
    malformed."""
    raw = [k.strip() for k in os.environ.get(SECRET_KEY_ENV, "").split(",") if k.strip()]
    if not raw:
        raise ConfigError(
            f"{SECRET_KEY_ENV} is not set: OAuth tokens are stored encrypted with it;"
            f" create one with {NEW_KEY} and keep it in the gateway's environment"
        )
    try:
        return MultiFernet([Fernet(k.encode()) for k in raw])
    except ValueError:
        raise ConfigError(
            f"{SECRET_KEY_ENV} is not a Fernet key (32 url-safe base64-encoded bytes);"
            f" create one with {NEW_KEY}"
        ) from None


def refresh_margin(lifetime_s: float | None) -> float:
    """How long before expiry a token of this lifetime is refreshed."""
    return 0.0 if not lifetime_s else min(REFRESH_BEFORE, lifetime_s / 5)


class StoredCredentials:
    """The SDK's ``TokenStorage`` over the store: one server at one URL, encrypted.

    ``fresh``: start with no tokens (a sign-in), still keeping the stored registration."""

    def __init__(
        self,
        target: StoreTarget,
        server: str,
        url: str,
        box: Any,
        *,
        configured: OAuthClientInformationFull | None = None,
        fresh: bool = False,
    ) -> None:
        self.target, self.server, self.url, self.box = target, server, url, box
        self.configured = configured
        self.fresh = fresh
        self.expires_at: float | None = None
        self.registered = False
        """A client was registered (dynamically) through this storage."""
        self.metadata: OAuthMetadata | None = None
        self.resource_metadata: ProtectedResourceMetadata | None = None
        """What discovery found, kept with the tokens: a gateway that starts with a stored
        token refreshes it at the authorization server's token endpoint without discovering
        again (the SDK alone would post to the MCP server's own /token)."""

    # The store is used on the event loop, as the gateway's own outcome writes are: one
    # indexed row (benchmarks/oauth_refresh.py measures it).
    def read_row(self) -> Any:
        with open_store(self.target) as st:
            return st.get_oauth(self.server, self.url)

    def _open(self, blob: bytes) -> str:
        try:
            return str(self.box.decrypt(blob).decode())
        except InvalidToken:
            raise AuthorizationNeeded(
                f"the stored OAuth credentials cannot be decrypted with {SECRET_KEY_ENV}"
                " (another key?)"
            ) from None

    async def get_tokens(self) -> OAuthToken | None:
        if self.fresh:
            return None
        row = self.read_row()
        if row is None or row.tokens is None:
            return None
        self.expires_at = row.expires_at
        saved = json.loads(self._open(row.tokens))
        if saved.get("metadata"):
            self.metadata = OAuthMetadata.model_validate(saved["metadata"])
        if saved.get("resource"):
            self.resource_metadata = ProtectedResourceMetadata.model_validate(saved["resource"])
        return OAuthToken.model_validate(saved["token"])

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.fresh = False
        self.expires_at = None if tokens.expires_in is None else time.time() + tokens.expires_in
        saved = {
            "token": tokens.model_dump(mode="json"),
            "metadata": self.metadata.model_dump(mode="json") if self.metadata else None,
            "resource": (
                self.resource_metadata.model_dump(mode="json") if self.resource_metadata else None
            ),
        }
        blob = self.box.encrypt(json.dumps(saved).encode())
        with open_store(self.target) as st:
            st.put_oauth_tokens(self.server, self.url, blob, self.expires_at)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self.configured is not None:
            return self.configured
        row = self.read_row()
        if row is None or row.client is None:
            return None
        return OAuthClientInformationFull.model_validate_json(self._open(row.client))

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.registered = True
        blob = self.box.encrypt(client_info.model_dump_json().encode())
        with open_store(self.target) as st:
            st.put_oauth_client(self.server, self.url, blob)


class _Provider(EarlyRefreshProvider):
    """The SDK's provider (through :mod:`toolroute.sdk`), refreshing :func:`refresh_margin`
    before expiry, also for tokens loaded from the store, and keeping discovery with them."""

    storage: StoredCredentials

    def refresh_margin(self, lifetime_s: float | None) -> float:
        return refresh_margin(lifetime_s)

    def refreshed(self) -> None:
        log.info("OAuth token refreshed for %s", self.storage.server)


def make_provider(
    url: str,
    storage: StoredCredentials,
    options: OAuthOptions,
    redirect_uri: str,
    redirect: Callable[[str], Any],
    callback: Callable[[], Any],
) -> _Provider:
    metadata = OAuthClientMetadata(
        client_name="toolroute",
        redirect_uris=[redirect_uri],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="client_secret_post" if options.client_secret_env else "none",
        scope=options.scope,
    )
    provider = _Provider(url, metadata, storage, redirect, callback)
    provider.storage = storage
    return provider


def configured_client(
    options: OAuthOptions, redirect_uri: str | None
) -> OAuthClientInformationFull | None:
    if options.client_id is None:
        return None
    secret = None
    if options.client_secret_env is not None:
        secret = os.environ.get(options.client_secret_env)
        if not secret:
            raise ConfigError(f"oauth.clientSecretEnv: the variable {options.client_secret_env}"
                              " is not set")  # fmt: skip
    return OAuthClientInformationFull(
        client_id=options.client_id,
        client_secret=secret,
        redirect_uris=[redirect_uri] if redirect_uri else None,  # type: ignore[list-item]
        token_endpoint_auth_method="client_secret_post" if secret else "none",
        grant_types=["authorization_code", "refresh_token"],
    )


class _QuietNeeded(logging.Filter):
    """Drops the SDK's "OAuth flow error" traceback: the SDK raises the error too, and
    toolroute reports it once, in one line (the server's status; ``toolroute auth``'s
    error). Kept at debug level (``-vv``), except when the gateway stopped the flow itself
    because the operator must sign in."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, AuthorizationNeeded):
            return False
        oauth_log = logging.getLogger("mcp.client.auth.oauth2")
        return exc is None or oauth_log.isEnabledFor(logging.DEBUG)


logging.getLogger("mcp.client.auth.oauth2").addFilter(_QuietNeeded())


def needed_in(e: BaseException) -> AuthorizationNeeded | None:
    if isinstance(e, AuthorizationNeeded):
        return e
    if isinstance(e, BaseExceptionGroup):
        for x in e.exceptions:
            if (found := needed_in(x)) is not None:
                return found
    cause = e.__cause__ or e.__context__
    return needed_in(cause) if cause is not None and cause is not e else None


class DownstreamAuth:
    """OAuth of one url server inside the gateway: the stored token on every request,
    refreshed before expiry; what to tell the operator when that is not enough."""

    def __init__(
        self, name: str, spec: HttpSpec, target: StoreTarget, options: OAuthOptions, fix: str
    ) -> None:
        self.name, self.url, self.target, self.options = name, spec.url, target, options
        self.fix = fix
        """The exact command that signs in again (``toolroute auth NAME --config …``), for
        the operator's status; what the server's error says (and the agent reads) is
        ``toolroute auth NAME``, with no file path."""
        self.command = shlex.join(["toolroute", "auth", name])
        self.required: str | None = None
        """Why the operator must sign in (None: nothing known to be needed)."""
        self._seen: float | None = None  # changed_at of the credentials the last connect read
        self.provider: OAuthClientProvider | None = None
        """The SDK provider of the open connection (None: it sends no token)."""

    async def connect_auth(self) -> Any:
        """The ``httpx2.Auth`` for the next connection: None when nothing is stored (the
        server's 401 then says so); AuthorizationNeeded when tokens are stored but
        unreadable."""
        self.required = None
        try:
            box = secret_box()
        except ConfigError as e:
            box, unreadable = None, str(e)
        storage = StoredCredentials(
            self.target, self.name, self.url, box, configured=configured_client(self.options, None)
        )
        row = storage.read_row()
        self._seen = None if row is None else row.changed_at
        self.provider = None
        if row is None or row.tokens is None:
            return None
        if box is None:
            raise AuthorizationNeeded(f"the stored OAuth token cannot be read: {unreadable}")

        async def cannot_ask(url: str) -> None:
            self.required = self._lapsed()
            raise AuthorizationNeeded(self.required)

        async def never() -> AuthorizationCodeResult:  # cannot_ask raised first
            raise AuthorizationNeeded(self._lapsed())

        no_redirect = "http://127.0.0.1/"  # the gateway never takes a redirect
        self.provider = make_provider(
            self.url, storage, self.options, no_redirect, cannot_ask, never
        )
        return self.provider

    def _lapsed(self) -> str:
        return (
            "unauthorized (HTTP 401): the OAuth sign-in lapsed (the token expired or was"
            f" revoked, and no refresh was accepted): run `{self.command}`"
        )

    def unauthorized(self) -> str:
        """What a plain 401 means for this server (no token sent, or one refused)."""
        self.required = (
            "unauthorized (HTTP 401): the server needs credentials — run "
            f"`{self.command}` to sign in (OAuth), or set "
            '"headers": {"Authorization": ...} in its entry'
        )
        return self.required

    def why(self, e: BaseException) -> str | None:
        """The operator's part of a failed connect, when it is one."""
        needed = needed_in(e)
        if needed is None:
            return None
        self.required = str(needed) if "`toolroute auth" in str(needed) else (
            f"{needed}: run `{self.command}`"
        )  # fmt: skip
        return self.required

    async def until_signed_in(self, stop: anyio.Event) -> None:
        """Return when the stored credentials change (a new sign-in) or ``stop`` is set."""
        storage = StoredCredentials(self.target, self.name, self.url, None)
        while not stop.is_set():
            with anyio.move_on_after(POLL_S):
                await stop.wait()
            if stop.is_set():
                return
            try:
                row = storage.read_row()
            except ToolrouteError:  # the store is unreachable: look again later
                continue
            if (None if row is None else row.changed_at) != self._seen:
                return


def fix_command(name: str, config_path: Path | None, store: StoreTarget | None) -> str:
    """``toolroute auth NAME --config PATH`` (and ``--store`` when it is a directory)."""
    parts = ["toolroute", "auth", name]
    if config_path is not None:
        parts += ["--config", str(config_path)]
    if store is not None and not is_store_url(store):
        parts += ["--store", str(store)]
    return shlex.join(parts)


def downstream_auth(
    name: str, spec: Any, target: StoreTarget, config_path: Path | None, store: Any = None
) -> DownstreamAuth | None:
    """OAuth for a url server that sends no ``Authorization`` header of its own (else
    None: a stdio server, or a token-based one)."""
    if not isinstance(spec, HttpSpec) or "authorization" in {k.lower() for k in spec.headers}:
        return None
    options = oauth_options(name, spec)
    return DownstreamAuth(name, spec, target, options, fix_command(name, config_path, store))
