"""Each ``[toolroute]`` setting is declared once, in :class:`ToolrouteSettings`; every other
layer between the file and the call path should take it from there, not spell it again.

Today five layers spell setting names (issue 47): :class:`GatewayConfig` repeats every one, and
the gateway's two constructors repeat seven. ``DECLARED_AGAIN`` lists them so that a new
repetition fails here, and so does a listed one that has gone (strike it: the list only
shrinks). The layers' own names that are no setting (``servers``, ``router``, …) are not
counted."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable

import pytest

from toolroute.config import GatewayConfig
from toolroute.gateway.core import GatewayCore
from toolroute.gateway.ops.app import make_gateway
from toolroute.gateway.shell.server import Gateway
from toolroute.settings import ToolrouteSettings

SETTINGS = frozenset(ToolrouteSettings.model_fields)
_CONSTRUCTOR_REPEATS = frozenset(
    {"call_gate", "call_timeout_s", "expose", "k", "milestones", "scopes", "strategy"}
)
DECLARED_AGAIN: dict[str, frozenset[str]] = {
    "GatewayConfig": SETTINGS,
    "make_gateway": frozenset(),
    "Gateway.__init__": _CONSTRUCTOR_REPEATS,
    "GatewayCore.__init__": _CONSTRUCTOR_REPEATS,
}
"""Setting names each layer declares again today (2026-11-28: 20 + 0 + 7 + 7 = 34)."""


def _parameters(f: Callable[..., object]) -> set[str]:
    return set(inspect.signature(f).parameters) - {"self"}


LAYERS: dict[str, Callable[[], set[str]]] = {
    "GatewayConfig": lambda: {f.name for f in dataclasses.fields(GatewayConfig)},
    "make_gateway": lambda: _parameters(make_gateway),
    "Gateway.__init__": lambda: _parameters(Gateway.__init__),
    "GatewayCore.__init__": lambda: _parameters(GatewayCore.__init__),
}


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_no_layer_declares_a_setting_again_beyond_todays_list(layer: str) -> None:
    declared = LAYERS[layer]() & SETTINGS
    new = sorted(declared - DECLARED_AGAIN[layer])
    gone = sorted(DECLARED_AGAIN[layer] - declared)
    assert new == [], f"{layer} declares {new} again: take them from ToolrouteSettings"
    assert gone == [], f"{layer} no longer declares {gone}: strike them from DECLARED_AGAIN"


def test_the_list_names_every_layer_and_only_settings() -> None:
    assert set(DECLARED_AGAIN) == set(LAYERS)
    assert all(names <= SETTINGS for names in DECLARED_AGAIN.values())
