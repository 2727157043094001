"""The MCP conformance suites against the gateway: the gates CI runs after both tiers."""
