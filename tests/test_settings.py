"""Each ``[toolroute]`` setting is declared once, in :class:`ToolrouteSettings`; every other
layer between the file and the call path takes it from there, not spelled again. The other
tables the gateway reads (``[http]``, ``[metrics]``, ``[auth]``, ``[limits]``) are held by the
config the same way: each as its model's one object, none of their settings copied into a
field of its own.

The settings travel as one object: the config holds it (``GatewayConfig.settings``),
``make_gateway`` hands it on, the gateway's two constructors take it whole and a reload applies
a new one in one step (``Shared.apply``). A layer that declares a setting's name again (a
field of the config, a parameter of a constructor) fails here; the layers' own names that are
no setting (``servers``, ``router``, ``clients``, …) are not counted. The library's defaults
(the Router's, its route parameters', the presenter's) are the settings' own objects."""

from __future__ import annotations

import dataclasses
import inspect
import tomllib
import typing
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import BaseModel

from toolroute.catalog.models import Catalog
from toolroute.config import GatewayConfig, load_config
from toolroute.downstream.servers import Downstreams
from toolroute.gateway.ops.app import build_router, make_gateway
from toolroute.gateway.shared import Shared
from toolroute.gateway.shell.server import Gateway
from toolroute.papers.tool_attention.agent_loop import ToolAttention
from toolroute.present.presenter import PresentConfig
from toolroute.route.adaptive import AdaptiveParams
from toolroute.route.stage import RouteParams
from toolroute.router import Router
from toolroute.settings import (
    DEFAULTS,
    AuthTable,
    HttpTable,
    LimitsTable,
    MetricsTable,
    Toml,
    ToolrouteSettings,
)

SETTINGS = frozenset(ToolrouteSettings.model_fields)


def _parameters(f: Callable[..., object]) -> set[str]:
    return set(inspect.signature(f).parameters) - {"self"}


LAYERS: dict[str, Callable[[], set[str]]] = {
    "GatewayConfig": lambda: {f.name for f in dataclasses.fields(GatewayConfig)},
    "make_gateway": lambda: _parameters(make_gateway),
    "Gateway.__init__": lambda: _parameters(Gateway.__init__),
    "Shared.__init__": lambda: _parameters(Shared.__init__),
}
"""The layers a setting passes from the file to the call path. Before issue 47, beside the 20
of :class:`ToolrouteSettings`, GatewayConfig spelled all 20 again and the two constructors 7
each (34 repeats); now none does."""


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_no_layer_declares_a_setting_again(layer: str) -> None:
    again = sorted(LAYERS[layer]() & SETTINGS)
    assert again == [], f"{layer} declares {again} again: read them from ToolrouteSettings"


TABLES: dict[str, type[BaseModel]] = {
    "http": HttpTable,
    "metrics": MetricsTable,
    "auth": AuthTable,
    "limits": LimitsTable,
}
"""The other tables the config holds whole. Before issue 47 it copied eight of their settings
into fields of its own (``allowed_hosts``, ``http_json_response``, ``metrics: bool``, …)."""


def _table_settings(table: str) -> set[str]:
    """A table's settings: its fields, but the sub-tables (``[auth.clients.ID]``,
    ``[limits.tools."…"]``), which are no setting of the table itself."""
    fields = TABLES[table].model_fields.items()
    return {name for name, info in fields if typing.get_origin(info.annotation) is not dict}


@pytest.mark.parametrize("table", sorted(TABLES))
def test_the_config_declares_no_setting_of_another_table_again(table: str) -> None:
    spelled = {
        name for setting in _table_settings(table) for name in (setting, f"{table}_{setting}")
    }
    again = sorted(LAYERS["GatewayConfig"]() & spelled)
    assert again == [], f"GatewayConfig declares [{table}] {again} again: read config.{table}"


@pytest.mark.parametrize("table", sorted(TABLES))
def test_the_config_holds_each_table_as_its_models_one_object(table: str, tmp_path: Path) -> None:
    hint = typing.get_type_hints(GatewayConfig)[table]
    assert TABLES[table] in (hint, *typing.get_args(hint)), hint
    servers = tmp_path / "servers.json"
    servers.write_text('{"mcpServers": {"time": {"command": "x"}}}')
    (tmp_path / "toolroute.toml").write_text(
        '[http]\nallowed_hosts = ["gw.lan:*"]\nsession_idle_s = 60\n'
        "[metrics]\nenabled = false\n[auth]\nenabled = false\n"
        '[limits]\ncalls_per_minute = 5\n[limits.tools."time__now"]\nburst = 2\n'
    )
    config = load_config(servers)
    read = getattr(
        Toml.model_validate(tomllib.loads((tmp_path / "toolroute.toml").read_text())), table
    )
    assert getattr(config, table) == read and isinstance(read, TABLES[table])


def test_the_tables_cannot_be_changed_in_place() -> None:
    with pytest.raises(ValueError, match="frozen"):
        GatewayConfig(servers={}).http.session_idle_s = 1  # type: ignore[misc]


@pytest.mark.parametrize("layer", ["GatewayConfig", "Gateway.__init__", "Shared.__init__"])
def test_the_config_and_the_gateways_constructors_take_the_settings_as_one_object(
    layer: str,
) -> None:
    assert "settings" in LAYERS[layer]()


def test_the_gateway_runs_with_the_configs_settings_object_itself(tmp_path: Path) -> None:
    settings = ToolrouteSettings(store=str(tmp_path / "store"), k=3, threshold=0.2)
    config = GatewayConfig(servers={}, settings=settings)
    router = build_router(config, Catalog(servers=()))
    try:
        gateway = make_gateway(config, router, Downstreams({}))
        assert gateway.shared.settings is settings
        assert gateway.shared.presenter.config.top_k == 3
        assert gateway.shared.presenter.config.threshold == 0.2
    finally:
        router.close()


def test_the_settings_object_cannot_be_changed_in_place() -> None:
    with pytest.raises(ValueError, match="frozen"):
        DEFAULTS.k = 9  # type: ignore[misc]
    assert DEFAULTS.model_copy(update={"k": 9}).k == 9 and DEFAULTS.k == 5


def test_call_gate_true_and_false_are_the_scopes_they_mean() -> None:
    assert ToolrouteSettings(call_gate=True) == ToolrouteSettings(call_gate="client")
    assert ToolrouteSettings(call_gate=False).call_gate == "off"


def test_the_librarys_defaults_are_the_settings_defaults() -> None:
    for method in (Router.route, Router.explain):
        parameters = inspect.signature(method).parameters
        assert parameters["k"].default == DEFAULTS.k, method
        assert parameters["strategy"].default == DEFAULTS.strategy, method
    assert inspect.signature(Router.scores).parameters["strategy"].default == DEFAULTS.strategy
    assert RouteParams().abstain == DEFAULTS.abstain
    assert AdaptiveParams().value_usd == DEFAULTS.value_usd
    assert PresentConfig().top_k == DEFAULTS.k
    strategy = inspect.signature(ToolAttention.__init__).parameters["strategy"]
    assert strategy.default == DEFAULTS.strategy
