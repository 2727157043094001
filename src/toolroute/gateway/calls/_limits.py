"""Per-client limits on tool calls: a request rate (token bucket), calls in flight, and a USD
budget per day from the tools' posted prices (``[limits]`` in toolroute.toml).

A client is who the call gate takes it for (:func:`toolroute.gateway.calls.access.client_identity`):
the token's client id with ``[auth]``, else the ``X-Toolroute-Client`` header, else the
``clientInfo.name`` of its ``initialize`` (those two are the client's own word: without
tokens a limit holds a well-behaved client to its share, it stops no one who lies about
their name). ``[limits.clients.<id>]`` overrides the defaults for one client, field by field;
``[limits.tools."server__tool"]`` adds a rate and a concurrency limit per client on one tool.

Each limit applies to the calls of downstream tools (``call_tool``, bound and pass-through
tools), after the allow-list, the call gate and the preconditions: :meth:`Limits.step` is the
call path's ``limits`` step, in a gateway that has ``[limits]`` (without them the step is not on
the path at all); ``find_tools`` is not limited. Over a limit the
call is not made and the answer is an ``isError`` result::

    {"error": "limit_exceeded", "limit": "rate" | "concurrency" | "budget",
     "scope": "client" | "tool", "retry_after_s": 1.5, "message": …, "hint": …}

The budget is charged a tool's price when its call is admitted, in one store transaction that
checks the day's total first (so concurrent calls and gateway replicas sharing a PostgreSQL
store never overspend), and given back when the gateway refused the call before it reached the
server (unknown tool, invalid arguments, quarantined, server not connected) or when the server
asked the client for input first (the round that answers is charged). The day is the UTC
day; the charges are in the store (schema v6, table ``spend``), so they survive a restart. Rate
buckets and calls in flight live in the process: a restart refills the buckets, which takes
longer than the seconds a bucket holds.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from mcp import types

from toolroute.gateway.calls.access import ANONYMOUS
from toolroute.gateway.calls.pipeline import Call, CallResult, Host, Next
from toolroute.policy import Limit, LimitSettings, TokenBucket, refill, wait_for_token

if TYPE_CHECKING:
    from toolroute.catalog.models import Tool
    from toolroute.router import Router

__all__ = [
    "MAX_BUCKETS",
    "Limit",
    "LimitRefusal",
    "LimitSettings",
    "Limits",
    "TokenBucket",
    "refill",
    "seconds_to_next_day",
    "wait_for_token",
]

T = TypeVar("T")
LimitKind = Literal["rate", "concurrency", "budget"]

MAX_BUCKETS = 10_000


class _Audit(Protocol):
    def audit(self, part: str) -> AbstractContextManager[None]: ...


class _StoreTimer(Protocol):
    def store(self, operation: str) -> AbstractContextManager[None]: ...


class _Tools(Protocol):
    @property
    def tools_by_name(self) -> Mapping[str, Tool]: ...


class Gateway(Protocol):
    """What the limits read from the gateway: its store (budgets), its tools (prices), and
    where a failed store write is reported and timed."""

    @property
    def router(self) -> Router: ...
    @property
    def presenter(self) -> _Tools: ...
    @property
    def faults(self) -> _Audit: ...
    @property
    def metrics(self) -> _StoreTimer: ...


"""Rate buckets kept (least recently used dropped: a dropped bucket comes back full). Without
tokens a client names itself, so their number must be bounded."""
NOT_FORWARDED = frozenset({"unknown_tool", "invalid_arguments", "quarantined", "unavailable"})
"""Error kinds of a call the gateway answered without the server doing any work: its budget
charge is given back."""
CONCURRENCY_RETRY_S = 1.0
"""retry_after_s of a concurrency refusal: a slot frees when a call in flight ends, which the
gateway cannot foresee; a second is the usual length of a call."""


def seconds_to_next_day(now: float) -> float:
    """Seconds from epoch time ``now`` to the next UTC midnight (when a day's budget resets)."""
    day = dt.datetime.fromtimestamp(now, dt.UTC).date() + dt.timedelta(days=1)
    midnight = dt.datetime.combine(day, dt.time(), dt.UTC).timestamp()
    return max(0.0, midnight - now)


def utc_day(now: float) -> str:
    return dt.datetime.fromtimestamp(now, dt.UTC).strftime("%Y-%m-%d")


# -- the gateway's limits --------------------------------------------------------------------
class LimitRefusal(types.CallToolResult):
    """A call refused by a limit: the client's doing, not the tool's failure (it never
    reaches the usage memory, whose step comes after the limits')."""


class Limits:
    """Admits or refuses each tool call of the gateway ``gateway`` by ``settings``."""

    def __init__(
        self,
        settings: LimitSettings,
        gateway: Gateway,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.gateway = gateway
        self.clock = clock
        self.wall = wall
        self._buckets: OrderedDict[tuple[str, str], TokenBucket] = OrderedDict()
        self._active: dict[tuple[str, str], int] = {}
        self._pruned_day = ""

    async def step(self, host: Host, call: Call, next: Next) -> CallResult:
        """The call path's ``limits`` step: the client's concurrency, rate and USD budget
        (a refusal is no call), counted against the call's identity."""
        return await self.call(
            lambda name, args: next(replace(call, name=name, arguments=args)),
            call.name,
            call.arguments,
            call.identity,
        )

    async def call(
        self,
        run: Callable[[str, dict[str, Any]], Awaitable[T]],
        name: str,
        arguments: dict[str, Any],
        client: str = ANONYMOUS,
    ) -> T:
        """``run(name, arguments)`` if ``client`` (who made the call:
        :func:`~toolroute.gateway.calls.access.client_identity`) is within its limits, else
        the refusal (an ``isError`` result)."""
        mine = self.settings.for_client(client.partition(":")[2] or client)
        per_tool = self.settings.tools.get(name)
        refused = self._check_concurrency(client, name, mine, per_tool) or self._check_rate(
            client, name, mine, per_tool
        )
        if refused is not None:
            return refused  # type: ignore[return-value]
        charged, day = 0.0, utc_day(self.wall())
        price = self._price(name)
        if mine.budget_usd_per_day is not None and price > 0:
            refused = self._charge(client, name, day, price, mine.budget_usd_per_day)
            if refused is not None:
                return refused  # type: ignore[return-value]
            charged = price
        keys = [(client, "")] + ([(client, name)] if per_tool is not None else [])
        for key in keys:
            self._active[key] = self._active.get(key, 0) + 1
        try:
            result = await run(name, arguments)
        finally:
            for key in keys:
                self._active[key] -= 1
                if not self._active[key]:
                    del self._active[key]
        if charged and (_not_forwarded(result) or isinstance(result, types.InputRequiredResult)):
            # not made, or a 2026-07-28 round that asks the client first: the round that
            # answers is the one charged
            with self.gateway.faults.audit("store"), self.gateway.metrics.store("spend"):
                self.gateway.router.store.charge(client, day, -charged)
        return result

    def _check_concurrency(
        self, client: str, name: str, mine: Limit, per_tool: Limit | None
    ) -> types.CallToolResult | None:
        for scope, limit, key in (
            ("client", mine, (client, "")),
            ("tool", per_tool, (client, name)),
        ):
            most = limit.max_concurrent if limit is not None else None
            if most is not None and self._active.get(key, 0) >= most:
                return _refusal(
                    "concurrency",
                    scope,
                    name,
                    CONCURRENCY_RETRY_S,
                    f"{_whose(scope, name)} are limited to {most} at once, and {most} are in "
                    "flight",
                )
        return None

    def _check_rate(
        self, client: str, name: str, mine: Limit, per_tool: Limit | None
    ) -> types.CallToolResult | None:
        now = self.clock()
        buckets = []
        for scope, limit, key in (
            ("client", mine, (client, "")),
            ("tool", per_tool, (client, name)),
        ):
            bucket = self._bucket(key, limit, now) if limit is not None else None
            if bucket is None:
                continue
            wait = bucket.wait(now)
            if wait > 0:  # neither bucket is spent: a refused call costs no token
                per_min = bucket.rate_per_s * 60
                return _refusal(
                    "rate",
                    scope,
                    name,
                    wait,
                    f"{_whose(scope, name)} are limited to {per_min:g} per minute "
                    f"(bursts of {bucket.capacity:g})",
                )
            buckets.append(bucket)
        for bucket in buckets:
            bucket.take()
        return None

    def _bucket(self, key: tuple[str, str], limit: Limit, now: float) -> TokenBucket | None:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = limit.bucket(now)
            if bucket is None:
                return None
            self._buckets[key] = bucket
            if len(self._buckets) > MAX_BUCKETS:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
        return bucket

    def _charge(
        self, client: str, name: str, day: str, price: float, budget: float
    ) -> types.CallToolResult | None:
        now = self.wall()
        store = self.gateway.router.store
        with self.gateway.metrics.store("spend"):
            if day != self._pruned_day:  # yesterday's totals are kept, older ones go
                store.prune_spend(utc_day(now - 86400.0))  # before: gone
                self._pruned_day = day
            ok, spent = store.charge(client, day, price, budget)
        if ok:
            return None
        return _refusal(
            "budget",
            "client",
            name,
            seconds_to_next_day(now),
            f"a call of {name} costs {price:g} USD and this client has spent {spent:g} of "
            f"its {budget:g} USD today (UTC)",
            spent_usd=round(spent, 6),
            budget_usd=budget,
            price_usd=price,
        )

    def _price(self, name: str) -> float:
        tool = self.gateway.presenter.tools_by_name.get(name)
        price = getattr(tool, "price", None)
        return float(price) if price else 0.0


def _whose(scope: str, name: str) -> str:
    return f"calls of {name} by this client" if scope == "tool" else "this client's tool calls"


def _refusal(
    limit: LimitKind, scope: str, name: str, retry_after_s: float, why: str, **extra: Any
) -> LimitRefusal:
    wait = math.ceil(retry_after_s * 1000) / 1000  # never earlier than the limit allows
    payload = {
        "error": "limit_exceeded",
        "limit": limit,
        "scope": scope,
        "tool": name,
        "retry_after_s": wait,
        "message": f"{why}: not called",
        "hint": f"retry in {wait:g} s" if limit != "budget" else
        "the budget resets at 00:00 UTC; tell the user, or use a tool without a price",
        **extra,
    }  # fmt: skip
    return LimitRefusal(
        content=[types.TextContent(type="text", text=json.dumps(payload))],
        structured_content=payload,
        is_error=True,
    )


def _not_forwarded(result: object) -> bool:
    payload = getattr(result, "structured_content", None)
    return (
        bool(getattr(result, "is_error", False))
        and isinstance(payload, dict)
        and payload.get("error") in NOT_FORWARDED
    )
