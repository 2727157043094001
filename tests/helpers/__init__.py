"""Helpers shared by test modules (test modules never import each other):

- :mod:`tests.helpers.net`: a free loopback port, waiting for a process to listen on one;
- :mod:`tests.helpers.faults`: the fault suite's configs and in-process gateway runner;
- :mod:`tests.helpers.status`: a real ``toolroute serve --transport http`` after one agent turn;
- :mod:`tests.helpers.conformance` and :mod:`tests.helpers.conformance_2026`: the MCP
  conformance suites against the gateway (tests/conformance; benchmarks/ writes their tables);
- :mod:`tests.helpers.abstain`: the small catalog's router and a hand-set abstention model.
- :mod:`tests.helpers.configs`: a gateway's ``servers.json`` and ``toolroute.toml``.

Constants (paths, the time server's entry, npm servers) are in ``tests/conftest.py``.
"""
