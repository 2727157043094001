"""Learning from use: running estimates of servers and tools, independent of any routing method."""
