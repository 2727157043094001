"""EHRR, from *Clearing MCP Navigation Fog with Economics-Aware Hierarchical Tool Routing*.

:mod:`~toolroute.papers.ehrr.economics` holds the paper's equations, one pure function each;
:mod:`~toolroute.papers.ehrr.routing` its Alg. 2 (server utilities, a posted-price auction,
tool utilities under the posted price) and the ``ehrr`` strategy.
"""
