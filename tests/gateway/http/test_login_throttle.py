"""The throttle on wrong tokens at the status page's login (gateway/http/login.py, issue 23)."""

from __future__ import annotations

from toolroute.gateway.http.login import FailedLogins


def test_an_address_is_refused_after_the_limit_until_its_oldest_failure_leaves_the_window() -> None:
    failures = FailedLogins(limit=3, window_s=60.0)
    for t in (0.0, 10.0, 20.0):
        assert failures.retry_after("10.0.0.1", t) is None
        failures.failed("10.0.0.1", t)
    assert failures.retry_after("10.0.0.1", 30.0) == 30.0  # the failure at 0 leaves at 60
    assert failures.retry_after("10.0.0.2", 30.0) is None  # another address: untouched
    assert failures.retry_after("10.0.0.1", 60.0) is None
    failures.failed("10.0.0.1", 61.0)  # the ones at 10 and 20 still count
    assert failures.retry_after("10.0.0.1", 62.0) == 8.0


def test_failures_spread_wider_than_the_window_never_block() -> None:
    failures = FailedLogins(limit=3, window_s=60.0)
    for t in range(0, 600, 25):  # at most three within any 60 s, never three before the next
        assert failures.retry_after("10.0.0.1", float(t)) is None
        failures.failed("10.0.0.1", float(t))
