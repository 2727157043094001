"""The ``toolroute`` command: a thin layer over :class:`toolroute.Router`.

Errors a user can cause (bad file, bad option, missing model package) are printed as one line
on stderr with exit code 2; this is the only place that turns exceptions into exit codes.

One module per concern: :mod:`~toolroute.cli.app` holds the click group ``main``,
:mod:`~toolroute.cli.common` the shared options and helpers, and the commands live in
:mod:`~toolroute.cli.catalog` (index, route, strategies, demo), :mod:`~toolroute.cli.measure`
(bench, simulate, calibrate), :mod:`~toolroute.cli.gateway` (sync, serve, status, approve),
:mod:`~toolroute.cli.registry` (add),
:mod:`~toolroute.cli.auth` (auth) and
:mod:`~toolroute.cli.connect` (connect, disconnect). Importing this
package registers every command on ``main``.
"""

from __future__ import annotations

from toolroute.cli import (  # noqa: F401  (registers them)
    auth,
    catalog,
    connect,
    gateway,
    measure,
    memory,
    registry,
)
from toolroute.cli.app import main

__all__ = ["main"]
