"""The call path: the ordered steps every tool call goes through, one module per step."""
