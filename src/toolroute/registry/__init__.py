"""Servers from an MCP registry, on the operator's terms (docs/registry.md).

When no connected tool serves a need, ``find_tools`` names the registry servers that would
(:mod:`~toolroute.registry.suggest`); ``toolroute add`` writes one into the servers file
(:mod:`~toolroute.registry.install`) after the allow-list and the checks against a registry
that lies (:mod:`~toolroute.registry.policy`). The registry is read by
:mod:`~toolroute.registry.client` and its entries checked by :mod:`~toolroute.registry.entry`.
Nothing here runs without ``[registry] url``.
"""

from __future__ import annotations

from toolroute.registry.client import Listing, RegistryClient
from toolroute.registry.entry import ServerEntry, parse_entry
from toolroute.registry.install import Plan, plan, write
from toolroute.registry.suggest import Suggester, Suggestion

__all__ = [
    "Listing",
    "Plan",
    "RegistryClient",
    "ServerEntry",
    "Suggester",
    "Suggestion",
    "parse_entry",
    "plan",
    "write",
]
