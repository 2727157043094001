"""The Python client libraries of the interop matrix, each driven through its own public API.

    python -m benchmarks.interop_clients.python_clients CLIENT stdio|http TARGET meta|bind \
        SERVER[,SERVER...]

Run from the repository's root, in the venv that has CLIENT's library (benchmarks/interop.py
picks it; this package imports nothing but the standard library and that library): the official
``mcp`` SDK and openai-agents, pydantic-ai and fastmcp in ``.toolroute/interop-venv``;
langchain-mcp-adapters and mcp-use (on ``mcp`` 1.x) in ``.toolroute/interop-venv-mcp1``. TARGET
is the gateway's command line as JSON (stdio) or its URL (http). Prints :mod:`flow`'s JSON lines.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio

from benchmarks.interop_clients.flow import Session, failed, main_args, run, texts


def _json(result: Any) -> str:
    """Text of a tool result a library hands back (a string, content blocks, or a model)."""
    if hasattr(result, "content"):
        return texts(result.content)
    blocks = isinstance(result, (list, tuple)) and all(
        hasattr(c, "text") or (isinstance(c, dict) and "text" in c) for c in result
    )
    if blocks:  # MCP content blocks, as objects or as dicts
        return texts(result)
    if isinstance(result, (dict, list)):  # structured content, as some libraries return it
        return json.dumps(result)
    return str(result)


@asynccontextmanager
async def sdk(transport: str, target: Any, mode: str) -> AsyncIterator[Session]:
    from mcp import Client, StdioServerParameters

    server = (
        StdioServerParameters(command=target[0], args=target[1:])
        if transport == "stdio"
        else target
    )
    async with Client(server, mode=mode) as c:  # type: ignore[arg-type]

        async def names() -> list[str]:
            return [t.name for t in (await c.list_tools(cache_mode="bypass")).tools]

        async def call(name: str, args: dict[str, Any]) -> tuple[bool, str]:
            r = await c.call_tool(name, args)
            return bool(r.is_error), texts(r.content)

        yield Session(names, call)


@asynccontextmanager
async def openai_agents(transport: str, target: Any) -> AsyncIterator[Session]:
    from agents.mcp import MCPServerStdio, MCPServerStreamableHttp

    server: Any = (
        MCPServerStdio(params={"command": target[0], "args": target[1:]}, cache_tools_list=False)
        if transport == "stdio"
        else MCPServerStreamableHttp(params={"url": target}, cache_tools_list=False)
    )
    async with server:

        async def names() -> list[str]:
            return [t.name for t in await server.list_tools()]

        async def call(name: str, args: dict[str, Any]) -> tuple[bool, str]:
            r = await server.call_tool(name, args)
            return bool(r.isError if hasattr(r, "isError") else r.is_error), texts(r.content)

        yield Session(names, call)


@asynccontextmanager
async def pydantic_ai(transport: str, target: Any) -> AsyncIterator[Session]:
    """``MCPToolset`` with its defaults (its tool list cached until list_changed)."""
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai.mcp import MCPToolset

    source: Any = (
        Client(StdioTransport(command=target[0], args=target[1:]))
        if transport == "stdio"
        else target
    )
    toolset: Any = MCPToolset(source)
    async with toolset:

        async def names() -> list[str]:
            return [t.name for t in await toolset.list_tools()]

        async def call(name: str, args: dict[str, Any]) -> tuple[bool, str]:
            try:
                return False, _json(await toolset.direct_call_tool(name, args))
            except Exception as e:  # a tool's isError comes as ModelRetry (its default)
                return True, str(e)

        yield Session(names, call)


@asynccontextmanager
async def fastmcp(transport: str, target: Any) -> AsyncIterator[Session]:
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    source: Any = (
        StdioTransport(command=target[0], args=target[1:]) if transport == "stdio" else target
    )
    async with Client(source) as c:

        async def names() -> list[str]:
            return [t.name for t in await c.list_tools()]

        async def call(name: str, args: dict[str, Any]) -> tuple[bool, str]:
            r = await c.call_tool(name, args, raise_on_error=False)
            return bool(r.is_error), texts(r.content)

        yield Session(names, call)


def _langchain_spec(transport: str, target: Any) -> dict[str, Any]:
    if transport == "stdio":
        return {"transport": "stdio", "command": target[0], "args": target[1:]}
    return {"transport": "streamable_http", "url": target}


async def _invoke(tool: Any, args: dict[str, Any]) -> tuple[bool, str]:
    try:
        return False, _json(await tool.ainvoke(args))
    except Exception as e:  # langchain raises a tool's isError as ToolException
        return True, str(e)


@asynccontextmanager
async def langchain_readme(transport: str, target: Any) -> AsyncIterator[Session]:
    """The README's pattern: ``get_tools()`` then invoking the tools (a session per call)."""
    from langchain_mcp_adapters.client import MultiServerMCPClient

    client = MultiServerMCPClient({"gateway": _langchain_spec(transport, target)})
    tools: dict[str, Any] = {}

    async def names() -> list[str]:
        tools.clear()
        tools.update({t.name: t for t in await client.get_tools()})
        return list(tools)

    async def call(name: str, args: dict[str, Any]) -> tuple[bool, str]:
        if name not in tools:
            await names()
        if name not in tools:
            return True, f"{name} is not among get_tools()"
        return await _invoke(tools[name], args)

    yield Session(names, call)


@asynccontextmanager
async def langchain_session(transport: str, target: Any) -> AsyncIterator[Session]:
    """One explicit session: ``client.session(...)`` and ``load_mcp_tools`` on it."""
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from langchain_mcp_adapters.tools import load_mcp_tools

    client = MultiServerMCPClient({"gateway": _langchain_spec(transport, target)})
    async with client.session("gateway") as session:
        tools: dict[str, Any] = {}

        async def names() -> list[str]:
            tools.clear()
            tools.update({t.name: t for t in await load_mcp_tools(session)})
            return list(tools)

        async def call(name: str, args: dict[str, Any]) -> tuple[bool, str]:
            if name not in tools:
                await names()
            return await _invoke(tools[name], args)

        yield Session(names, call)


@asynccontextmanager
async def mcp_use(transport: str, target: Any) -> AsyncIterator[Session]:
    from mcp_use import MCPClient

    spec = {"command": target[0], "args": target[1:]} if transport == "stdio" else {"url": target}
    client = MCPClient(config={"mcpServers": {"gateway": spec}})
    session = await client.create_session("gateway")
    try:

        async def names() -> list[str]:
            return [t.name for t in await session.list_tools()]

        async def call(name: str, args: dict[str, Any]) -> tuple[bool, str]:
            r = await session.call_tool(name, args)
            return bool(r.isError), texts(r.content)

        yield Session(names, call)
    finally:
        await client.close_all_sessions()


CLIENTS: dict[str, Callable[[str, Any], AbstractAsyncContextManager[Session]]] = {
    "mcp-sdk-auto": lambda t, x: sdk(t, x, "auto"),
    "mcp-sdk-legacy": lambda t, x: sdk(t, x, "legacy"),
    "openai-agents": openai_agents,
    "pydantic-ai": pydantic_ai,
    "fastmcp": fastmcp,
    "langchain-readme": langchain_readme,
    "langchain-session": langchain_session,
    "mcp-use": mcp_use,
}


async def main() -> None:
    client = sys.argv.pop(1)
    transport, target, expose, servers = main_args()
    try:
        async with CLIENTS[client](transport, target) as session:
            await run(session, servers, expose)
    except Exception as e:  # connecting or closing failed: the remaining cells say so
        failed(servers, e)


if __name__ == "__main__":
    anyio.run(main)
