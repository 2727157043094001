"""Code mode: the sandboxed ``execute`` meta-tool, calling tools through the same call path as
``call_tool`` (:mod:`.execute`), its limits (:mod:`.limits`), the sandbox (:mod:`.sandbox`),
Python signatures for found tools (:mod:`.stubs`) and large results by handle (:mod:`.pages`).

Only :class:`CodeModeLimits` is imported here: the settings read it without loading the sandbox.
"""

from toolroute.codemode.limits import CodeModeLimits

__all__ = ["CodeModeLimits"]
