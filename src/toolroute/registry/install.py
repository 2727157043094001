"""Adding a registry server to the servers file: what it would run (:func:`plan`), and the
write itself (:func:`write`), the operator's decision.

A plan pins the version the registry names (``npx -y pkg@1.2.3``, ``uvx pkg==1.2.3``, or a
venv in the store where ``pip install pkg==1.2.3`` ran), passes the package's fixed arguments,
and refers to each variable and header the server needs as ``${NAME}``, read from the
gateway's environment (an unset one stops the reload, fail closed, rather than start a server
without it). An argument the operator would have to choose is not guessed: such an entry is
refused, to be added by hand.

The write goes through the same door as any edit: the servers file is locked (a second
``toolroute add`` waits for the first, then sees its server), the new file is checked as a
whole with the config loader before it replaces the old one (an atomic rename, so a running
gateway's reload reads a complete file and applies it, or refuses it and keeps serving).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from filelock import FileLock, Timeout

from toolroute.config import load_config, servers_key
from toolroute.errors import ConfigError, RegistryError
from toolroute.registry.entry import Argument, KeyValue, ServerEntry
from toolroute.registry.policy import runnable
from toolroute.settings import RegistrySettings

__all__ = ["LOCK_TIMEOUT_S", "Plan", "plan", "server_key", "write"]

LOCK_TIMEOUT_S = 30.0
"""Longest ``toolroute add`` waits for another one to finish writing the servers file."""
PIP_TIMEOUT_S = 600.0
_VAR = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")


@dataclass(frozen=True, slots=True)
class Plan:
    """What adding one registry server writes and runs."""

    entry: ServerEntry
    server: str
    """Its name in the servers file (and the ``server__tool`` prefix of its tools)."""
    kind: Literal["npm", "pypi", "remote"]
    spec: dict[str, Any]
    """The ``mcpServers`` entry written."""
    runs: str
    """What starts it, as a command line (or the URL it is reached at)."""
    needs: tuple[str, ...] = ()
    """Variables the gateway's environment must set (secrets and required settings)."""
    install: tuple[str, ...] = field(default=())
    """The command ``toolroute add`` runs before writing (``pypi_runner = "pip"``)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.entry.name,
            "version": self.entry.version,
            "server": self.server,
            "kind": self.kind,
            "would_run": self.runs,
            "needs": list(self.needs),
            "writes": {self.server: self.spec},
        }


def server_key(entry: ServerEntry) -> str:
    """The default name in the servers file: the part after the slash, made safe."""
    short = re.sub(r"[^A-Za-z0-9-]+", "-", entry.name.partition("/")[2]).strip("-")
    return (short or "server")[:60]


def _arguments(args: tuple[Argument, ...], where: str) -> list[str]:
    out: list[str] = []
    for a in args:
        value = a.value if a.value is not None else a.default
        if value is None or _VAR.search(value):
            if a.is_required:
                label = a.name or a.value_hint or "an argument"
                raise RegistryError(
                    f"{where}: needs {label} chosen by you; add this server by hand"
                )
            continue
        if a.type == "named":
            out += [a.name or "", value] if a.name else [value]
        else:
            out.append(value)
    return out


def _variables(items: tuple[KeyValue, ...]) -> tuple[dict[str, str], list[str]]:
    """``{NAME: value or ${NAME}}`` and the names the environment must provide."""
    out: dict[str, str] = {}
    needs: list[str] = []
    for v in items:
        fixed = v.value if v.value is not None and not _VAR.search(v.value) else None
        if fixed is not None and not v.is_secret:
            out[v.name] = fixed
        elif v.is_required or v.is_secret or v.value is not None:
            var = re.sub(r"[^A-Za-z0-9_]", "_", v.name).upper()
            out[v.name] = f"${{{var}}}"
            needs.append(var)
    return out, needs


def plan(
    entry: ServerEntry,
    settings: RegistrySettings,
    venvs: Path,
    name: str | None = None,
) -> Plan:
    """What adding ``entry`` would write and run (``venvs``: where ``pip`` installs go)."""
    kind, package = runnable(entry, settings)
    server = name or server_key(entry)
    if "__" in server or server.startswith("_") or server.endswith("_") or not server:
        raise RegistryError(f"{server!r} cannot name a server (no '__', no leading '_')")
    if kind == "remote":
        remote = next(r for r in entry.remotes if r.type == "streamable-http")
        if _VAR.search(remote.url):
            raise RegistryError(f"{entry.name}: its URL has parts you must choose; add by hand")
        headers, needs = _variables(remote.headers)
        spec: dict[str, Any] = {"type": "http", "url": remote.url}
        if headers:
            spec["headers"] = headers
        return Plan(entry, server, "remote", spec, remote.url, tuple(needs))
    assert package is not None and package.version is not None
    where = f"{entry.name} ({package.identifier})"
    runtime = _arguments(package.runtime_arguments, where)
    args = _arguments(package.package_arguments, where)
    env, needs = _variables(package.environment_variables)
    install: tuple[str, ...] = ()
    if kind == "npm":
        command = "npx"
        argv = ["-y", *runtime, f"{package.identifier}@{package.version}", *args]
    elif settings.pypi_runner == "uvx":
        command = "uvx"
        argv = [*runtime, f"{package.identifier}=={package.version}", *args]
    else:
        venv = venvs / f"{package.identifier}-{package.version}"
        bindir = venv / ("Scripts" if os.name == "nt" else "bin")
        command = str(bindir / package.identifier)
        argv = args
        install = (
            str(bindir / "pip"),
            "install",
            "--quiet",
            f"{package.identifier}=={package.version}",
        )
    spec = {"command": command, "args": argv}
    if env:
        spec["env"] = env
    runs = " ".join([command, *argv])
    return Plan(entry, server, kind, spec, runs, tuple(needs), install)


def _install(p: Plan) -> None:
    """``pypi_runner = "pip"``: a venv of its own, the pinned package installed in it."""
    venv = Path(p.install[0]).parent.parent
    try:
        if not (venv / "pyvenv.cfg").exists():
            subprocess.run(
                [sys.executable, "-m", "venv", str(venv)],
                check=True,
                capture_output=True,
                timeout=PIP_TIMEOUT_S,
            )
        subprocess.run(list(p.install), check=True, capture_output=True, timeout=PIP_TIMEOUT_S)
    except subprocess.CalledProcessError as e:
        tail = (e.stderr or b"").decode(errors="replace").strip().splitlines()[-1:] or [""]
        raise RegistryError(f"installing {p.runs} failed: {tail[0][:300]}") from None
    except subprocess.TimeoutExpired:
        raise RegistryError(f"installing {p.runs} took over {PIP_TIMEOUT_S:g} s") from None
    if not Path(p.spec["command"]).exists():
        raise RegistryError(f"{p.entry.name}: the package installs no command {p.spec['command']}")


def write(config_path: Path, p: Plan, settings_path: Path | None = None) -> bool:
    """Add ``p``'s server to the servers file under its lock; False when the same entry is
    there already. The new file is loaded as a config before it replaces the old one."""
    lock = FileLock(str(config_path) + ".lock", timeout=LOCK_TIMEOUT_S)
    try:
        with lock:
            try:
                data = json.loads(config_path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                data = {"mcpServers": {}}
            except (OSError, ValueError) as e:
                raise ConfigError(
                    f"{config_path}: not plain JSON ({e}); add this entry by hand: "
                    f"{json.dumps({p.server: p.spec})}"
                ) from None
            top = servers_key(data) or "mcpServers"
            servers = data.setdefault(top, {})
            if not isinstance(servers, dict):
                raise ConfigError(f"{config_path}: {top} is not an object")
            if p.server in servers:
                if servers[p.server] == p.spec:
                    return False
                raise RegistryError(
                    f"{config_path} has a server named {p.server} already; choose another "
                    "with --name"
                )
            if p.install:
                _install(p)
            servers[p.server] = p.spec
            tmp = config_path.with_name(f".{config_path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
            try:
                settings = settings_path or config_path.with_name("toolroute.toml")
                load_config(tmp, settings if settings.exists() else None, secrets=False)
                os.replace(tmp, config_path)
            finally:
                tmp.unlink(missing_ok=True)
    except Timeout:
        raise RegistryError(
            f"{config_path} is being changed by another toolroute add (waited {LOCK_TIMEOUT_S:g} s)"
        ) from None
    except OSError as e:  # the lock or the new file cannot be written
        raise ConfigError(f"{config_path}: cannot write: {e.strerror or e}") from None
    return True
