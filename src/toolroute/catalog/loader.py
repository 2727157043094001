"""Load catalog and queries files, with errors that name the file and the JSON path.

Formats:
- catalog: ``{"servers": [{"id", "name", "description", "tools": [{"name", "description",
  "input_schema"}]}]}`` plus optional economics metadata per tool and server;
- queries: JSON lines ``{"id", "query", "relevant": [...], "relevant_groups": [[...], ...]}``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from toolroute.catalog.models import Catalog, Server, Tool, ToolKey, compact_json
from toolroute.errors import CatalogError

__all__ = ["Query", "catalog_from_dict", "demo_catalog", "load_catalog", "load_queries"]

TOO_DEEP = "nested too deeply to read (arrays or objects over about 1,000 levels deep)"
"""Python's JSON and TOML parsers recurse once per level: deeper ends in a RecursionError."""


class _SchemaText(str):
    """A tool's ``input_schema`` already turned into compact JSON text while parsing."""

    __slots__ = ()


def _compact_schemas(obj: dict[str, Any]) -> dict[str, Any]:
    """``json.loads`` object hook: a server's tools get their schemas as compact JSON text as
    soon as the server is parsed, so a large catalog never holds every schema as dicts (several
    times the memory of the text). Hooks run innermost first: a server object is complete, its
    tools' schemas parsed, when this sees it."""
    tools = obj.get("tools")
    if "id" in obj and isinstance(tools, list):
        for t in tools:
            if isinstance(t, dict) and isinstance(t.get("input_schema"), dict):
                t["input_schema"] = _SchemaText(compact_json(t["input_schema"]))
    return obj


class _ToolIn(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str = Field(min_length=1)
    title: str = ""
    description: str = ""
    input_schema: str = Field(default="{}", validate_default=False)
    """Compact JSON text (see :class:`_SchemaText`)."""

    @field_validator("input_schema", mode="before")
    @classmethod
    def _schema_text(cls, v: object) -> object:
        if isinstance(v, _SchemaText):
            return str(v)
        if isinstance(v, dict):
            return compact_json(v)
        raise ValueError(f"expected a JSON object, got {_json_kind(v)}")

    price: float | None = Field(default=None, ge=0)
    latency_s: float | None = Field(default=None, ge=0)
    success_rate: float | None = Field(default=None, ge=0, le=1)

    @field_validator("description", "title", mode="before")
    @classmethod
    def _none_is_empty(cls, v: object) -> object:
        return "" if v is None else v


class _ServerIn(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str = Field(min_length=1)
    name: str = ""
    description: str = ""
    tools: list[_ToolIn]
    ask_cost: float | None = Field(default=None, ge=0)
    connect_latency_s: float | None = Field(default=None, ge=0)
    failure_rate: float | None = Field(default=None, ge=0, le=1)

    @field_validator("description", "name", mode="before")
    @classmethod
    def _none_is_empty(cls, v: object) -> object:
        return "" if v is None else v


class _CatalogIn(BaseModel):
    model_config = ConfigDict(extra="allow")
    servers: list[_ServerIn]


def _json_path(loc: tuple[int | str, ...]) -> str:
    out = "$"
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _message(error: Any) -> str:
    """pydantic's message, without the internal model names it puts in some of them."""
    if error["type"] in ("model_type", "model_attributes_type", "dict_type"):
        return f"expected a JSON object, got {_json_kind(error['input'])}"
    if error["type"] == "value_error":  # our own validators' messages, without a prefix
        return str(error["ctx"]["error"])
    return str(error["msg"])


def _json_kind(value: object) -> str:
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "a list"
    return "a string" if isinstance(value, str) else type(value).__name__


def _first_error(source: str, err: ValidationError) -> CatalogError:
    first = err.errors()[0]
    more = err.error_count() - 1
    tail = f" (and {more} more)" if more else ""
    return CatalogError(f"{source}: {_json_path(first['loc'])}: {_message(first)}{tail}")


def catalog_from_dict(data: object, source: str = "<catalog>") -> Catalog:
    """Validate parsed JSON into a :class:`Catalog`; duplicate ids/tool names are errors."""
    if not isinstance(data, dict):
        raise CatalogError(
            f'{source}: $: expected a JSON object {{"servers": [...]}}, got {_json_kind(data)}'
        )
    try:
        parsed = _CatalogIn.model_validate(data)
    except ValidationError as e:
        raise _first_error(source, e) from None
    servers: list[Server] = []
    seen_servers: set[str] = set()
    for si, s in enumerate(parsed.servers):
        if s.id in seen_servers:
            raise CatalogError(f"{source}: $.servers[{si}].id: duplicate server id {s.id!r}")
        seen_servers.add(s.id)
        seen_tools: set[str] = set()
        tools: list[Tool] = []
        for ti, t in enumerate(s.tools):
            if t.name in seen_tools:
                raise CatalogError(
                    f"{source}: $.servers[{si}].tools[{ti}].name: duplicate tool {t.name!r}"
                )
            seen_tools.add(t.name)
            tools.append(
                Tool(
                    server=s.id,
                    name=t.name,
                    description=t.description,
                    schema_json=t.input_schema,
                    price=t.price,
                    latency_s=t.latency_s,
                    success_rate=t.success_rate,
                    title=t.title,
                )
            )
        servers.append(
            Server(
                id=s.id,
                name=s.name or s.id,
                description=s.description,
                tools=tuple(tools),
                ask_cost=s.ask_cost,
                connect_latency_s=s.connect_latency_s,
                failure_rate=s.failure_rate,
            )
        )
    return Catalog(servers=tuple(servers))


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CatalogError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise CatalogError(f"{path}: is a directory, expected a JSON file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise CatalogError(f"{path}: cannot read: {e}") from None


def load_catalog(path: str | Path) -> Catalog:
    """Read and validate a catalog file."""
    p = Path(path)
    text = _read_text(p)
    try:
        data = json.loads(text, object_hook=_compact_schemas)
        del text
    except RecursionError:
        raise CatalogError(f"{p}: {TOO_DEEP}") from None
    except json.JSONDecodeError as e:
        raise CatalogError(
            f"{p}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}"
        ) from None
    catalog = catalog_from_dict(data, source=str(p))
    if not catalog.servers:
        raise CatalogError(f"{p}: $.servers: the catalog lists no servers")
    if not any(s.tools for s in catalog.servers):
        raise CatalogError(f"{p}: $.servers[*].tools: the catalog lists no tools")
    return catalog


_EXPECTED = (
    "; a queries file is JSON lines, one query object per line: "
    '{"id": …, "query": "…", "relevant": [{"server": …, "tool": …}]}'
)


def _one_document(text: str) -> str:
    """What the file is when it is one JSON document spread over several lines (a catalog, a
    pretty-printed object, an array) instead of one query object per line; else ""."""
    try:
        whole = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return ""  # a broken line of a JSON-lines file: its own error says enough
    if isinstance(whole, dict):
        return (
            "this is a catalog, not queries"
            if "servers" in whole
            else ("this is one JSON object over several lines")
        )
    return f"this is one JSON document ({_json_kind(whole)})"


def demo_catalog() -> Catalog:
    """The demo catalog shipped inside the package: 11 reference-style MCP servers, 77 tools.

    What ``toolroute demo`` and ``toolroute route`` without ``--catalog`` use; here for the
    Python API, so ``Router(demo_catalog())`` runs with no file to find.
    """
    return load_catalog(Path(str(resources.files("toolroute") / "data" / "demo_catalog.json")))


class _Ref(BaseModel):
    model_config = ConfigDict(extra="allow")
    server: str
    tool: str


class _QueryIn(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str | int
    query: str = Field(min_length=1)
    relevant: list[_Ref] = Field(default_factory=list)
    relevant_groups: list[list[_Ref]] | None = None
    complexity: str | None = None
    toolbox: list[_Ref] | None = None


@dataclass(frozen=True, slots=True)
class Query:
    """A benchmark query: ground truth as groups of interchangeable tools."""

    id: str
    text: str
    groups: tuple[frozenset[ToolKey], ...]
    complexity: str
    toolbox: frozenset[ToolKey] | None = None
    """The only tools offered with this request (a small toolbox), or None: the whole catalog."""

    @property
    def relevant(self) -> frozenset[ToolKey]:
        return frozenset().union(*self.groups) if self.groups else frozenset()


def load_queries(path: str | Path, catalog: Catalog | None = None) -> list[Query]:
    """Read a JSON-lines queries file; with ``catalog``, unknown relevant tools are errors."""
    p = Path(path)
    known = {t.key for t in catalog.tools()} if catalog is not None else None
    out: list[Query] = []
    text = _read_text(p)
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except RecursionError:
            raise CatalogError(f"{p}:{lineno}: {TOO_DEEP}") from None
        except json.JSONDecodeError as e:
            if whole := _one_document(text):
                raise CatalogError(f"{p}: {whole}{_EXPECTED}") from None
            raise CatalogError(f"{p}:{lineno}: invalid JSON at column {e.colno}: {e.msg}") from None
        if isinstance(raw, dict) and "servers" in raw and "query" not in raw:
            raise CatalogError(f"{p}: this is a catalog, not queries{_EXPECTED}")
        try:
            q = _QueryIn.model_validate(raw)
        except ValidationError as e:
            raise _first_error(f"{p}:{lineno}", e) from None
        raw_groups = (
            q.relevant_groups if q.relevant_groups is not None else [[r] for r in q.relevant]
        )
        groups = tuple(frozenset((r.server, r.tool) for r in g) for g in raw_groups if g)
        if known is not None:
            for g in groups:
                for key in g:
                    if key not in known:
                        raise CatalogError(
                            f"{p}:{lineno}: $.relevant: {key[0]}/{key[1]} is not in the catalog"
                        )
        complexity = q.complexity or ("simple" if len(groups) == 1 else "complex")
        box = None
        if q.toolbox is not None:
            box = frozenset((r.server, r.tool) for r in q.toolbox)
            if not box:
                raise CatalogError(f"{p}:{lineno}: $.toolbox: empty (leave it out for the catalog)")
            for key in sorted(box):
                if known is not None and key not in known:
                    raise CatalogError(
                        f"{p}:{lineno}: $.toolbox: {key[0]}/{key[1]} is not in the catalog"
                    )
            for g in groups:  # a servable request: one tool of each group is in its box
                if not g & box:
                    key = min(g)
                    raise CatalogError(
                        f"{p}:{lineno}: $.relevant: {key[0]}/{key[1]} is not in the toolbox"
                    )
        out.append(
            Query(id=str(q.id), text=q.query, groups=groups, complexity=complexity, toolbox=box)
        )
    if not out:
        raise CatalogError(f"{p}: no queries")
    return out
