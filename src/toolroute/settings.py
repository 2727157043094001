"""toolroute's own settings: the tables of a ``toolroute.toml`` as pydantic models (every field
checked, unknown ones refused), and what the gateway makes of them — per-client limits, HTTP
clients with their tokens, tool curation and the names it exposes. The file's format is drawn in
:mod:`toolroute.config`, which reads it beside the servers JSON.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from toolroute.catalog.curation import Curation, ToolOverride
from toolroute.catalog.name import SEPARATOR
from toolroute.codemode.limits import CodeModeLimits
from toolroute.errors import ConfigError, StoreError
from toolroute.policy import CallGateScope, ClientAccess, Limit, LimitSettings, gate_scope
from toolroute.store.base import StoreTarget, parse_store_target

__all__ = [
    "CURATION_FIELDS",
    "DEFAULTS",
    "GATE_FIELDS",
    "AuthTable",
    "HttpTable",
    "LimitsTable",
    "MetricsTable",
    "Toml",
    "RegistrySettings",
    "ToolrouteSettings",
    "client_access",
    "code_mode_limits",
    "curation_of",
    "exposed",
    "limit_settings",
    "registry_table",
    "settings_table",
    "store_target",
]


class ToolrouteSettings(BaseModel):
    """The ``[toolroute]`` table: every setting, its default and what it does, in one place.

    The config (:class:`toolroute.config.GatewayConfig`), the gateway's constructors and the
    docs' settings table (:func:`settings_table`) all take their defaults from here. One
    object, never changed once made (``model_copy(update=…)`` makes another): the config holds
    it, the gateway runs with it and a reload applies a new one whole.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    store: str | None = Field(
        default=None,
        description="Store directory (SQLite) or a postgresql:// URL shared by gateway "
        "replicas; default: a folder per config in the per-user data dir.",
    )
    strategy: str = Field(
        default="default", description="How tools are ranked (`toolroute strategies` lists them)."
    )
    k: int = Field(default=5, ge=1, le=100, description="How many tools a search returns.")
    call_timeout_s: float = Field(
        default=30.0, gt=0, description="Seconds a downstream tool call may take."
    )
    connect_timeout_s: float = Field(
        default=20.0, gt=0, description="Seconds a downstream server may take to start."
    )
    expose: Literal["meta", "bind", "all"] = Field(
        default="meta",
        description="`meta`: the meta-tools only; `bind`: tools found for a client join its "
        "tools/list; `all`: pass-through, every tool listed, no routing.",
    )
    call_gate: bool | Literal["connection", "client", "off"] = Field(
        default="client",
        description="Whose find_tools results a call may use: the same `client` (its "
        "sessions, processes, replicas), this `connection` only, or `off`.",
    )
    scopes: tuple[str, ...] = Field(
        default=(), description="Scopes granted to clients (`requires_scope`)."
    )
    milestones: tuple[str, ...] = Field(
        default=(), description="Milestones reached from the start (`set_milestone`)."
    )
    threshold: float | None = Field(
        default=None,
        description="The similarity threshold θ (`toolroute calibrate` finds one); unset: "
        "top-k only.",
    )
    pinned: tuple[str, ...] = Field(
        default=(), description="`server__tool` names always shown and callable."
    )
    events_log: str | None = Field(
        default=None, description="A JSON-lines file receiving every routing decision."
    )
    otel: bool = Field(
        default=False,
        description="Emit routing decisions as OpenTelemetry spans (`toolroute[otel]`).",
    )
    max_result_bytes: int = Field(
        default=4 * 1024 * 1024,
        ge=1024,
        description="Largest downstream reply passed on (bytes of JSON); a larger one is "
        "discarded while it is read.",
    )
    approved: tuple[str, ...] = Field(
        default=(),
        description="`server__tool` or `server__tool@version` released from quarantine.",
    )
    relist_interval_s: float = Field(
        default=300.0,
        gt=0,
        description="Seconds between re-listings of every server (silent changes are seen).",
    )
    query_cache: int = Field(
        default=1024,
        ge=0,
        le=1_000_000,
        description="find_tools query vectors kept in memory (0: off).",
    )
    value_usd: float = Field(
        default=0.05,
        ge=0,
        description="What one successful call is worth (USD), weighed against prices.",
    )
    code_mode: bool = Field(
        default=False,
        description="List the `execute` meta-tool: a short sandboxed script calls the tools "
        "found, limited by `[code_mode]` (docs/code-mode.md).",
    )
    abstain: Literal["off", "default", "strict"] = Field(
        default="default",
        description='"No tool fits" answers when the evidence says none serves the need: '
        "`off`, `default`, or `strict` (refuses more, costs more recall).",
    )

    @field_validator("call_gate")
    @classmethod
    def _gate_as_scope(cls, value: bool | str) -> CallGateScope:
        """``true`` and ``false`` as the scopes they mean (``client``, ``off``): one value per
        meaning, so that two settings objects compare equal when they act alike."""
        return gate_scope(value)


_Settings = ToolrouteSettings
DEFAULTS = ToolrouteSettings()
"""Every ``[toolroute]`` setting at its default."""


def settings_table(model: type[BaseModel] | None = None) -> str:
    """The ``[toolroute]`` settings (or another table's ``model``) as a markdown table
    (setting, default, what it does): the docs' table is this text, checked by a test."""
    rows = ["| setting | default | what it does |", "|---|---|---|"]
    for name, info in (model or ToolrouteSettings).model_fields.items():
        default = info.get_default(call_default_factory=True)
        shown = "unset" if default is None else json.dumps(default)
        rows.append(f"| `{name}` | `{shown}` | {info.description} |")
    return "\n".join(rows) + "\n"


PackageType = Literal["npm", "pypi", "remote"]
PACKAGE_TYPES: tuple[PackageType, ...] = ("npm", "pypi", "remote")


class RegistrySettings(BaseModel):
    """The ``[registry]`` table: where servers are suggested from when no tool fits, and what
    ``toolroute add`` may add (docs/registry.md). Without ``url`` nothing is asked of any
    registry: no request leaves the machine."""

    model_config = ConfigDict(extra="forbid")
    url: str | None = Field(
        default=None,
        pattern=r"^https?://[^\s]+$",
        description="Base URL of an MCP registry (`GET {url}/v0.1/servers`); unset: no "
        "registry is asked, no suggestion is made.",
    )
    token_env: str | None = Field(
        default=None,
        min_length=1,
        description="A variable holding a bearer token for the registry (an organization's "
        "own); the token is read from it, never written in the file.",
    )
    namespaces: list[str] = Field(
        default_factory=list,
        description="Server-name patterns (fnmatch: `io.github.acme/*`) that may be suggested "
        "and added; empty: any namespace, with the operator's approval.",
    )
    package_types: list[PackageType] = Field(
        default_factory=lambda: list(PACKAGE_TYPES),
        description="How an added server may run: an `npm` or `pypi` package, or a `remote` "
        "(streamable HTTP) URL.",
    )
    package_registries: list[str] = Field(
        default_factory=lambda: ["https://registry.npmjs.org", "https://pypi.org"],
        description="Package registries (`registryBaseUrl`) a package may come from.",
    )
    auto_add: bool = Field(
        default=False,
        description="Add the best suggestion of an allow-listed namespace without asking, its "
        "tools held in quarantine until approved (`toolroute approve`).",
    )
    suggestions: int = Field(
        default=3, ge=0, le=3, description="Registry servers suggested when no tool fits."
    )
    pypi_runner: Literal["uvx", "pip"] = Field(
        default="uvx",
        description="How a PyPI server runs: `uvx name==version`, or `pip` (installed by "
        "`toolroute add` into a venv in the store, run from there).",
    )
    timeout_s: float = Field(
        default=5.0, gt=0, le=120, description="Seconds one registry request may take."
    )
    cache_ttl_s: float = Field(
        default=3600.0,
        ge=0,
        description="Seconds a listing is used before the registry is asked again (then "
        "with its ETag).",
    )
    max_pages: int = Field(default=20, ge=1, le=1000, description="Pages read per listing.")
    page_size: int = Field(default=100, ge=1, le=500, description="Servers asked per page.")
    max_entries: int = Field(
        default=5000, ge=1, le=1_000_000, description="Servers kept per listing."
    )
    max_bytes: int = Field(
        default=8 * 1024 * 1024, ge=1024, description="Bytes read per listing, all pages."
    )

    @model_validator(mode="after")
    def _auto_add_needs_namespaces(self) -> RegistrySettings:
        if self.auto_add and not self.namespaces:
            raise ValueError("auto_add = true needs namespaces: the ones it may add from")
        return self


def registry_table() -> str:
    """The ``[registry]`` settings as a markdown table (docs/registry.md)."""
    return settings_table(RegistrySettings)


class _Llm(BaseModel):
    model_config = ConfigDict(extra="forbid")
    base_url: str = Field(pattern=r"^https?://")
    model: str = "default"
    api_key_env: str | None = None
    timeout_s: float = Field(default=20.0, gt=0)
    retries: int = Field(default=1, ge=0, le=5)


class _Client(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    token_env: str = Field(min_length=1)
    servers: list[str] = Field(default_factory=list)
    tools: list[str] = Field(default_factory=list)


class AuthTable(BaseModel):
    """The ``[auth]`` table as written (the tokens themselves are read from the environment
    by :func:`client_access`); the config holds it whole."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    enabled: bool = True
    """False: no tokens at all, said explicitly (logged as a warning, shown in status)."""
    bearer_token_env: str | None = None
    clients: dict[str, _Client] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _off_means_no_tokens(self) -> AuthTable:
        if not self.enabled and (self.bearer_token_env or self.clients):
            raise ValueError("enabled = false with tokens given: remove one or the other")
        return self


class HttpTable(BaseModel):
    """The ``[http]`` table: what the HTTP transport accepts and how it answers; the config
    holds it whole."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    allowed_hosts: list[str] = Field(default_factory=list)
    """Host headers accepted besides loopback (``host:port``, ``host:*``)."""
    allowed_origins: list[str] = Field(default_factory=list)
    """Origin headers accepted besides loopback (``scheme://host:port``, ``…:*``)."""
    json_response: bool = False
    """One JSON body per request, not an SSE stream: less CPU per request, but a call's
    progress, log and sampling messages cannot reach the client."""
    session_idle_s: float = Field(default=600.0, gt=0, allow_inf_nan=False)
    """An MCP session with no request in flight and no open stream for this long is ended
    (its id then answers 404 and the client initializes again): abandoned sessions never
    pile up."""
    forwarded_allow_ips: list[str] = Field(default_factory=list)
    """Proxies whose X-Forwarded-For/-Proto are believed (addresses or networks, ``*``: any);
    empty: none, the TCP peer is the client (a header from anyone else is ignored)."""


class _Requires(BaseModel):
    requires_scope: list[str] = Field(default_factory=list)
    after: list[str] = Field(default_factory=list)
    milestone: str | None = None


class _ServerMeta(_Requires):
    model_config = ConfigDict(extra="forbid")
    ask_cost: float | None = Field(default=None, ge=0)
    connect_latency_s: float | None = Field(default=None, ge=0)
    failure_rate: float | None = Field(default=None, ge=0, le=1)
    value_usd: float | None = Field(default=None, ge=0)


class _ToolMeta(_Requires):
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


# -- [limits] and [metrics] (gateway/calls/_limits.py, gateway/ops/_metrics.py) ---------------
class _ToolLimit(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    calls_per_minute: float | None = Field(default=None, gt=0)
    burst: int | None = Field(default=None, ge=1)
    max_concurrent: int | None = Field(default=None, ge=1)


class _ClientLimit(_ToolLimit):
    budget_usd_per_day: float | None = Field(default=None, ge=0)


class LimitsTable(_ClientLimit):
    """The ``[limits]`` table: every client's limits, per-client overrides, per-tool limits;
    the config holds it whole, the call path counts its :func:`limit_settings`."""

    clients: dict[str, _ClientLimit] = Field(default_factory=dict)
    tools: dict[str, _ToolLimit] = Field(default_factory=dict)


class MetricsTable(BaseModel):
    """The ``[metrics]`` table; the config holds it whole."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    enabled: bool = True
    """Serve ``/metrics`` (Prometheus) over HTTP, behind ``[auth]``."""


def limit_settings(t: LimitsTable | None) -> LimitSettings | None:
    """``[limits]`` as the call path counts it; None: no ``[limits]`` table."""

    def one(v: _ToolLimit) -> Limit:
        return Limit(**v.model_dump(exclude={"clients", "tools"}))

    if t is None:
        return None
    return LimitSettings(
        one(t), {k: one(v) for k, v in t.clients.items()}, {k: one(v) for k, v in t.tools.items()}
    )


# -- [code_mode] (codemode/limits.py): one script's limits, large results, signatures ---------
class _CodeMode(BaseModel):
    model_config = ConfigDict(extra="forbid")
    wall_s: float = Field(default=30.0, gt=0, le=3600)
    cpu_s: float = Field(default=5.0, gt=0, le=3600)
    memory_mb: int = Field(default=64, ge=4, le=16384)
    max_calls: int = Field(default=50, ge=1, le=100_000)
    result_bytes: int = Field(default=1024 * 1024, ge=1024)
    result_depth: int = Field(default=100, ge=2, le=10_000)
    recursion: int = Field(default=200, ge=10, le=10_000)
    concurrent: int = Field(default=2, ge=1, le=256)
    per_client: int = Field(default=1, ge=1, le=256)
    queue_s: float = Field(default=60.0, gt=0, le=3600)
    preview_bytes: int = Field(default=8 * 1024, ge=256)
    page_bytes: int = Field(default=8 * 1024, ge=256)
    handle_ttl_s: float = Field(default=600.0, gt=0)
    handle_store_mb: int = Field(default=64, ge=1)
    handle_client_mb: int = Field(default=16, ge=1)
    stubs: bool = True


def code_mode_limits(t: Toml) -> CodeModeLimits:
    """``[code_mode]``: the limits ``execute`` runs under where ``[toolroute] code_mode`` is on."""
    return CodeModeLimits(**t.code_mode.model_dump())


# -- the whole file ---------------------------------------------------------------------------
class Toml(BaseModel):
    model_config = ConfigDict(extra="forbid")
    limits: LimitsTable | None = None
    metrics: MetricsTable = Field(default_factory=MetricsTable)
    toolroute: _Settings = Field(default_factory=_Settings)
    llm: _Llm | None = None
    auth: AuthTable | None = None
    http: HttpTable = Field(default_factory=HttpTable)
    servers: dict[str, _ServerMeta] = Field(default_factory=dict)
    tools: dict[str, _ToolMeta] = Field(default_factory=dict)
    code_mode: _CodeMode = Field(default_factory=_CodeMode)
    registry: RegistrySettings = Field(default_factory=RegistrySettings)


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


def client_access(source: Path, auth: AuthTable | None, secrets: bool) -> tuple[ClientAccess, ...]:
    """The HTTP clients of ``[auth]``, their tokens read from the environment (without
    ``secrets``, a client whose variable is unset is left out instead of refused)."""
    if auth is None or not auth.enabled:
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
    exposes (a renamed tool's price, preconditions and value follow it to its new name)."""
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
