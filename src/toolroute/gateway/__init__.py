"""Gateway: toolroute as one MCP server in front of many."""
