"""The ``execute`` meta-tool: a short script calls tools through the gateway's own call path.

Every ``await call_tool(name, arguments)`` in a script is a call through the gateway's call path
(:meth:`~toolroute.gateway.calls.path.CallPath.call`) with the calling request's session state,
allow-list and client: the allow-list, argument checks, the call gate, preconditions, limits and
budgets, quarantine, schema validation, size caps, statistics, usage memory and vendor learning
all apply, /metrics counts each call as the call_tool it stands for, and a script reaches
exactly what its caller could with ``call_tool``.

Inside a script, ``call_tool`` returns the tool's structured content when it gives one, else its
text; a refused or failed call raises ``RuntimeError`` with the gateway's JSON error (a script
may catch it). A tool that asks for the user's input mid-call (a 2026-07-28 input-required
result) cannot be answered by a script: that call raises too, telling the agent to use
``call_tool``. A 2025-11-25 server's elicitation or sampling request during a script goes to the
client as it does during ``call_tool`` (the script's wall time keeps running).

The script's value comes back as ``{"result", "calls"}`` (and ``printed``); one larger than
``preview_bytes`` comes back as its first page and a handle (:mod:`toolroute.codemode.pages`),
read further with ``execute({"handle", "page"})``. The value arrives as JSON text the worker
wrote under ``result_bytes`` (:mod:`toolroute.codemode.sandbox`): the gateway reads it back
only when it fits the preview, and otherwise keeps the text as it is.

Handles belong to the bearer token's client, else to the connection that made them; sandbox
slots are shared per client (the token, else the name the client gives, else its connection).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import mcp.types as types
from mcp.shared.exceptions import MCPError

from toolroute.codemode.limits import CodeModeLimits
from toolroute.codemode.pages import Owner, Pages
from toolroute.codemode.sandbox import Sandbox, ScriptEnd, limit_message
from toolroute.codemode.stubs import signature
from toolroute.downstream.servers import CallContext
from toolroute.errors import ErrorCode
from toolroute.gateway.calls.access import ANONYMOUS
from toolroute.gateway.calls.pipeline import Call, CallResult, json_result
from toolroute.gateway.find import Allowed, error_result
from toolroute.gateway.shared import Metrics
from toolroute.route.preconditions import SessionState

if TYPE_CHECKING:
    from toolroute.gateway.shell.server import Gateway

__all__ = ["EXECUTE", "MAX_CODE_CHARS", "CodeMode", "code_mode", "stub_result", "tool_value"]

MAX_CODE_CHARS = 20_000
"""Longest script accepted (a script is short: the tools do the work)."""
ERROR_CHARS = 2000
"""Longest tool error passed into a script."""

EXECUTE = types.Tool(
    name="execute",
    description=(
        "Run a short Python script that calls the tools find_tools returned, so their "
        "intermediate results never enter your context. Inside it, "
        "`await call_tool(name, {args})` calls a tool and returns its structured result (a "
        "dict) or its text; a failed call raises RuntimeError. The value of the last "
        "expression is the result. No files, network, environment or imports except json, "
        "re, math, datetime, asyncio (gather runs calls at once). A large result comes back as "
        "a preview and a handle: call execute with {handle, page} for more."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "code": {"type": "string", "description": "The script."},
            "handle": {"type": "string", "description": "A handle of an earlier large result."},
            "page": {"type": "integer", "minimum": 0, "description": "Its page to read."},
        },
    },
)


Handler = Callable[[Any], Awaitable[CallResult]]
OutputSchemas = Callable[[], Awaitable[Mapping[str, Mapping[str, Any]]]]


class Calls(Protocol):
    """What runs a script's tool calls: the gateway's call path
    (:class:`toolroute.gateway.calls.path.CallPath`), recording each as it returns."""

    async def call(self, call: Call) -> CallResult: ...


def tool_value(result: types.CallToolResult) -> Any:
    """What ``call_tool`` returns inside a script: structured content, else the text."""
    if result.structured_content is not None:
        return result.structured_content
    parts = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        else:  # images, audio, resources: named, not inlined
            parts.append(f"[{block.type} content]")
    return "\n".join(parts)


def _text(result: types.CallToolResult) -> str:
    value = tool_value(result)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text[:ERROR_CHARS]


class CodeMode:
    """``execute`` over a gateway's call path (``calls``; ``metrics`` counts each script's
    call as the call_tool it stands for): the sandbox, the call path, large results."""

    def __init__(
        self,
        calls: Calls,
        metrics: Metrics,
        limits: CodeModeLimits | None = None,
        output_schemas: OutputSchemas | None = None,
    ) -> None:
        self.calls = calls
        self.metrics = metrics
        self.limits = limits or CodeModeLimits()
        self.sandbox = Sandbox(self.limits)
        self.pages = Pages(
            self.limits.page_bytes,
            self.limits.handle_ttl_s,
            self.limits.handle_store_mb * 1024 * 1024,
            owner_bytes=self.limits.handle_client_mb * 1024 * 1024,
        )
        self._output_schemas = output_schemas
        self.tool = EXECUTE
        """The tool the shell lists beside find_tools and call_tool."""

    async def execute(
        self,
        args: Mapping[str, Any],
        state: SessionState,
        allowed: Allowed = None,
        client: str = "",
        connection: object | None = None,
        identity: str = ANONYMOUS,
        *,
        caller: CallContext | None = None,
    ) -> types.CallToolResult:
        """Run ``args["code"]``, or read page ``args["page"]`` of ``args["handle"]``.
        ``client`` is the bearer token's client ("" without one), ``connection`` the request's
        connection (None for a 2026-07-28 request, which has none), ``identity`` who the
        request says it is (a token, a header, a client name;
        :data:`~toolroute.gateway.calls.access.ANONYMOUS` when it says nothing). The script's
        tool calls are the request's own: its state, allow-list, client, ``caller`` and
        identity (:class:`~toolroute.gateway.calls.pipeline.Call`)."""
        owner = Owner.of(client, connection)
        code, handle = args.get("code"), args.get("handle")
        if handle is not None:
            return self._read(handle, args.get("page", 0), owner)
        if not isinstance(code, str) or not code.strip():
            return _invalid("execute needs `code` (a Python script), or a `handle` and `page`")
        if len(code) > MAX_CODE_CHARS:
            return _invalid(f"the script is over {MAX_CODE_CHARS} characters; keep it short")

        async def call(name: str, arguments: dict[str, Any]) -> Any:
            # counted in /metrics as the call_tool it stands for (tool, outcome, refusals)
            params = types.CallToolRequestParams(
                name="call_tool", arguments={"name": name, "arguments": arguments}
            )
            try:
                result = await self.metrics.observed(
                    params,
                    self.calls.call(
                        Call(name, arguments, state, allowed, client, caller, identity)
                    ),
                )
            except MCPError as e:  # a 2026-07-28 downstream's own error
                raise RuntimeError(f"{name}: {e.error.message}") from None
            if isinstance(result, types.InputRequiredResult):
                raise RuntimeError(
                    f"{name} asks the user for input mid-call, which a script cannot answer: "
                    "call it with call_tool"
                )
            if result.is_error:
                raise RuntimeError(f"{name}: {_text(result)}")
            return tool_value(result)

        # a slot per client: its token, else the name it gives (a claim, which is enough to
        # share slots fairly), else its connection
        who = owner.key if client or identity == ANONYMOUS else identity
        end = await self.sandbox.run(code, call, who)
        return self._answer(end, owner)

    def _answer(self, end: ScriptEnd, owner: Owner) -> types.CallToolResult:
        extra: dict[str, Any] = {"calls": end.calls}
        if end.printed:
            extra["printed"] = end.printed
        if end.limit is not None:
            message = limit_message(end.limit, self.limits)
            if end.limit in ("result_bytes", "result_depth"):
                message += "; return less (a count, a summary, the lines you need)"
            detail = end.error if end.error and "the script " not in end.error else None
            return error_result(
                ErrorCode.SCRIPT_LIMIT,
                message,
                limit=end.limit,
                **({"detail": detail} if detail else {}),
                **extra,
            )
        if end.error is not None:
            return error_result(ErrorCode.SCRIPT_ERROR, end.error, **extra)
        text = end.value if end.value is not None else "null"
        try:  # written by the worker; a script that replaced the writer sent anything
            value = (
                json.loads(text) if end.is_text or len(text) <= self.limits.preview_bytes else None
            )
        except (ValueError, RecursionError):
            message = (
                "the script's value did not arrive as JSON (was the gateway's writer replaced?)"
            )
            return error_result(ErrorCode.SCRIPT_ERROR, message, **extra)
        if len(text.encode()) <= self.limits.preview_bytes:
            return json_result({"result": value, **extra})
        # a string is paged as itself (its lines readable), anything else as its JSON
        page = self.pages.put(owner, value if isinstance(value, str) else text)
        if page is None:
            return self._store_full(extra)
        return json_result(
            {
                "preview": page.text,
                **{k: v for k, v in page.to_dict().items() if k != "text"},
                **extra,
                "hint": "the result is larger than the preview: execute with "
                '{"handle": ..., "page": n} reads page n (0-based)',
            }
        )

    def _store_full(self, extra: Mapping[str, Any]) -> types.CallToolResult:
        return error_result(
            ErrorCode.SCRIPT_LIMIT,
            limit_message("handle_store_mb", self.limits),
            limit="handle_store_mb",
            **extra,
        )

    def paged(
        self,
        result: types.CallToolResult,
        state: SessionState,
        client: str = "",
        connection: object | None = None,
    ) -> types.CallToolResult:
        """A tool's result for ``call_tool`` in code mode: as it is when its text fits the
        preview, else its first page and a handle (``execute`` with ``{handle, page}`` reads
        the rest), so a large result need not enter the model's context whole. When the
        store is full of other clients' pages, the result goes back whole, as without code
        mode."""
        if result.is_error:
            return result
        if result.structured_content is not None:
            text = json.dumps(result.structured_content, ensure_ascii=False)
        else:
            text = "\n".join(getattr(c, "text", "") for c in result.content)
        if len(text.encode()) <= self.limits.preview_bytes:
            return result
        page = self.pages.put(Owner.of(client, connection), text)
        if page is None:
            return result
        return json_result(
            {
                "preview": page.text,
                **{k: v for k, v in page.to_dict().items() if k != "text"},
                "hint": "the result is larger than the preview: execute with "
                '{"handle": ..., "page": n} reads page n (0-based)',
            }
        )

    def _read(self, handle: Any, page: Any, owner: Owner) -> types.CallToolResult:
        if not isinstance(handle, str) or not isinstance(page, int) or isinstance(page, bool):
            return _invalid("execute with a handle needs `handle` (string) and `page` (integer)")
        found = self.pages.read(owner, handle, page)
        if found is None:
            known = self.pages.has(owner, handle)
            return error_result(
                ErrorCode.UNKNOWN_HANDLE,
                f"page {page} is out of range for this handle"
                if known
                else "no such handle for this client, or it expired: run the script again",
            )
        return json_result(found.to_dict())

    # -- find_tools with Python signatures -------------------------------------------------

    def find_tools(self, handler: Handler) -> Handler:
        """find_tools as code mode answers it: with Python signatures where ``[code_mode]
        stubs`` is on (:meth:`stubbed`), else as ``handler`` does."""
        return self.stubbed(handler) if self.limits.stubs else handler

    def stubbed(self, find_tools: Handler) -> Handler:
        """find_tools answering with Python signatures: the text is the stubs themselves
        (what the model reads; no JSON schema, no escaping), the structured content
        ``{"candidates": [{"name", "signature"}], "gated_out"}``. The output schema, where a
        tool has one, is the return type."""

        async def handler(request: Any) -> CallResult:
            result = await find_tools(request)
            found = getattr(result, "structured_content", None)
            if getattr(result, "is_error", True) or not isinstance(found, dict):
                return result
            outputs = await self._outputs()
            candidates = [
                {
                    "name": c["name"],
                    "signature": signature(
                        c["name"], c["description"], c["input_schema"], outputs.get(c["name"])
                    ),
                }
                for c in found.get("candidates", ())
            ]
            gated = found.get("gated_out", [])
            return stub_result(candidates, gated)

        return handler

    async def _outputs(self) -> Mapping[str, Mapping[str, Any]]:
        if self._output_schemas is None:
            return {}
        try:
            return await self._output_schemas()
        except Exception:  # a listing that fails costs the return types, not find_tools
            return {}


def stub_result(
    candidates: list[dict[str, Any]], gated_out: list[dict[str, Any]]
) -> types.CallToolResult:
    """find_tools' answer in code mode: the signatures as text, the same as JSON."""
    lines = [
        f"{len(candidates)} tools; in execute, `await call_tool(name, {{args}})` calls one:"
        if candidates
        else "no tools matched; describe the need differently"
    ]
    lines += [c["signature"] for c in candidates]
    lines += [f"# held back: {g['name']}: {g['reason']}" for g in gated_out]
    text = "\n".join(lines)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content={"candidates": candidates, "gated_out": gated_out},
    )


def _invalid(message: str) -> types.CallToolResult:
    return error_result(ErrorCode.INVALID_ARGUMENTS, message)


def code_mode(limits: CodeModeLimits) -> Callable[[Gateway], CodeMode]:
    """What makes code mode for a :class:`~toolroute.gateway.shell.server.Gateway` as it is
    made (its ``code_mode_for``): ``execute`` under ``limits`` over the gateway's call path, the
    return types of find_tools' signatures read from its servers' listings."""

    def made(gateway: Gateway) -> CodeMode:
        async def outputs() -> dict[str, Mapping[str, Any]]:
            listed = await gateway.passthrough.listed()
            return {name: t.output_schema for t, name in listed if t.output_schema}

        return CodeMode(gateway.calls, gateway.shared.metrics, limits, outputs)

    return made
