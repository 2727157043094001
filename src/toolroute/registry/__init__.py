"""Servers from an MCP registry, on the operator's terms (docs/registry.md).

When no connected tool serves a need, ``find_tools`` names the registry servers that would
(:mod:`~toolroute.registry.suggest`); ``toolroute add`` writes one into the servers file
(:mod:`~toolroute.registry.install`) after the allow-list and the checks against a registry
that lies (:mod:`~toolroute.registry.policy`). The registry is read by
:mod:`~toolroute.registry.client` and its entries checked by :mod:`~toolroute.registry.entry`.
Nothing here runs without ``[registry] url``. The modules are imported by name (the
command line reads the client without the router).
"""
