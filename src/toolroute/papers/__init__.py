"""The five papers toolroute builds on, each method runnable as a strategy.

One module or folder per paper, named after its method, citing the paper by title:

- :mod:`toolroute.papers.ehrr`: *Clearing MCP Navigation Fog with Economics-Aware Hierarchical
  Tool Routing*;
- :mod:`toolroute.papers.scalemcp`: *ScaleMCP: Dynamic and Auto-Synchronizing Model Context
  Protocol Tools for LLM Agents*;
- :mod:`toolroute.papers.tool_attention`: *Tool Attention Is All You Need: Dynamic Tool Gating
  and Lazy Schema Loading for Eliminating the MCP/Tools Tax in Scalable Agentic Workflows*;
- :mod:`toolroute.papers.pa_rag`: *PA-RAG: Protocol-Aware Retrieval-Augmented Generation for
  Tool Discovery in MCP Ecosystems*;
- :mod:`toolroute.papers.atr`: *Adaptive Tool Routing: Dynamic Tool Selection for MCP-Heavy
  Agents*.

Each exposes ``strategy()``, which :func:`toolroute.route.strategy.builtin_strategies` lists
under the papers' heading; nothing here registers itself on import.
"""
