"""toolroute's own settings: the tables of a ``toolroute.toml`` as pydantic models (every field
checked, unknown ones refused), and what the gateway makes of them — per-client limits, HTTP
clients with their tokens, tool curation and the names it exposes. The file's format is drawn in
:mod:`toolroute.config`, which reads it beside the servers JSON.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from toolroute.catalog.curation import Curation, ToolOverride
from toolroute.catalog.name import SEPARATOR
from toolroute.errors import ConfigError, StoreError
from toolroute.policy import ClientAccess, Limit, LimitSettings
from toolroute.route.gate import Preconditions
from toolroute.store.base import StoreTarget, parse_store_target

__all__ = [
    "CURATION_FIELDS",
    "GATE_FIELDS",
    "Toml",
    "client_access",
    "curation_of",
    "exposed",
    "limit_settings",
    "store_target",
]


class _Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    store: str | None = None
    strategy: str = "default"
    k: int = Field(default=5, ge=1, le=100)
    call_timeout_s: float = Field(default=30.0, gt=0)
    connect_timeout_s: float = Field(default=20.0, gt=0)
    expose: Literal["meta", "bind", "all"] = "meta"
    call_gate: bool | Literal["connection", "client", "off"] = True
    scopes: list[str] = Field(default_factory=list)
    milestones: list[str] = Field(default_factory=list)
    threshold: float | None = None
    pinned: list[str] = Field(default_factory=list)
    events_log: str | None = None
    otel: bool = False
    # downstream faults and quarantine (gateway/quarantine.py, sources/stdio.py)
    max_result_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    approved: list[str] = Field(default_factory=list)
    relist_interval_s: float = Field(default=300.0, gt=0)
    query_cache: int = Field(default=1024, ge=0, le=1_000_000)
    value_usd: float = Field(default=0.05, ge=0)
    abstain: Literal["off", "default", "strict"] = "default"


class _Llm(BaseModel):
    model_config = ConfigDict(extra="forbid")
    base_url: str = Field(pattern=r"^https?://")
    model: str = "default"
    api_key_env: str | None = None
    timeout_s: float = Field(default=20.0, gt=0)
    retries: int = Field(default=1, ge=0, le=5)


class _Client(BaseModel):
    model_config = ConfigDict(extra="forbid")
    token_env: str = Field(min_length=1)
    servers: list[str] = Field(default_factory=list)
    tools: list[str] = Field(default_factory=list)


class _Auth(BaseModel):
    model_config = ConfigDict(extra="forbid")
    bearer_token_env: str | None = None
    clients: dict[str, _Client] = Field(default_factory=dict)


class _Http(BaseModel):
    model_config = ConfigDict(extra="forbid")
    allowed_hosts: list[str] = Field(default_factory=list)
    allowed_origins: list[str] = Field(default_factory=list)
    json_response: bool = False


class _Gate(BaseModel):
    requires_scope: list[str] = Field(default_factory=list)
    after: list[str] = Field(default_factory=list)
    milestone: str | None = None

    def preconditions(self) -> Preconditions | None:
        if not (self.requires_scope or self.after or self.milestone):
            return None
        return Preconditions(tuple(self.requires_scope), tuple(self.after), self.milestone)


class _ServerMeta(_Gate):
    model_config = ConfigDict(extra="forbid")
    ask_cost: float | None = Field(default=None, ge=0)
    connect_latency_s: float | None = Field(default=None, ge=0)
    failure_rate: float | None = Field(default=None, ge=0, le=1)
    value_usd: float | None = Field(default=None, ge=0)


class _ToolMeta(_Gate):
    model_config = ConfigDict(extra="forbid")
    price: float | None = Field(default=None, ge=0)
    latency_s: float | None = Field(default=None, ge=0)
    success_rate: float | None = Field(default=None, ge=0, le=1)
    value_usd: float | None = Field(default=None, ge=0)
    # curation (catalog/curation.py): what the gateway indexes and shows of this tool
    name: str | None = Field(default=None, min_length=1, max_length=128, pattern=r"^[^\s]+$")
    description: str | None = Field(default=None, min_length=1)
    annotations: dict[str, Any] | None = None
    hidden: bool = False
    pin: bool = False

    @model_validator(mode="after")
    def _valid_annotations(self) -> _ToolMeta:
        if self.annotations is not None:
            from mcp.types import ToolAnnotations

            try:
                ToolAnnotations.model_validate(self.annotations)
            except ValidationError as e:
                raise ValueError(f"annotations: {e.errors()[0]['msg']}") from None
        return self


# -- [limits] and [metrics] (gateway/limit.py, gateway/metrics.py) ---------------------------
class _ToolLimit(BaseModel):
    model_config = ConfigDict(extra="forbid")
    calls_per_minute: float | None = Field(default=None, gt=0)
    burst: int | None = Field(default=None, ge=1)
    max_concurrent: int | None = Field(default=None, ge=1)


class _ClientLimit(_ToolLimit):
    budget_usd_per_day: float | None = Field(default=None, ge=0)


class _Limits(_ClientLimit):
    clients: dict[str, _ClientLimit] = Field(default_factory=dict)
    tools: dict[str, _ToolLimit] = Field(default_factory=dict)


class _Metrics(BaseModel):
    model_config = ConfigDict(extra="forbid")
    enabled: bool = True


def limit_settings(t: _Limits | None) -> LimitSettings | None:
    def one(v: _ToolLimit) -> Limit:
        return Limit(**v.model_dump(exclude={"clients", "tools"}))

    if t is None:
        return None
    return LimitSettings(
        one(t), {k: one(v) for k, v in t.clients.items()}, {k: one(v) for k, v in t.tools.items()}
    )


# -- the whole file ---------------------------------------------------------------------------
class Toml(BaseModel):
    model_config = ConfigDict(extra="forbid")
    limits: _Limits | None = None
    metrics: _Metrics = Field(default_factory=_Metrics)
    toolroute: _Settings = Field(default_factory=_Settings)
    llm: _Llm | None = None
    auth: _Auth | None = None
    http: _Http = Field(default_factory=_Http)
    servers: dict[str, _ServerMeta] = Field(default_factory=dict)
    tools: dict[str, _ToolMeta] = Field(default_factory=dict)


GATE_FIELDS = {"requires_scope", "after", "milestone"}
CURATION_FIELDS = {"name", "description", "annotations", "hidden", "pin"}


def store_target(toml_path: Path | None, value: str | None) -> StoreTarget | None:
    """``store =``: a ``postgresql://`` URL as is, anything else a path (``~`` expanded)."""
    if not value:
        return None
    try:
        return parse_store_target(value)
    except StoreError as e:
        raise ConfigError(f"{toml_path}: {e}") from None


def client_access(source: Path, auth: _Auth | None, secrets: bool) -> tuple[ClientAccess, ...]:
    """The HTTP clients of ``[auth]``, their tokens read from the environment (without
    ``secrets``, a client whose variable is unset is left out instead of refused)."""
    if auth is None:
        return ()
    wanted = [(c, v.token_env, v.servers, v.tools) for c, v in auth.clients.items()]
    if auth.bearer_token_env:
        if "default" in auth.clients:
            raise ConfigError(f"{source}: auth.clients.default: the id is bearer_token_env's")
        wanted.insert(0, ("default", auth.bearer_token_env, [], []))
    if not wanted:
        raise ConfigError(
            f"{source}: auth: give bearer_token_env or at least one [auth.clients.ID]"
        )
    clients = []
    for client, env, servers, tools in wanted:
        token = os.environ.get(env, "")
        field = "bearer_token_env" if client == "default" else f"clients.{client}.token_env"
        if not token.strip() and not secrets:
            continue
        if not token.strip():
            raise ConfigError(f"{source}: auth.{field}: the variable {env} is not set")
        if len(token) < 16:
            raise ConfigError(f"{source}: auth.{field}: the token in {env} is under 16 characters")
        clients.append(ClientAccess(client, token, tuple(servers), tuple(tools)))
    if len({c.token for c in clients}) < len(clients):
        raise ConfigError(f"{source}: auth: two clients have the same token")
    return tuple(clients)


def curation_of(tools: dict[str, _ToolMeta]) -> tuple[Curation, dict[str, _ToolMeta]]:
    """The curation of ``[tools."…"]``, and the tables keyed by the names the gateway
    exposes (a renamed tool's price, gates and value follow it to its new name)."""
    overrides = {
        tuple(name.split(SEPARATOR, 1)): ToolOverride(
            m.name, m.description, m.annotations, m.hidden, m.pin
        )
        for name, m in tools.items()
        if m.model_fields_set & CURATION_FIELDS
    }
    curation = Curation.of(overrides)  # type: ignore[arg-type]
    return curation, dict(zip(exposed(tools, curation), tools.values(), strict=True))


def exposed(names: Any, curation: Curation) -> list[str]:
    """``<server>__<tool>`` names as the gateway exposes them (renames applied)."""
    out = []
    for name in names:
        server, _, tool = name.partition(SEPARATOR)
        out.append(f"{server}{SEPARATOR}{curation.exposed(server, tool)}")
    return out
