"""Command-line options that are ``[toolroute]`` settings: their type, default and help come
from the one definition in :class:`~toolroute.settings.ToolrouteSettings`, so that
``toolroute route --abstain`` and ``abstain`` in a toolroute.toml cannot drift apart."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeVar, get_args, get_origin

import annotated_types
import click
from pydantic.fields import FieldInfo

from toolroute.settings import ToolrouteSettings

__all__ = ["abstain_option", "k_option", "setting_option", "strategy_option"]

F = TypeVar("F", bound=Callable[..., Any])


def click_type(info: FieldInfo) -> click.ParamType[Any] | None:
    """The click type checking what the field checks: a choice for a ``Literal``, a range for
    bounded numbers; None where click's default (text) does."""
    annotation = info.annotation
    if get_origin(annotation) is Literal:
        return click.Choice([str(a) for a in get_args(annotation)])
    bounds: dict[str, Any] = {}
    for m in info.metadata:
        if isinstance(m, annotated_types.Ge):
            bounds["min"] = m.ge
        elif isinstance(m, annotated_types.Gt):
            bounds.update(min=m.gt, min_open=True)
        elif isinstance(m, annotated_types.Le):
            bounds["max"] = m.le
    if annotation is int:
        return click.IntRange(**bounds) if bounds else click.INT
    if annotation is float:
        return click.FloatRange(**bounds) if bounds else click.FLOAT
    return None


def setting_option(name: str, *flags: str) -> Callable[[F], F]:
    """``click.option`` for the setting ``name`` (flags default to ``--name-with-dashes``): the
    setting's type, its default (shown) and its description as the help."""
    info = ToolrouteSettings.model_fields[name]
    return click.option(
        *(flags or (f"--{name.replace('_', '-')}",)),
        name,
        type=click_type(info),
        default=info.get_default(call_default_factory=True),
        show_default=True,
        help=info.description,
    )


strategy_option = setting_option("strategy", "--strategy", "-s")
k_option = setting_option("k", "-k")
abstain_option = setting_option("abstain")
