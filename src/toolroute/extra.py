"""Optional features and the extra that installs each: a plain ``pip install toolroute`` routes,
syncs and serves; plots, the second embedding model and the local LLM come with an extra, and
a command that needs one says which in one line."""

from __future__ import annotations

import importlib
from types import ModuleType

from toolroute.errors import ConfigError

__all__ = ["require"]


def require(module: str, extra: str, feature: str) -> ModuleType:
    """Import ``module`` for ``feature``, or raise a :class:`ConfigError` naming the extra."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ConfigError(
            f"{feature} needs {module.split('.')[0]}: pip install 'toolroute[{extra}]'"
        ) from None
