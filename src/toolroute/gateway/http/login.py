"""The operator's browser login to the status page of an HTTP gateway with tokens.

A browser sends no ``Authorization`` header, so with ``[auth]`` tokens the page
(:mod:`toolroute.gateway.http.status_page`) offers two ways in, both ending in a session cookie:

- **A token**: ``POST /status/login`` with one client's bearer token. The page then shows
  what that client's allow-list allows, exactly as for a request carrying the token.
- **A one-time link** printed by ``toolroute status --open`` on the gateway's machine: the
  running gateway writes a random key and its address to :data:`LOGIN_FILE` in its store
  directory (mode 0600: only the user running the gateway reads it); the CLI signs a code with
  that key (HMAC-SHA256 over a random nonce and an expiry, :func:`mint_code`); the gateway
  accepts each code once, within :data:`CODE_TTL_S`. It logs in the *operator*, who sees
  everything (whoever reads the store directory also runs the gateway and holds its tokens).

The cookie (:data:`COOKIE`, ``HttpOnly; SameSite=Strict; Path=/status``) holds an opaque
random session id, never a token; a :class:`LoginBook` maps it to the client in memory, with
an expiry (:data:`SESSION_TTL_S`), bounded per client (:data:`MAX_SESSIONS_PER_CLIENT`: a
client's sign-ins end only its own oldest sessions, never the operator's or another
client's) and in all (:data:`MAX_SESSIONS`). It is honoured
only on the status page's own routes (:data:`COOKIE_ROUTES`): ``HttpGuard``
(:mod:`toolroute.gateway.http.auth`) asks :meth:`LoginBook.admit` only there, after its Host and
Origin checks, so a cookie never opens ``/mcp``, and a cross-site ``POST`` (a foreign
``Origin``) is refused before it reaches the login.

Guessing is throttled per client address (:class:`FailedLogins`): after
:data:`LOGIN_FAILURES` wrong tokens or codes within :data:`LOGIN_WINDOW_S`, that address gets
``429`` with ``Retry-After`` (even for a right token, or guessing would go on) until the
oldest failure leaves the window; other addresses sign in as before. The address is the TCP
peer's, which a client cannot forge: ``X-Forwarded-For`` is believed only from the proxies
``[http] forwarded_allow_ips`` names (none by default). Behind a reverse proxy not named there,
every browser shares the proxy's address, so one guesser throttles everyone's new sign-ins
(sessions already open are not affected).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import os
import secrets
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Mapping
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from pathlib import Path
from typing import Any

from toolroute.errors import ConfigError

__all__ = [
    "CODE_TTL_S",
    "COOKIE",
    "COOKIE_ROUTES",
    "LOGIN_FILE",
    "LOGIN_SCOPE_KEY",
    "OPEN_ROUTES",
    "SESSION_TTL_S",
    "LOGIN_FAILURES",
    "LOGIN_WINDOW_S",
    "FailedLogins",
    "Login",
    "LoginBook",
    "mint_code",
    "read_login_file",
]

log = logging.getLogger(__name__)

COOKIE = "toolroute_status"
SESSION_TTL_S = 8 * 3600.0
"""How long a browser login lasts (the cookie's Max-Age and the session's expiry)."""
MAX_SESSIONS = 1000
"""Sessions kept at once: logins cannot grow memory without bound. Past it, the oldest session
of whoever holds the most goes first, so one token's sign-ins never end another's."""
MAX_SESSIONS_PER_CLIENT = 20
"""Sessions one client (one token, or the operator) holds at once; its next sign-in ends its
own oldest, never another client's."""
CODE_TTL_S = 120.0
"""How long a one-time code from ``toolroute status --open`` stays valid."""
LOGIN_FILE = "status-login.json"
"""In the gateway's store directory: its address and the key that signs one-time codes."""
LOGIN_FAILURES = 10
"""Wrong tokens or codes one client address may send within :data:`LOGIN_WINDOW_S`."""
LOGIN_WINDOW_S = 300.0
"""The window over which :data:`LOGIN_FAILURES` counts (seconds)."""
MAX_ADDRESSES = 10_000
"""Addresses whose failures are kept at once (the least recent dropped first)."""
LOGIN_SCOPE_KEY = "toolroute.status_login"
"""Key of the request's :class:`Login` in the ASGI scope, for a request admitted by cookie."""

COOKIE_ROUTES = frozenset({"/status", "/status.json", "/status/json", "/status/logout"})
"""Paths where the session cookie stands in for a bearer token (GET; POST for logout)."""
OPEN_ROUTES = frozenset(
    {
        ("GET", "/status"),  # the login form, instead of the page
        ("HEAD", "/status"),
        ("GET", "/status/login"),  # a one-time link's confirmation page
        ("POST", "/status/login"),
        ("POST", "/status/logout"),
    }
)
"""(method, path) that pass the guard without any credential: they show no data."""


@dataclass(frozen=True, slots=True)
class Login:
    """One browser session on the status page: ``client`` is the token's client id; None is the
    operator (one-time link), who sees every server."""

    client: str | None
    expires: float


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _sign(key: bytes, nonce: str, expires: int) -> str:
    return _b64(hmac.new(key, f"{nonce}.{expires}".encode(), hashlib.sha256).digest())


def mint_code(key_hex: str, now: float | None = None) -> str:
    """A one-time login code signed with a gateway's key (``toolroute status --open``)."""
    expires = int((time.time() if now is None else now) + CODE_TTL_S)
    nonce = secrets.token_urlsafe(12)
    return f"{nonce}.{expires}.{_sign(bytes.fromhex(key_hex), nonce, expires)}"


def read_login_file(store_dir: Path) -> dict[str, Any] | None:
    """What a running gateway wrote to :data:`LOGIN_FILE` (``url``, ``key``, ``pid``), or None
    when no gateway with an HTTP transport has written one."""
    try:
        data = json.loads((store_dir / LOGIN_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise ConfigError(f"{store_dir / LOGIN_FILE}: unreadable: {e}") from None
    if not isinstance(data, dict) or not {"url", "key", "pid"} <= data.keys():
        raise ConfigError(f"{store_dir / LOGIN_FILE}: not a gateway login file")
    return data


class FailedLogins:
    """Recent failed sign-ins per client address: a sliding window of at most ``limit``
    failures per ``window_s`` seconds, over at most :data:`MAX_ADDRESSES` addresses."""

    def __init__(self, limit: int = LOGIN_FAILURES, window_s: float = LOGIN_WINDOW_S) -> None:
        self.limit = limit
        self.window_s = window_s
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def retry_after(self, address: str, now: float | None = None) -> float | None:
        """Seconds until ``address`` may try again, or None: it may try now."""
        now = time.monotonic() if now is None else now
        times = self._recent(address, now)
        if times is None or len(times) < self.limit:
            return None
        return times[0] + self.window_s - now

    def failed(self, address: str, now: float | None = None) -> None:
        """Count one failed sign-in from ``address``."""
        now = time.monotonic() if now is None else now
        times = self._recent(address, now)
        if times is None:
            times = self._failures[address] = deque(maxlen=self.limit)
            while len(self._failures) > MAX_ADDRESSES:
                self._failures.popitem(last=False)
        times.append(now)
        self._failures.move_to_end(address)
        if len(times) == self.limit:
            log.warning(
                "status page: %d failed sign-ins from %s within %ss; refusing it for a while",
                self.limit,
                address,
                self.window_s,
            )

    def _recent(self, address: str, now: float) -> deque[float] | None:
        times = self._failures.get(address)
        if times is None:
            return None
        while times and times[0] <= now - self.window_s:
            times.popleft()
        if not times:
            del self._failures[address]
            return None
        return times


class LoginBook:
    """Browser sessions on the status page and the one-time codes of the running gateway."""

    def __init__(self, tokens: Mapping[str, str]) -> None:
        """``tokens``: each client id's bearer token (empty: the gateway has no ``[auth]``)."""
        self._tokens = [(_digest(t), c) for c, t in tokens.items()]
        self.failures = FailedLogins()
        """Wrong tokens and codes per client address (the login route asks and counts)."""
        self._sessions: OrderedDict[str, Login] = OrderedDict()
        self._key = secrets.token_bytes(32)
        self._spent: dict[str, float] = {}  # nonce of each code used, until it would expire

    def reconfigure(self, tokens: Mapping[str, str]) -> None:
        """New tokens (a config reload): the sessions of a client whose token is gone or
        changed end (a removed client's cookie must not fall back to the operator's view);
        with no tokens left, every session ends."""
        old = {c: d for d, c in self._tokens}
        self._tokens = [(_digest(t), c) for c, t in tokens.items()]
        kept = {c for d, c in self._tokens if old.get(c) == d}
        for sid, login in list(self._sessions.items()):
            if not self._tokens or (login.client is not None and login.client not in kept):
                del self._sessions[sid]

    @property
    def required(self) -> bool:
        """Whether the page needs a login at all (the gateway has tokens)."""
        return bool(self._tokens)

    def client_of(self, token: str) -> str | None:
        """The client whose bearer token this is (constant time, every token each time)."""
        given = _digest(token.strip())
        found = None
        for digest, client in self._tokens:  # no early exit: same work whichever matches
            if hmac.compare_digest(given, digest):
                found = client
        return found if token.strip() else None

    def open(self, client: str | None, now: float | None = None) -> str:
        """A new session for ``client`` (None: the operator); returns its id for the cookie."""
        now = time.time() if now is None else now
        self._drop_expired(now)
        own = [sid for sid, login in self._sessions.items() if login.client == client]
        for sid in own[: max(0, len(own) - MAX_SESSIONS_PER_CLIENT + 1)]:  # oldest first
            del self._sessions[sid]
        while len(self._sessions) >= MAX_SESSIONS:  # many clients: the biggest holder gives
            held = Counter(login.client for login in self._sessions.values())
            biggest = held.most_common(1)[0][0]
            del self._sessions[next(s for s, x in self._sessions.items() if x.client == biggest)]
        sid = secrets.token_urlsafe(32)
        self._sessions[sid] = Login(client, now + SESSION_TTL_S)
        return sid

    def close(self, sid: str) -> None:
        self._sessions.pop(sid, None)

    def session(self, sid: str, now: float | None = None) -> Login | None:
        login = self._sessions.get(sid)
        if login is None or login.expires <= (time.time() if now is None else now):
            return None
        return login

    def redeem(self, code: str, now: float | None = None) -> bool:
        """Whether ``code`` is a valid one-time code of this gateway, not yet used (it is
        spent now)."""
        now = time.time() if now is None else now
        nonce, _, rest = code.strip().partition(".")
        expires_s, _, mac = rest.partition(".")
        if not nonce or not expires_s.isdigit() or not mac:
            return False
        expires = int(expires_s)
        if not hmac.compare_digest(_sign(self._key, nonce, expires), mac):
            return False
        if expires <= now or expires > now + CODE_TTL_S + 5 or nonce in self._spent:
            return False
        self._spent = {n: t for n, t in self._spent.items() if t > now}
        self._spent[nonce] = expires
        return True

    def admit(self, method: str, path: str, cookie: str | None) -> dict[str, Any] | None:
        """For ``HttpGuard``: a request without ``Authorization``. Returns the entries to put on
        its ASGI scope (a valid session cookie on a status route: the :class:`Login`; a route
        that needs no credential: nothing), or None: refuse it as before (401)."""
        if not self._tokens:
            return None  # no [auth]: the guard has nothing to check
        if path in COOKIE_ROUTES and cookie:
            login = self.session(_cookie_value(cookie) or "")
            if login is not None:
                return {LOGIN_SCOPE_KEY: login}
        return {} if (method, path) in OPEN_ROUTES else None

    def publish(self, store_dir: Path, url: str) -> Path:
        """Write the gateway's address and code key to :data:`LOGIN_FILE` (mode 0600, replaced
        atomically), for ``toolroute status --open``."""
        store_dir.mkdir(parents=True, exist_ok=True)
        path = store_dir / LOGIN_FILE
        tmp = store_dir / f".{LOGIN_FILE}.{os.getpid()}"
        tmp.unlink(missing_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"url": url, "key": self._key.hex(), "pid": os.getpid()}, f)
        tmp.replace(path)
        return path

    def _drop_expired(self, now: float) -> None:
        for sid in [s for s, login in self._sessions.items() if login.expires <= now]:
            del self._sessions[sid]


def _cookie_value(header: str) -> str | None:
    try:
        jar: SimpleCookie = SimpleCookie(header)
    except CookieError:
        return None
    morsel = jar.get(COOKIE)
    return None if morsel is None else morsel.value
