"""Where :class:`ToolAttention` was imported from before it joined its paper in
:mod:`toolroute.papers.tool_attention.agent_loop`: code that imports it from here keeps working."""

from toolroute.papers.tool_attention.agent_loop import ToolAttention

__all__ = ["ToolAttention"]
