"""The MCP shell over what finds and calls tools: the server, pass-through, the relayed
protocol and stdio.

``serve_stdio`` is the one part the rest of the gateway runs from outside the shell: the stdio
transport ``toolroute serve`` puts the server on."""

from toolroute.gateway.shell._stdio_server import serve_stdio

__all__ = ["serve_stdio"]
