"""Gateway configuration: the servers JSON as MCP clients write it, plus toolroute's own
settings in a ``toolroute.toml``.

    {"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]},
                    "docs": {"url": "https://example.com/mcp", "headers": {"Authorization": "…"}}}}

Accepted as written by Claude Desktop and Cursor (``mcpServers``), Claude Code's ``.mcp.json``
and ``~/.claude.json`` (``mcpServers``, entries with ``"type": "stdio" | "http" | "sse"``) and
VS Code's ``mcp.json`` (top-level ``servers``, the same ``type``; its ``inputs`` are prompts
toolroute cannot show, so a server that refers to one gets a warning). Comments and trailing
commas (VS Code writes JSON with comments) are accepted. ``${VAR}``, ``${VAR:-default}``,
``${env:VAR}``, ``${userHome}`` and ``${workspaceFolder}`` in an entry's command, args, env,
cwd, url and headers are expanded from the environment; an unset variable is refused.

    # toolroute.toml (optional; next to the JSON, or --settings FILE)
    [toolroute]                          # every setting, its default and what it does:
    k = 5                                # settings.ToolrouteSettings (the docs' table)
    expose = "bind"
    code_mode = true                     # the `execute` meta-tool (docs/code-mode.md)
    abstain = "default"                  # "no tool fits" answers: "off", "default", "strict"
    [llm]                                # optional LLM stages (pa-rag, atr): any OpenAI-compatible
    base_url = "http://127.0.0.1:8080/v1"  # chat endpoint; default: TOOLROUTE_LLM_BASE_URL
    model = "qwen2.5-coder-0.5b-instruct"
    api_key_env = "OPENAI_API_KEY"       # the key is read from this variable, never the file
    timeout_s = 20
    [auth]                               # HTTP transport only (serve --transport http)
    bearer_token_env = "TOOLROUTE_TOKEN" # one token, any tool; the token is read from it
    # enabled = false                    # no tokens, said explicitly (a reload that drops
                                         # the tokens of a running gateway needs it)
    [auth.clients.ci]                    # or one token per client, each with an allow-list
    token_env = "TOOLROUTE_CI_TOKEN"
    servers = ["time"]                   # fnmatch patterns on server names …
    tools = ["memory__search_*"]         # … and on server__tool names
    [http]
    allowed_hosts = ["gateway.lan:8765"] # Host / Origin accepted besides loopback (DNS rebinding)
    allowed_origins = ["https://app.example"]
    json_response = false                # true: plain JSON replies, no progress/sampling relay
    session_idle_s = 600                 # an MCP session idle this long is ended (404 after)
    forwarded_allow_ips = ["10.0.0.5"]   # behind a reverse proxy: believe its X-Forwarded-For
                                         # (default: no one's; the TCP peer is the client)
    [metrics]
    enabled = true                       # /metrics (Prometheus) over HTTP, behind [auth]
    [code_mode]                          # one script's limits (defaults shown in part)
    wall_s = 30                          # also cpu_s, memory_mb, max_calls, result_bytes, …
    [limits]                             # per client (docs/operations.md); [limits.clients.ID]
    calls_per_minute = 120               # overrides, [limits.tools."srv__tool"] per tool
    max_concurrent = 8
    budget_usd_per_day = 5.0             # charged each tool's price
    [registry]                           # servers suggested where no tool fits (docs/registry.md);
    url = "https://registry.example"     # unset (the default): no registry is ever asked
    namespaces = ["com.example/*"]       # what `toolroute add` may add
    [servers.time]                       # economics metadata (EHRR), all optional
    ask_cost = 0.0
    connect_latency_s = 0.1
    value_usd = 0.2                      # adaptive: this server's successes are worth more
    [tools."time__get_current_time"]
    price = 0.0
    milestone = "plan_confirmed"         # preconditions: requires_scope, after, milestone
    name = "now"                         # curation (catalog/curation.py): exposed as time__now;
    description = "The time in a city."  # also annotations = {…}, hidden = true, pin = true

Every error names the file and the field, in one line (:class:`ConfigError`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import json5
import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from toolroute.catalog.curation import Curation
from toolroute.catalog.loader import TOO_DEEP
from toolroute.catalog.name import SEPARATOR, invisible, server_of
from toolroute.codemode.limits import CodeModeLimits
from toolroute.downstream.inprocess import MemorySpec
from toolroute.errors import ConfigError
from toolroute.llm.client import LLMConfig
from toolroute.policy import ClientAccess, LimitSettings
from toolroute.route.preconditions import Preconditions
from toolroute.route.strategy import STRATEGIES
from toolroute.settings import (
    CURATION_FIELDS,
    DEFAULTS,
    GATE_FIELDS,
    AuthTable,
    HttpTable,
    LimitsTable,
    MetricsTable,
    RegistrySettings,
    Toml,
    ToolrouteSettings,
    client_access,
    code_mode_limits,
    curation_of,
    exposed,
    limit_settings,
    store_target,
)
from toolroute.store.base import StoreTarget

__all__ = [
    "SEPARATOR",
    "GatewayConfig",
    "HttpSpec",
    "StdioSpec",
    "load_config",
    "read_json",
    "servers_key",
]

log = logging.getLogger(__name__)


class StdioSpec(BaseModel):
    model_config = ConfigDict(extra="allow")
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None


class HttpSpec(BaseModel):
    model_config = ConfigDict(extra="allow")
    url: str = Field(pattern=r"^https?://")
    headers: dict[str, str] = Field(default_factory=dict)
    type: Literal["http", "streamable-http", "streamableHttp", "sse"] = "http"
    """``sse``: the older HTTP+SSE transport (an ``/sse`` endpoint); else streamable HTTP."""


_TYPES = ("stdio", "http", "streamable-http", "streamableHttp", "sse")


class _ServerEntry(BaseModel):
    model_config = ConfigDict(extra="allow")
    command: str | None = None
    url: str | None = None
    type: str | None = None
    disabled: bool = False

    @model_validator(mode="after")
    def _one_transport(self) -> _ServerEntry:
        if self.type is not None and self.type not in _TYPES:
            raise ValueError(f"type {self.type!r}: expected one of {', '.join(_TYPES)}")
        if self.type == "stdio" and self.command is None:
            raise ValueError("type 'stdio' needs 'command'")
        if self.type not in (None, "stdio") and self.url is None:
            raise ValueError(f"type {self.type!r} needs 'url'")
        if (self.command is None) == (self.url is None):
            raise ValueError("give either 'command' (stdio) or 'url' (streamable HTTP)")
        return self


@dataclass(frozen=True, slots=True)
class GatewayConfig:
    """Downstream servers, toolroute's ``[toolroute]`` settings as one object, and the other
    tables of its toolroute.toml. Every ``[toolroute]`` setting is read from :attr:`settings`;
    no field here spells one again."""

    servers: dict[str, StdioSpec | HttpSpec | MemorySpec]
    """By name; a :class:`MemorySpec` (an SDK server object in this process) only from code."""
    settings: ToolrouteSettings = DEFAULTS
    """The ``[toolroute]`` settings in effect: the file's, with ``pinned`` as the gateway
    exposes the names (renames applied, ``[tools."…"] pin = true`` added) and ``store`` the
    command's own (``--store``, else the file's)."""
    path: Path | None = None
    """The mcpServers file this came from (names the default store of its gateway)."""
    tool_preconditions: dict[str, Preconditions] = field(default_factory=dict)
    server_preconditions: dict[str, Preconditions] = field(default_factory=dict)
    server_meta: dict[str, dict[str, float]] = field(default_factory=dict)
    tool_meta: dict[str, dict[str, float]] = field(default_factory=dict)
    values: tuple[tuple[str, float], ...] = ()
    """``value_usd`` under ``[servers.X]`` (key ``X``) and ``[tools."X__t"]`` (``X__t``)."""
    llm: LLMConfig | None = None
    """Endpoint of the optional LLM stages: ``[llm]`` in toolroute.toml, else the
    ``TOOLROUTE_LLM_*`` environment, else None (offline fallbacks)."""
    auth: AuthTable | None = None
    """``[auth]`` as written; its tokens, read from the environment, are :attr:`clients`."""
    clients: tuple[ClientAccess, ...] = ()
    """HTTP clients and their tokens (``[auth]``); empty: no authentication."""
    http: HttpTable = field(default_factory=HttpTable)
    """``[http]``: the Host and Origin headers accepted besides loopback, the proxies whose
    ``X-Forwarded-For`` names the client, idle sessions, JSON or SSE replies."""
    limits: LimitsTable | None = None
    """``[limits]``: per-client rate, calls in flight and USD per day, as the call path
    counts them: :attr:`limit_settings` (gateway/calls/_limits.py)."""
    metrics: MetricsTable = field(default_factory=MetricsTable)
    """``[metrics]``: whether ``/metrics`` is served over HTTP (gateway/ops/_metrics.py)."""
    curation: Curation = field(default_factory=Curation)
    """Renamed, re-described, re-annotated, hidden and pinned tools (``[tools."…"]``)."""
    settings_path: Path | None = None
    """The toolroute.toml of this config (read if it exists); live reconfiguration watches
    it (:mod:`toolroute.gateway.ops.reload`)."""
    settings_read: bool = False
    """The toolroute.toml existed and was not empty: a reload that finds it missing or empty
    is refused (a delete-then-write or a rewrite caught half-way), never read as defaults."""
    links: tuple[Path, ...] = ()
    """The files' paths as given, where a symlink stands between them and :attr:`path` or
    :attr:`settings_path`: a reload follows a swap of the link itself too."""
    code_mode_limits: CodeModeLimits = field(default_factory=CodeModeLimits)
    """``[code_mode]``: the limits of the ``execute`` meta-tool (:mod:`toolroute.codemode`),
    listed where the ``code_mode`` setting is on."""
    registry: RegistrySettings = field(default_factory=RegistrySettings)
    """``[registry]``: servers suggested when no tool fits and what ``toolroute add`` may add
    (:mod:`toolroute.registry`); no ``url``: no registry is asked."""

    @property
    def store_target(self) -> StoreTarget | None:
        """The ``store`` setting as a directory or a ``postgresql://`` URL (None: the
        default store of this config, :func:`toolroute.gateway.ops.app.store_dir_of`)."""
        return store_target(self.settings_path, self.settings.store)

    @property
    def auth_off(self) -> bool:
        """``[auth] enabled = false``: HTTP without tokens, said explicitly. A reload may drop
        the tokens a running gateway requires only with it
        (:mod:`toolroute.gateway.ops.reload`)."""
        return self.auth is not None and not self.auth.enabled

    @property
    def limit_settings(self) -> LimitSettings | None:
        """``[limits]`` as the call path counts it; None: no ``[limits]`` table."""
        return limit_settings(self.limits)


def _where(source: str, err: ValidationError, prefix: str = "") -> ConfigError:
    first = err.errors()[0]
    path = ".".join(str(p) for p in (*((prefix,) if prefix else ()), *first["loc"]))
    # our own validators' messages, without pydantic's "Value error, " before them
    msg = str(first["ctx"]["error"]) if first["type"] == "value_error" else first["msg"]
    return ConfigError(f"{source}: {path}: {msg}")


MAX_CONFIG_BYTES = 16 * 1024 * 1024
"""Largest config file read (servers JSON, toolroute.toml); a larger one is refused."""


TOO_DEEP_JSON = "nested too deeply to read (arrays or objects over 200 levels deep)"
"""The JSON parser's own depth limit (pydantic-core's): a deeper file is refused, not recursed."""


def read_config_text(path: Path, max_bytes: int = MAX_CONFIG_BYTES) -> str:
    """The text of a config file, read without ever blocking: the path (symlinks followed)
    must name a regular file of at most ``max_bytes``. It is opened non-blocking and checked
    on the open descriptor, so a FIFO nobody writes, a device or a directory swapped in for
    the file is refused at once instead of hanging the reader."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, expected a file") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ConfigError(f"{path}: is a directory, expected a file")
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(
                f"{path}: not a regular file (a FIFO, socket or device): config files are "
                "read only from regular files"
            )
        if st.st_size > max_bytes:
            raise ConfigError(f"{path}: {st.st_size} bytes, over the {max_bytes}-byte limit")
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes and (chunk := os.read(fd, max_bytes + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror or e}") from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise ConfigError(f"{path}: over the {max_bytes}-byte limit")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        why = f"not UTF-8 ({e.reason} at byte {e.start})"
        raise ConfigError(f"{path}: cannot read: {why}") from None


def read_json(path: Path) -> Any:
    """A JSON file, comments and trailing commas allowed (VS Code's JSON with comments); every
    error names the file in one line. One bounded parse: the text is at most
    :data:`MAX_CONFIG_BYTES`, nesting past the parser's depth limit is refused, and the JSON5
    fallback runs only on text the strict parser refused for its syntax, never for its depth."""
    text = read_config_text(path)
    if not text.strip():
        raise ConfigError(f"{path}: the file is empty")
    try:
        return pydantic_core.from_json(text)
    except ValueError as e:
        if "recursion limit" in str(e):
            raise ConfigError(f"{path}: {TOO_DEEP_JSON}") from None
        what, at, where = str(e).rpartition(" at ")
        reason = f"at {where}: {what}" if at else str(e)

    try:  # JSON with comments: read as JSON5 (its superset); its errors are JSON's
        return json5.loads(text)
    except (ValueError, RecursionError):
        raise ConfigError(f"{path}: invalid JSON {reason}") from None


def servers_key(data: Any) -> str | None:
    """Which key holds the servers: ``mcpServers`` (Claude, Cursor), ``servers`` (VS Code)."""
    if not isinstance(data, dict):
        return None
    if "mcpServers" in data:
        return "mcpServers"
    return "servers" if isinstance(data.get("servers"), dict) else None


_INPUT = re.compile(r"\$\{input:([^}]*)\}")
_VARIABLE = re.compile(r"\$\{([^}]*)\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_EXPANDED = ("command", "args", "env", "cwd", "url", "headers")
"""The fields whose strings are expanded: Claude Code's five, VS Code's and Cursor's, and cwd."""


def _expand(text: str, where: str, home: Path, strict: bool) -> str:
    """``${VAR}``, ``${VAR:-default}`` (Claude Code), ``${env:VAR}``, ``${userHome}`` and
    ``${workspaceFolder}`` (VS Code, Cursor) from the environment; ``${input:ID}`` is left for
    the warning. An unset variable is refused naming ``where`` (left as is unless ``strict``)."""

    def one(m: re.Match[str]) -> str:
        body = m.group(1)
        if body.startswith("input:"):
            return m.group(0)
        if body == "userHome":
            return str(Path.home())
        if body == "workspaceFolder":
            return str(home)
        if body.startswith("env:"):  # VS Code's form has no default
            name, has_default, default = body[4:], "", ""
        else:
            name, has_default, default = body.partition(":-")
        if not _NAME.fullmatch(name):
            raise ConfigError(
                f"{where}: cannot expand ${{{body}}}: toolroute reads only "
                "${VAR}, ${VAR:-default}, ${env:VAR}, ${userHome} and "
                "${workspaceFolder}"
            )
        value = os.environ.get(name)
        if value is not None:
            return value
        if has_default:
            return default
        if strict:
            raise ConfigError(f"{where}: the variable {name} is not set (in ${{{body}}})")
        return m.group(0)

    return _VARIABLE.sub(one, text)


def _expanded(entry: Any, where: str, home: Path, strict: bool) -> Any:
    """A server entry with its variables expanded in :data:`_EXPANDED`; values of the wrong
    type are left for validation to name."""
    if not isinstance(entry, dict):
        return entry
    out = dict(entry)
    for key in _EXPANDED:
        value = entry.get(key)
        if isinstance(value, str):
            out[key] = _expand(value, f"{where}.{key}", home, strict)
        elif isinstance(value, list):
            out[key] = [
                _expand(v, f"{where}.{key}[{i}]", home, strict) if isinstance(v, str) else v
                for i, v in enumerate(value)
            ]
        elif isinstance(value, dict):
            out[key] = {
                k: _expand(v, f"{where}.{key}.{k}", home, strict) if isinstance(v, str) else v
                for k, v in value.items()
            }
    return out


def _workspace(path: Path) -> Path:
    """``${workspaceFolder}``: the folder holding ``.vscode/mcp.json`` or ``.cursor/mcp.json``,
    else the config file's own folder."""
    folder = path.resolve().parent
    return folder.parent if folder.name in (".vscode", ".cursor") else folder


def _inputs_used(entry: Any) -> list[str]:
    """VS Code ``${input:ID}`` references anywhere in a server entry."""
    return sorted(set(_INPUT.findall(json.dumps(entry))))


def _preconditions(tables: dict[str, Any]) -> dict[str, Preconditions]:
    """The preconditions (``requires_scope``, ``after``, ``milestone``) of each ``[tools."…"]``
    or ``[servers.X]`` table that sets one."""
    return {
        name: Preconditions(tuple(m.requires_scope), tuple(m.after), m.milestone)
        for name, m in tables.items()
        if m.requires_scope or m.after or m.milestone
    }


def load_config(
    path: str | Path, settings: str | Path | None = None, *, secrets: bool = True
) -> GatewayConfig:
    """Read a servers JSON file and the optional ``toolroute.toml``.

    ``secrets=False`` is for commands that read the gateway's state without serving (status,
    approve, route over a synced config): a token or key variable that is unset is not an
    error there; the clients whose token is missing are left out.
    """
    p = Path(path)
    data = read_json(p)
    top = servers_key(data) or "mcpServers"
    raw = data.get(top) if isinstance(data, dict) else None
    if not isinstance(raw, dict) or not raw:
        raise ConfigError(
            f"{p}: mcpServers: expected an object with at least one server "
            '(or "servers", as VS Code writes it)'
        )
    servers: dict[str, StdioSpec | HttpSpec | MemorySpec] = {}
    for name, entry in raw.items():
        if hidden := invisible(name):
            # a NUL or an escape sequence would be written raw into logs and tool names
            raise ConfigError(
                f"{p}: {top}.{name!r}: server names may not contain control or invisible "
                f"characters ({', '.join(hidden)})"
            )
        if SEPARATOR in name or not name or name.startswith("_") or name.endswith("_"):
            raise ConfigError(
                f"{p}: {top}.{name}: server names may not be empty, contain "
                f"{SEPARATOR!r}, or start or end with '_'"
            )
        entry = _expanded(entry, f"{p}: {top}.{name}", _workspace(p), secrets)
        try:
            parsed = _ServerEntry.model_validate(entry)
            if parsed.disabled:
                continue
            servers[name] = (
                StdioSpec.model_validate(entry)
                if parsed.command is not None
                else HttpSpec.model_validate(entry)
            )
        except ValidationError as err:
            raise _where(str(p), err, f"{top}.{name}") from None
        if used := _inputs_used(entry):
            log.warning(
                "%s: %s.%s uses VS Code input %s, which toolroute cannot prompt for: the text "
                "is passed as is; write the value into the file instead",
                p,
                top,
                name,
                ", ".join(f"${{input:{i}}}" for i in used),
            )
    if not servers:
        raise ConfigError(f"{p}: {top}: every server is disabled")
    toml_path = Path(settings) if settings is not None else p.with_name("toolroute.toml")
    toml: dict[str, Any] = {}
    settings_text = ""
    if settings is not None or toml_path.exists() or toml_path.is_symlink():
        settings_text = read_config_text(toml_path)
        try:
            toml = tomllib.loads(settings_text)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{toml_path}: invalid TOML: {e}") from None
        except RecursionError:
            raise ConfigError(f"{toml_path}: {TOO_DEEP}") from None
    try:
        t = Toml.model_validate(toml)
    except ValidationError as err:
        raise _where(str(toml_path), err) from None
    s = t.toolroute

    if s.strategy not in STRATEGIES:
        raise ConfigError(
            f"{toml_path}: toolroute.strategy: unknown strategy {s.strategy!r}; "
            f"choose from: {', '.join(STRATEGIES)}"
        )
    unknown = [
        n
        for n in (*t.tools, *s.pinned, *(t.limits.tools if t.limits else ()))
        if server_of(n) not in servers or SEPARATOR not in n
    ]
    if unknown:
        raise ConfigError(
            f"{toml_path}: {unknown[0]!r} is not <server>__<tool> of a configured "
            'server (in [tools."…"], [limits.tools."…"] or pinned)'
        )
    llm = LLMConfig.from_env()
    if t.llm is not None:
        key = os.environ.get(t.llm.api_key_env) if t.llm.api_key_env else None
        if t.llm.api_key_env and not key and secrets:
            raise ConfigError(
                f"{toml_path}: llm.api_key_env: the variable {t.llm.api_key_env} is not set"
            )
        llm = LLMConfig(
            t.llm.base_url, t.llm.model, key, timeout_s=t.llm.timeout_s, retries=t.llm.retries
        )
    curation, tools = curation_of(t.tools)
    pinned = (*exposed(s.pinned, curation), *curation.pinned(SEPARATOR))
    clients = client_access(toml_path, t.auth, secrets)
    store_target(toml_path, s.store)  # a bad URL scheme is refused here, naming the file
    return GatewayConfig(
        settings=s.model_copy(update={"pinned": tuple(dict.fromkeys(pinned))}),
        settings_read=bool(settings_text.strip()),
        links=tuple(
            a for a in (p.absolute(), toml_path.absolute()) if a != a.resolve(strict=False)
        ),
        auth=t.auth,
        curation=curation,
        code_mode_limits=code_mode_limits(t),
        registry=t.registry,
        settings_path=toml_path.resolve(),
        clients=clients,
        http=t.http,
        limits=t.limits,
        metrics=t.metrics,
        llm=llm,
        servers=servers,
        path=p.resolve(),
        tool_preconditions=_preconditions(tools),
        server_preconditions=_preconditions(t.servers),
        server_meta={
            k: v.model_dump(exclude_none=True, exclude=GATE_FIELDS | {"value_usd"})
            for k, v in t.servers.items()
        },
        tool_meta={
            k: v.model_dump(
                exclude_none=True, exclude=GATE_FIELDS | CURATION_FIELDS | {"value_usd"}
            )
            for k, v in tools.items()
        },
        values=tuple(
            (k, value)
            for k, meta in (*t.servers.items(), *tools.items())
            if (value := getattr(meta, "value_usd", None)) is not None
        ),
    )
