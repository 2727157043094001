"""The call path: the ordered steps every tool call goes through, one module per step.

What a client may send is bounded before anything reads it (:data:`MAX_QUERY_CHARS` for a
``find_tools`` query, :data:`MAX_ARGUMENT_BYTES` and :data:`MAX_ARGUMENT_DEPTH` for a tool's
arguments, which code mode's sandbox applies in its worker too), and :func:`argument_errors`
is the ``schema`` step's check of a tool's arguments against its input schema, run in the
calling thread: public here for callers that measure or pre-check what the gateway will
accept.
"""

from toolroute.gateway.calls._checks import MAX_ARGUMENT_BYTES, MAX_ARGUMENT_DEPTH, MAX_QUERY_CHARS
from toolroute.gateway.calls._schema import argument_errors

__all__ = ["MAX_ARGUMENT_BYTES", "MAX_ARGUMENT_DEPTH", "MAX_QUERY_CHARS", "argument_errors"]
