"""The ``toolroute`` command: a thin layer over :class:`toolroute.Router`.

Errors a user can cause (bad file, bad option, missing model package) are printed as one line
on stderr with exit code 2; this is the only place that turns exceptions into exit codes.

One module per concern: :mod:`~toolroute.cli.app` holds the click group ``main``, which names
every command and imports a command's module only when that command is used;
:mod:`~toolroute.cli.common` the shared options and helpers, :mod:`~toolroute.cli.render` what
is printed on a terminal (tables, progress). The commands live in
:mod:`~toolroute.cli.catalog` (index, route, strategies, demo), :mod:`~toolroute.cli.measure`
(bench, simulate, calibrate), :mod:`~toolroute.cli.gateway` (sync, status, approve),
:mod:`~toolroute.cli.serve` (serve), :mod:`~toolroute.cli.registry` (add),
:mod:`~toolroute.cli.auth` (auth), :mod:`~toolroute.cli.memory` (memory) and
:mod:`~toolroute.cli.connect` (connect, disconnect).
"""

from __future__ import annotations

from toolroute.cli.app import main

__all__ = ["main"]
