"""The downstream side: the live MCP servers behind the gateway, and their sync into the index."""
