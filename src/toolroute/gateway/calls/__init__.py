"""The call path: the ordered steps every tool call goes through (:mod:`.pipeline`).

A tool's arguments are bounded before anything reads them (:data:`MAX_ARGUMENT_BYTES` and
:data:`MAX_ARGUMENT_DEPTH`, which code mode's sandbox applies in its worker too), and
:func:`argument_errors` is the ``schema`` step's check of a tool's arguments against its input
schema, run in the calling thread: public here for callers that measure or pre-check what the
gateway will accept.
"""

from toolroute.gateway.calls.arguments import (
    MAX_ARGUMENT_BYTES,
    MAX_ARGUMENT_DEPTH,
    argument_errors,
)

__all__ = ["MAX_ARGUMENT_BYTES", "MAX_ARGUMENT_DEPTH", "argument_errors"]
