"""What a simulation measured (bench/simulation.py): the interval over seeds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from toolroute.bench.simulation import ci95, stat_text
from toolroute.errors import ConfigError


def test_ci95_is_the_student_t_half_width() -> None:
    s = ci95([1.0, 2.0, 3.0, 4.0, 5.0])
    assert s["mean"] == 3.0
    assert s["ci95"] == pytest.approx(2.776 * math.sqrt(2.5) / math.sqrt(5), rel=1e-9)
    ten = ci95([float(x) for x in range(10)])
    assert ten["ci95"] == pytest.approx(2.262 * np.std(range(10), ddof=1) / math.sqrt(10))
    assert ci95([4.0])["ci95"] is None
    many = [float(x % 7) for x in range(45)]  # df = 44: the df = 40 quantile, a bit wider
    assert many and ci95(many)["ci95"] == pytest.approx(
        2.021 * np.std(many, ddof=1) / math.sqrt(45)
    )
    assert ci95([2.0] * 50)["ci95"] == 0.0
    with pytest.raises(ConfigError):
        ci95([])


def test_a_stat_reads_as_its_mean_and_half_width_signed_for_a_difference() -> None:
    assert stat_text({"mean": 0.5, "ci95": 0.0123}, 3) == "0.500 ± 0.012"
    assert stat_text({"mean": 0.5, "ci95": None}, 2) == "0.50"  # one seed: no interval
    assert stat_text({"mean": 0.25, "ci95": 0.1}, 2, sign=True) == "+0.25 ± 0.10"
    assert stat_text({"mean": -0.25, "ci95": None}, 2, sign=True) == "-0.25"
