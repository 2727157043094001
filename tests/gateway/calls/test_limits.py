"""[limits]: the token bucket's math, the settings, the budget's store accessors, and the
limiter's admissions on a gateway seam (its store a real SQLite file)."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from mcp import types

from toolroute.config import load_config
from toolroute.errors import ConfigError
from toolroute.gateway.calls._limits import (
    Limit,
    Limits,
    LimitSettings,
    TokenBucket,
    refill,
    seconds_to_next_day,
    utc_day,
    wait_for_token,
)
from toolroute.gateway.health import Faults
from toolroute.gateway.ops._metrics import NoMetrics
from toolroute.store import open_store

NOON = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC).timestamp()


def test_refill_adds_rate_times_elapsed_up_to_the_capacity() -> None:
    assert refill(0.0, 2.0, 0.5, 10.0) == 1.0
    assert refill(9.5, 2.0, 0.5, 10.0) == 10.0
    assert refill(3.0, -5.0, 0.5, 10.0) == 3.0  # a clock going back adds nothing


def test_wait_for_token_is_the_missing_fraction_over_the_rate() -> None:
    assert wait_for_token(1.0, 2.0) == 0.0
    assert wait_for_token(0.25, 0.5) == pytest.approx(1.5)


def test_a_full_bucket_allows_a_burst_then_one_call_per_interval() -> None:
    bucket = TokenBucket.full(rate_per_s=1.0, capacity=3.0, now=100.0)
    for _ in range(3):
        assert bucket.wait(100.0) == 0.0
        bucket.take()
    assert bucket.wait(100.0) == pytest.approx(1.0)
    assert bucket.wait(100.5) == pytest.approx(0.5)
    assert bucket.wait(101.0) == 0.0
    bucket.take()
    assert bucket.wait(101.0) == pytest.approx(1.0)


def test_a_bucket_defaults_to_one_minutes_worth_of_burst() -> None:
    bucket = Limit(calls_per_minute=30).bucket(0.0)
    assert bucket is not None and bucket.capacity == 30 and bucket.rate_per_s == 0.5
    small = Limit(calls_per_minute=0.5).bucket(0.0)
    assert small is not None and small.capacity == 1
    assert Limit(max_concurrent=2).bucket(0.0) is None


def test_a_client_override_replaces_only_the_fields_it_sets() -> None:
    settings = LimitSettings(
        Limit(calls_per_minute=60, max_concurrent=4, budget_usd_per_day=1.0),
        {"ci": Limit(budget_usd_per_day=50.0)},
    )
    assert settings.for_client("ci") == Limit(60, None, 4, 50.0)
    assert settings.for_client("other") == settings.default


def test_the_budget_resets_at_the_next_utc_midnight() -> None:
    assert seconds_to_next_day(NOON) == 12 * 3600
    assert utc_day(NOON) == "2026-03-01"


def test_a_charge_past_the_days_budget_is_refused_and_leaves_the_total(tmp_path: Path) -> None:
    with open_store(tmp_path) as st:
        assert st.charge("token:a", "2026-03-01", 0.4, 1.0) == (True, 0.4)
        assert st.charge("token:a", "2026-03-01", 0.4, 1.0) == (True, 0.8)
        ok, spent = st.charge("token:a", "2026-03-01", 0.4, 1.0)
        assert not ok and spent == pytest.approx(0.8)
        assert st.charge("token:b", "2026-03-01", 0.4, 1.0) == (True, 0.4)  # per client
        assert st.charge("token:a", "2026-03-02", 0.4, 1.0) == (True, 0.4)  # per day
        st.charge("token:a", "2026-03-01", -0.4)  # a refund
        assert st.spent("token:a", "2026-03-01") == (pytest.approx(0.4), 1)
    with open_store(tmp_path) as st:  # in the file, not the process
        assert st.spent("token:a", "2026-03-01") == (pytest.approx(0.4), 1)
        st.prune_spend("2026-03-02")
        assert st.spent("token:a", "2026-03-01") == (0.0, 0)
        assert st.spent("token:a", "2026-03-02") == (pytest.approx(0.4), 1)


# -- the limiter on a gateway seam -------------------------------------------------------------
def _gateway(store: Any, prices: dict[str, float]) -> Any:
    return SimpleNamespace(
        presenter=SimpleNamespace(
            tools_by_name={n: SimpleNamespace(price=p) for n, p in prices.items()}
        ),
        router=SimpleNamespace(store=store),
        faults=Faults(),
        metrics=NoMetrics(),
    )


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def _ok(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=name)])


def _refused(result: Any) -> dict[str, Any]:
    assert result.is_error
    payload: dict[str, Any] = result.structured_content
    assert payload["error"] == "limit_exceeded"
    assert json.loads(result.content[0].text) == payload
    return payload


def test_a_client_over_its_rate_is_refused_with_when_to_retry(tmp_path: Path) -> None:
    async def main() -> None:
        clock = Clock(1000.0)
        with open_store(tmp_path) as st:
            limits = Limits(
                LimitSettings(Limit(calls_per_minute=6, burst=2)),
                _gateway(st, {}),
                clock=clock,
                wall=lambda: NOON,
            )
            assert not (await limits.call(_ok, "s__t", {})).is_error
            assert not (await limits.call(_ok, "s__t", {})).is_error
            refusal = _refused(await limits.call(_ok, "s__t", {}))
            assert refusal["limit"] == "rate" and refusal["scope"] == "client"
            assert refusal["retry_after_s"] == pytest.approx(10.0)
            clock.now += 10.0
            assert not (await limits.call(_ok, "s__t", {})).is_error

    anyio.run(main)


def test_a_tool_limit_refusal_spends_no_token_of_the_clients_bucket(tmp_path: Path) -> None:
    async def main() -> None:
        clock = Clock(0.0)
        with open_store(tmp_path) as st:
            limits = Limits(
                LimitSettings(
                    Limit(calls_per_minute=60, burst=2),
                    tools={"s__slow": Limit(calls_per_minute=1)},
                ),
                _gateway(st, {}),
                clock=clock,
            )
            assert not (await limits.call(_ok, "s__slow", {})).is_error
            refusal = _refused(await limits.call(_ok, "s__slow", {}))
            assert refusal["scope"] == "tool" and refusal["retry_after_s"] == pytest.approx(60.0)
            assert not (await limits.call(_ok, "s__other", {})).is_error  # the client's 2nd token
            assert _refused(await limits.call(_ok, "s__other", {}))["scope"] == "client"

    anyio.run(main)


def test_calls_past_the_concurrency_limit_are_refused_while_others_run(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        release = anyio.Event()
        started = anyio.Event()

        async def held(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
            started.set()
            await release.wait()
            return await _ok(name, arguments)

        with open_store(tmp_path) as st:
            limits = Limits(LimitSettings(Limit(max_concurrent=1)), _gateway(st, {}))
            results: list[Any] = []

            async def first() -> None:
                results.append(await limits.call(held, "s__t", {}))

            with anyio.fail_after(5):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(first)
                    await started.wait()
                    refusal = _refused(await limits.call(_ok, "s__t", {}))
                    assert refusal["limit"] == "concurrency" and refusal["retry_after_s"] > 0
                    release.set()
            assert not results[0].is_error
            assert not (await limits.call(_ok, "s__t", {})).is_error  # the slot is free again

    anyio.run(main)


def test_the_daily_budget_charges_prices_and_refunds_calls_never_forwarded(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        async def unknown(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
            payload = {"error": "unknown_tool", "message": "no"}
            return types.CallToolResult(content=[], structured_content=payload, is_error=True)

        with open_store(tmp_path) as st:
            limits = Limits(
                LimitSettings(Limit(budget_usd_per_day=0.25)),
                _gateway(st, {"s__paid": 0.1, "s__free": 0.0}),
                wall=lambda: NOON,
            )
            for _ in range(2):
                assert not (await limits.call(_ok, "s__paid", {})).is_error
            await limits.call(unknown, "s__paid", {})  # charged, then given back
            assert st.spent("anonymous", "2026-03-01") == (pytest.approx(0.2), 2)
            refusal = _refused(await limits.call(_ok, "s__paid", {}))
            assert refusal["limit"] == "budget"
            assert refusal["retry_after_s"] == 12 * 3600
            assert refusal["spent_usd"] == pytest.approx(0.2) and refusal["budget_usd"] == 0.25
            assert not (await limits.call(_ok, "s__free", {})).is_error  # no price, no charge

    anyio.run(main)


# -- toolroute.toml ----------------------------------------------------------------------------
def _config(tmp_path: Path, toml: str) -> Path:
    tmp_path.mkdir(exist_ok=True)
    servers = tmp_path / "servers.json"
    servers.write_text(json.dumps({"mcpServers": {"time": {"command": "x"}}}))
    (tmp_path / "toolroute.toml").write_text(toml)
    return servers


def test_limits_are_read_from_toolroute_toml(tmp_path: Path) -> None:
    cfg = load_config(
        _config(
            tmp_path,
            "[limits]\ncalls_per_minute = 120\nmax_concurrent = 4\nbudget_usd_per_day = 2.5\n"
            "[limits.clients.ci]\nbudget_usd_per_day = 50\n"
            '[limits.tools."time__get_current_time"]\ncalls_per_minute = 10\nburst = 2\n'
            "[metrics]\nenabled = false\n",
        )
    )
    assert cfg.limit_settings == LimitSettings(
        Limit(120, None, 4, 2.5),
        {"ci": Limit(budget_usd_per_day=50)},
        {"time__get_current_time": Limit(calls_per_minute=10, burst=2)},
    )
    assert cfg.metrics.enabled is False
    plain = load_config(_config(tmp_path / "plain", ""))
    assert plain.limits is None and plain.limit_settings is None and plain.metrics.enabled


@pytest.mark.parametrize(
    ("toml", "says"),
    [
        ("[limits]\ncalls_per_minute = 0\n", "limits.calls_per_minute"),
        ("[limits]\nmax_concurrent = -1\n", "limits.max_concurrent"),
        ('[limits.tools."time__x"]\nbudget_usd_per_day = 1\n', "budget_usd_per_day"),
        ('[limits.tools."nope__x"]\nburst = 1\n', "'nope__x'"),
        ("[metrics]\nenabeld = true\n", "metrics.enabeld"),
    ],
)
def test_a_wrong_limit_is_one_config_error_naming_the_field(
    tmp_path: Path, toml: str, says: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(says)):
        load_config(_config(tmp_path / "c", toml))


def test_a_round_that_asks_the_client_first_is_not_charged(tmp_path: Path) -> None:
    async def asks(name: str, arguments: dict[str, Any]) -> types.InputRequiredResult:
        return types.InputRequiredResult(input_requests={}, request_state="s")

    async def main() -> None:
        with open_store(tmp_path) as st:
            limits = Limits(
                LimitSettings(Limit(budget_usd_per_day=1.0)),
                _gateway(st, {"s__paid": 0.1}),
                wall=lambda: NOON,
            )
            await limits.call(asks, "s__paid", {})
            assert st.spent("anonymous", "2026-03-01") == (0.0, 0)
            await limits.call(_ok, "s__paid", {})  # the round that answers
            assert st.spent("anonymous", "2026-03-01") == (pytest.approx(0.1), 1)

    anyio.run(main)
