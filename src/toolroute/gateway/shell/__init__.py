"""The MCP shell over the core: the server, pass-through, the relayed protocol and stdio."""
