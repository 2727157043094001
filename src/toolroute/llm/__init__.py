"""LLM stages support: an OpenAI-compatible chat client and an offline local endpoint."""
