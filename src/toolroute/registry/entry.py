"""A registry's ``server.json`` entries as pydantic models: the edge where a registry's answer
is checked before anything else reads it.

The fields and their limits follow the MCP Registry's schema (``server.schema.json`` and the
``/v0.1/servers`` response of its OpenAPI description, modelcontextprotocol/registry): a name
in reverse-DNS form with one slash, a description of at most 100 characters, a version that is
not a range and not ``latest``, packages with a ``registryType``, an ``identifier``, a pinned
``version`` and a transport, and remotes with a URL. An entry that breaks them is refused with
the first reason (:func:`parse_entry`); the listing goes on without it.

Tools are not part of ``server.json``; a registry that knows them may list them under the
publisher's ``_meta`` (``io.modelcontextprotocol.registry/publisher-provided`` → ``tools``:
``[{"name", "description"}]``), and they are then routed like the server's description.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

__all__ = [
    "OFFICIAL",
    "PUBLISHER",
    "Argument",
    "Package",
    "Remote",
    "ServerEntry",
    "ServerListPage",
    "digest",
    "parse_entry",
]

OFFICIAL = "io.modelcontextprotocol.registry/official"
"""The registry's own ``_meta`` key (status, isLatest, publishedAt)."""
PUBLISHER = "io.modelcontextprotocol.registry/publisher-provided"
"""The publisher's ``_meta`` key; its ``tools`` list is read where present."""

_RANGE = re.compile(r"^[\^~<>=*]|[*xX]$|\.[xX*]\.|\s|\|\|")
"""A version range (``^1.2``, ``~1``, ``>=1``, ``1.x``, ``1.*``): the schema rejects them."""


def _pinned(version: str) -> str:
    if version.strip().lower() == "latest" or _RANGE.search(version):
        raise ValueError(f"version {version!r} is not one pinned version")
    return version


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)


class Argument(_Wire):
    """A runtime or package argument: ``positional`` (its value) or ``named`` (``--flag``)."""

    type: Literal["positional", "named"]
    name: str | None = Field(default=None, max_length=200)
    value: str | None = Field(default=None, max_length=2000)
    value_hint: str | None = Field(default=None, alias="valueHint", max_length=200)
    default: str | None = Field(default=None, max_length=2000)
    is_required: bool = Field(default=False, alias="isRequired")
    is_secret: bool = Field(default=False, alias="isSecret")
    description: str | None = Field(default=None, max_length=2000)


class KeyValue(_Wire):
    """An environment variable or an HTTP header the server needs."""

    name: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z_][A-Za-z0-9_.-]*$")
    value: str | None = Field(default=None, max_length=2000)
    default: str | None = Field(default=None, max_length=2000)
    is_required: bool = Field(default=False, alias="isRequired")
    is_secret: bool = Field(default=False, alias="isSecret")
    description: str | None = Field(default=None, max_length=2000)


class Transport(_Wire):
    type: Literal["stdio", "streamable-http", "sse"]
    url: str | None = Field(default=None, max_length=2000)
    headers: tuple[KeyValue, ...] = ()


class Package(_Wire):
    """Where a server's code comes from and how it runs."""

    registry_type: str = Field(alias="registryType", min_length=1, max_length=50)
    registry_base_url: str | None = Field(default=None, alias="registryBaseUrl", max_length=500)
    identifier: str = Field(min_length=1, max_length=300)
    version: str | None = Field(default=None, min_length=1, max_length=255)
    file_sha256: str | None = Field(default=None, alias="fileSha256", pattern=r"^[a-f0-9]{64}$")
    runtime_hint: str | None = Field(default=None, alias="runtimeHint", max_length=50)
    transport: Transport = Field(default_factory=lambda: Transport(type="stdio"))
    runtime_arguments: tuple[Argument, ...] = Field(default=(), alias="runtimeArguments")
    package_arguments: tuple[Argument, ...] = Field(default=(), alias="packageArguments")
    environment_variables: tuple[KeyValue, ...] = Field(default=(), alias="environmentVariables")

    @field_validator("version")
    @classmethod
    def _one_version(cls, v: str | None) -> str | None:
        return None if v is None else _pinned(v)


class Remote(_Wire):
    """A server that runs elsewhere: its URL and the headers it needs."""

    type: Literal["streamable-http", "sse"]
    url: str = Field(pattern=r"^https?://[^\s]+$", max_length=2000)
    headers: tuple[KeyValue, ...] = ()


class Repository(_Wire):
    url: str = Field(max_length=2000)
    source: str = Field(max_length=100)


class ListedTool(_Wire):
    """A tool a registry lists for a server (publisher-provided ``_meta``)."""

    name: str = Field(min_length=1, max_length=128)
    description: str = Field(default="", max_length=1000)


class ServerEntry(_Wire):
    """One ``server.json``, as the registry serves it, with the registry's metadata."""

    name: str = Field(min_length=3, max_length=200, pattern=r"^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$")
    description: str = Field(min_length=1, max_length=100)
    version: str = Field(min_length=1, max_length=255)
    title: str | None = Field(default=None, min_length=1, max_length=100)
    repository: Repository | None = None
    website_url: str | None = Field(default=None, alias="websiteUrl", max_length=2000)
    packages: tuple[Package, ...] = ()
    remotes: tuple[Remote, ...] = ()
    tools: tuple[ListedTool, ...] = ()
    """Publisher-provided tools, where given (see the module docstring)."""
    status: str = "active"
    is_latest: bool = True
    digest: str = ""
    """SHA-256 of the entry as served (canonical JSON): what a pinned name@version must keep."""

    @field_validator("version")
    @classmethod
    def _one_version(cls, v: str) -> str:
        return _pinned(v)

    @property
    def namespace(self) -> str:
        return self.name.partition("/")[0]

    @property
    def key(self) -> str:
        """``name@version``: what ``toolroute add`` pins."""
        return f"{self.name}@{self.version}"


class ServerListPage(BaseModel):
    """One page of ``GET /v0.1/servers``: the raw entries and the next cursor."""

    model_config = ConfigDict(extra="ignore")
    servers: list[Any]
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def next_cursor(self) -> str | None:
        cursor = self.metadata.get("nextCursor") or self.metadata.get("next_cursor")
        return cursor if isinstance(cursor, str) and cursor else None


def digest(raw: Any) -> str:
    """SHA-256 of ``raw`` as canonical JSON (keys sorted)."""
    text = json.dumps(raw, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def parse_entry(raw: Any) -> ServerEntry:
    """One item of a listing (``{"server": {...}, "_meta": {...}}``, or a bare
    ``server.json``) as a :class:`ServerEntry`; raises ValueError with the first reason."""
    if not isinstance(raw, dict):
        raise ValueError("not an object")
    server = raw.get("server", raw)
    if not isinstance(server, dict):
        raise ValueError("server: not an object")
    meta = raw.get("_meta") if "server" in raw else server.get("_meta")
    official = meta.get(OFFICIAL, {}) if isinstance(meta, dict) else {}
    own = server.get("_meta")
    tools = own.get(PUBLISHER, {}).get("tools", ()) if isinstance(own, dict) else ()
    fields = {k: v for k, v in server.items() if k != "_meta"}
    if isinstance(official, dict):
        fields["status"] = str(official.get("status", "active"))
        fields["is_latest"] = bool(official.get("isLatest", True))
    fields["tools"] = tools if isinstance(tools, list) else ()
    fields["digest"] = digest(server)
    try:
        return ServerEntry.model_validate(fields)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "entry"
        msg = str(first["ctx"]["error"]) if first["type"] == "value_error" else first["msg"]
        raise ValueError(f"{where}: {msg}") from None
