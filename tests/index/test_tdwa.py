from __future__ import annotations

import numpy as np
import pytest

from toolroute.errors import ConfigError
from toolroute.index.tdwa import PRESETS, DocConfig, tdwa


def test_tdwa_is_the_normalised_weighted_sum() -> None:
    name = np.array([[1.0, 0.0]], dtype=np.float32)
    desc = np.array([[0.0, 1.0]], dtype=np.float32)
    z = tdwa(
        {"name": name, "description": desc},
        {"name": np.array([True]), "description": np.array([True])},
        {"name": 0.25, "description": 0.75},
    )
    expected = np.array([0.25, 0.75]) / np.linalg.norm([0.25, 0.75])
    assert np.allclose(z[0], expected)


def test_absent_component_drops_out() -> None:
    name = np.array([[1.0, 0.0]], dtype=np.float32)
    params = np.array([[0.0, 1.0]], dtype=np.float32)
    z = tdwa(
        {"name": name, "parameters": params},
        {"name": np.array([True]), "parameters": np.array([False])},
        {"name": 0.5, "parameters": 0.5},
    )
    assert np.allclose(z[0], [1.0, 0.0])


def test_paper_presets_match_seed_001_table_4() -> None:
    assert dict(PRESETS["var-1"].weights) == {
        "name": 0.2,
        "description": 0.2,
        "parameters": 0.2,
        "questions": 0.4,
    }
    assert dict(PRESETS["var-2"].weights) == {"name": 0.2, "description": 0.3, "questions": 0.5}


def test_bad_weights_are_config_errors() -> None:
    with pytest.raises(ConfigError):
        DocConfig("x", {"name": -1.0})
    with pytest.raises(ConfigError, match="unknown document component"):
        DocConfig("x", {"title": 1.0})  # type: ignore[dict-item]
