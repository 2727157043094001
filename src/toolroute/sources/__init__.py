"""Sources: live MCP servers (downstream pool) and index sync."""
