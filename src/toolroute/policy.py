"""Who may use what: a client's allow-list, the call gate's scope and its ``[limits]``.

The config's types for :mod:`toolroute.gateway.calls.access` (which enforces them per request):
they sit below both :mod:`toolroute.config` and the gateway, so neither imports the other.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from toolroute.catalog.name import server_of
from toolroute.errors import ConfigError

__all__ = [
    "CallGateScope",
    "ClientAccess",
    "Limit",
    "LimitSettings",
    "TokenBucket",
    "gate_scope",
]

CallGateScope = Literal["connection", "client", "off"]


def gate_scope(value: bool | str) -> CallGateScope:
    """``call_gate`` as a scope: ``true`` is the default ``"client"``, ``false`` is ``"off"``."""
    if value is True:
        return "client"
    if value is False:
        return "off"
    if value in ("connection", "client", "off"):
        return value  # type: ignore[return-value]
    raise ConfigError(
        f"call_gate: {value!r} is not one of connection, client, off (or true / false)"
    )


@dataclass(frozen=True, slots=True)
class ClientAccess:
    """One client of the HTTP gateway: its id, its token and what it may use.

    ``servers`` and ``tools`` are allow-lists (``fnmatch`` patterns, ``tools`` on the
    ``server__tool`` name); a tool is allowed when its server or its name matches one. With
    both empty the client may use every tool.
    """

    client_id: str
    token: str = field(repr=False)
    servers: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()

    @property
    def restricted(self) -> bool:
        return bool(self.servers or self.tools)

    def allows(self, name: str) -> bool:
        """Whether this client may see and call the tool ``server__tool``."""
        if not self.restricted:
            return True
        server = server_of(name)
        return any(fnmatch.fnmatchcase(server, p) for p in self.servers) or any(
            fnmatch.fnmatchcase(name, p) for p in self.tools
        )


# -- token bucket math (pure) ----------------------------------------------------------------
def refill(tokens: float, elapsed_s: float, rate_per_s: float, capacity: float) -> float:
    """Tokens after ``elapsed_s``: ``rate_per_s`` added per second, never above ``capacity``
    (a clock going back adds nothing)."""
    return min(capacity, tokens + max(0.0, elapsed_s) * rate_per_s)


def wait_for_token(tokens: float, rate_per_s: float) -> float:
    """Seconds until a bucket holding ``tokens`` holds one whole token (0: it does)."""
    return 0.0 if tokens >= 1.0 else (1.0 - tokens) / rate_per_s


@dataclass(slots=True)
class TokenBucket:
    """``capacity`` calls at once, then ``rate_per_s`` calls per second."""

    rate_per_s: float
    capacity: float
    tokens: float
    at: float
    """When ``tokens`` was last brought up to date (a monotonic clock)."""

    @classmethod
    def full(cls, rate_per_s: float, capacity: float, now: float) -> TokenBucket:
        return cls(rate_per_s, capacity, capacity, now)

    def wait(self, now: float) -> float:
        """Bring the bucket up to ``now``; seconds until a token is there (0: one is)."""
        self.tokens = refill(self.tokens, now - self.at, self.rate_per_s, self.capacity)
        self.at = max(self.at, now)
        return wait_for_token(self.tokens, self.rate_per_s)

    def take(self) -> None:
        """Spend one token (after :meth:`wait` said one is there)."""
        self.tokens -= 1.0


# -- settings --------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Limit:
    """One set of limits; None: no such limit."""

    calls_per_minute: float | None = None
    burst: int | None = None
    """Calls a full bucket allows at once (default: one minute's worth, at least 1)."""
    max_concurrent: int | None = None
    budget_usd_per_day: float | None = None

    def over(self, other: Limit) -> Limit:
        """This limit's fields where set, else ``other``'s (a client's override over the
        defaults)."""

        def pick(mine: Any, theirs: Any) -> Any:
            return mine if mine is not None else theirs

        return Limit(
            pick(self.calls_per_minute, other.calls_per_minute),
            pick(self.burst, other.burst),
            pick(self.max_concurrent, other.max_concurrent),
            pick(self.budget_usd_per_day, other.budget_usd_per_day),
        )

    def bucket(self, now: float) -> TokenBucket | None:
        if self.calls_per_minute is None:
            return None
        capacity = (
            self.burst if self.burst is not None else max(1, math.floor(self.calls_per_minute))
        )
        return TokenBucket.full(self.calls_per_minute / 60.0, float(capacity), now)


@dataclass(frozen=True, slots=True)
class LimitSettings:
    """``[limits]``: the defaults of every client, per-client overrides, per-tool limits."""

    default: Limit = field(default_factory=Limit)
    clients: Mapping[str, Limit] = field(default_factory=dict)
    """By client id: a token's id, an ``X-Toolroute-Client`` value or a ``clientInfo.name``."""
    tools: Mapping[str, Limit] = field(default_factory=dict)
    """By ``server__tool``: a rate and concurrency per client on that tool."""

    def for_client(self, client_id: str) -> Limit:
        override = self.clients.get(client_id)
        return self.default if override is None else override.over(self.default)

    @property
    def empty(self) -> bool:
        return self.default == Limit() and not self.clients and not self.tools
