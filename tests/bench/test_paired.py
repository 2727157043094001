from __future__ import annotations

import numpy as np

from toolroute.bench.paired import Interval, keep_verdict, paired_bootstrap


def test_a_consistent_gain_has_an_interval_above_zero() -> None:
    rng = np.random.default_rng(1)
    base = rng.random(200)
    iv = paired_bootstrap(base + 0.05, base)
    assert iv.verdict == "gain" and abs(iv.diff - 0.05) < 1e-9 and iv.low > 0


def test_pure_noise_straddles_zero_and_the_seed_fixes_the_interval() -> None:
    rng = np.random.default_rng(2)
    a, b = rng.random(100), rng.random(100)
    iv = paired_bootstrap(a, b)
    assert iv.verdict == "tie"
    assert paired_bootstrap(a, b) == iv


def test_pairing_removes_the_spread_between_queries() -> None:
    # per-query levels vary widely; the difference is the same on every query
    base = np.linspace(0.0, 0.9, 50)
    iv = paired_bootstrap(base + 0.01, base)
    assert iv.low > 0.0099


def test_keep_rule_needs_a_gain_off_the_development_sets_and_no_loss() -> None:
    gain, tie, loss = (
        Interval(0.05, 0.01, 0.09),
        Interval(0.0, -0.02, 0.02),
        Interval(-0.05, -0.09, -0.01),
    )
    assert keep_verdict({"a": [gain], "b": [tie]}, ["a"]) == (
        False,
        "no gain beyond noise on a set it was not developed on",
    )
    assert keep_verdict({"a": [tie], "b": [gain]}, ["a"]) == (True, "gains on b")
    assert keep_verdict({"a": [loss], "b": [gain]}, ["a"]) == (False, "loses on a")
