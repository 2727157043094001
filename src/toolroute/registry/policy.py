"""What a registry entry must pass before it is suggested or added: the operator's allow-list
and the checks against a registry that lies.

- **Allow-list** (``[registry]``): the server's namespace matches one of ``namespaces`` (when
  any are given), its package is of an allowed type (``npm``, ``pypi``, ``remote``) and comes
  from an allowed package registry (``registryBaseUrl``), at one pinned version.
- **Poisoning**: a description (or a listed tool's) that reads like instructions to the model
  is flagged by the same heuristics as a connected server's tools
  (:func:`toolroute.gateway.calls.quarantine.suspicious`).
- **Look-alikes**: a package name outside plain ASCII, or one that is one slip away from
  another's (``server-memroy`` beside ``server-memory``, ``rn`` for ``m``, ``I`` for ``l``),
  or a server name that looks like another's, is flagged: of two look-alikes neither is
  trusted, since a listing cannot say which one is the original.
- **Pins**: the first time ``name@version`` is seen its digest is pinned (trust on first use,
  ``pins.json`` beside the listing cache); the same ``name@version`` served with other
  contents later (a version changed behind its pinned name) is flagged.

A flagged entry is never suggested and ``toolroute add`` refuses it, saying why (one line).
"""

from __future__ import annotations

import fnmatch
import json
import logging
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from toolroute.catalog.models import Tool
from toolroute.catalog.name import skeleton
from toolroute.errors import RegistryError
from toolroute.gateway.calls.quarantine import suspicious
from toolroute.registry.entry import Package, ServerEntry
from toolroute.settings import PackageType, RegistrySettings

if TYPE_CHECKING:
    from toolroute.config import GatewayConfig

__all__ = [
    "DEFAULT_BASE",
    "Pins",
    "allowed",
    "flags",
    "known_packages",
    "look_alike_names",
    "runnable",
]

log = logging.getLogger(__name__)

FLOOD = 50
"""More servers than this whose package names are one slip apart: all are held, unread."""
DEFAULT_BASE = {"npm": "https://registry.npmjs.org", "pypi": "https://pypi.org"}
"""The package registry of a package that names none."""
_NAME = {
    "npm": re.compile(r"^(@[a-z0-9][a-z0-9._-]{0,213}/)?[a-z0-9][a-z0-9._-]{0,213}$"),
    "pypi": re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,200}[A-Za-z0-9])?$"),
}


def _kind(p: Package) -> Literal["npm", "pypi"] | None:
    kind = p.registry_type.lower()
    if p.transport.type != "stdio":
        return None
    return "npm" if kind == "npm" else "pypi" if kind == "pypi" else None


def runnable(entry: ServerEntry, settings: RegistrySettings) -> tuple[PackageType, Package | None]:
    """The first way to run ``entry`` that the allow-list accepts: (``npm`` | ``pypi``,
    its package) or (``remote``, None); raises :class:`RegistryError` naming why none is."""
    why: list[str] = []
    bases = {b.rstrip("/") for b in settings.package_registries}
    for p in entry.packages:
        kind = _kind(p)
        if kind is None:
            why.append(f"{p.registry_type} package ({p.transport.type})")
            continue
        if kind not in settings.package_types:
            why.append(f"{kind} package (not in package_types)")
            continue
        base = (p.registry_base_url or DEFAULT_BASE[kind]).rstrip("/")
        if base not in bases:
            why.append(f"{kind} package from {base} (not in package_registries)")
            continue
        if not p.version:
            why.append(f"{kind} package {p.identifier} without a pinned version")
            continue
        if not _NAME[kind].match(p.identifier):
            why.append(f"{kind} package {p.identifier!r} (not a plain {kind} name)")
            continue
        return kind, p
    for r in entry.remotes:
        if "remote" not in settings.package_types:
            why.append("remote (not in package_types)")
        elif r.type != "streamable-http":
            why.append(f"remote over {r.type}")
        else:
            return "remote", None
    offered = "; ".join(why) or "no package and no remote"
    raise RegistryError(f"{entry.name} offers nothing toolroute may run: {offered}")


def allowed(entry: ServerEntry, settings: RegistrySettings) -> str | None:
    """Why the allow-list refuses ``entry`` (None: it passes)."""
    if settings.namespaces and not any(
        fnmatch.fnmatchcase(entry.name, pat) for pat in settings.namespaces
    ):
        return f"{entry.name} is outside the allowed namespaces ({', '.join(settings.namespaces)})"
    try:
        runnable(entry, settings)
    except RegistryError as e:
        return str(e)
    return None


def _fold(name: str) -> str:
    """What a name looks like at a glance: confusable characters and pairs folded."""
    s = skeleton(name).lower()
    for a, b in (("rn", "m"), ("vv", "w"), ("0", "o"), ("1", "l"), ("_", "-"), (".", "-")):
        s = s.replace(a, b)
    return s


def _slips(a: str, b: str) -> int:
    """Edits (insert, delete, replace, swap two neighbours) from ``a`` to ``b``, up to 3."""
    if abs(len(a) - len(b)) > 2:
        return 3
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return min(prev[-1], 3)


def _near(a: str, b: str) -> bool:
    if a == b:
        return False
    fa, fb = _fold(a), _fold(b)
    return fa == fb or (min(len(fa), len(fb)) >= 6 and _slips(fa, fb) <= 1)


def _identifiers(entry: ServerEntry) -> set[str]:
    return {p.identifier for p in entry.packages if _kind(p) is not None}


def look_alike_names(entries: Iterable[ServerEntry], known: Iterable[str] = ()) -> dict[str, str]:
    """Entries whose package or server name looks like another's (by name: what it looks
    like). ``known``: package names already trusted (the configured servers'): an entry
    one slip from one of them is flagged, the known one is not."""
    entries = list(entries)
    out: dict[str, str] = {}
    known = set(known)
    for e in entries:
        for ident in _identifiers(e):
            if not ident.isascii() or not ident.isprintable():
                out[e.name] = f"package name {ident!r} is not plain ASCII"
            elif hit := next((k for k in known if _near(ident, k)), None):
                out[e.name] = f"package {ident} looks like {hit}, which is already configured"
    # pairs one slip apart share a key: the folded name with one character left out (or
    # none), so each name is compared with its few neighbours, not with every other name
    keys: dict[str, list[tuple[str, str]]] = {}
    for e in entries:
        for ident in _identifiers(e):
            f = _fold(ident)
            for key in {f, *(f[:i] + f[i + 1 :] for i in range(len(f)))}:
                keys.setdefault(key, []).append((ident, e.name))
    for group in keys.values():
        if len({n for _, n in group}) > FLOOD:  # a flood of near names: none is trusted
            for ident, name in group:
                out.setdefault(name, f"package {ident} is one of {len(group)} near-identical names")
            continue
        for i, (a, na) in enumerate(group):
            for b, nb in group[i + 1 :]:
                if na != nb and _near(a, b):
                    out.setdefault(na, f"package {a} looks like {b} (of {nb})")
                    out.setdefault(nb, f"package {b} looks like {a} (of {na})")
    names: dict[str, str] = {}
    for e in entries:
        folded = _fold(e.name)
        if folded in names and names[folded] != e.name:
            out.setdefault(e.name, f"the name looks like {names[folded]}")
            out.setdefault(names[folded], f"the name looks like {e.name}")
        names.setdefault(folded, e.name)
    return out


def _poisoned(entry: ServerEntry) -> list[str]:
    texts = [Tool("registry", "server", entry.description)]
    if entry.title:
        texts.append(Tool("registry", "title", entry.title))
    texts += [Tool("registry", t.name, t.description) for t in entry.tools]
    return [f for t in texts for f in suspicious(t)]


class Pins:
    """``name@version`` → the digest it was first seen with (``pins.json``)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.pins: dict[str, str] = {}
        if path is not None and path.is_file():
            try:
                loaded = json.loads(path.read_text(encoding="utf-8"))
                self.pins = {str(k): str(v) for k, v in dict(loaded).items()}
            except (OSError, ValueError, TypeError):
                log.warning("%s: unreadable pins, starting again", path)

    def changed(self, entry: ServerEntry) -> bool:
        pinned = self.pins.get(entry.key)
        return pinned is not None and pinned != entry.digest

    def note(self, entries: Iterable[ServerEntry]) -> None:
        """Pin the entries seen for the first time (and save)."""
        new = {e.key: e.digest for e in entries if e.key not in self.pins}
        if not new or self.path is None:
            self.pins.update(new)
            return
        self.pins.update(new)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(self.pins, sort_keys=True), encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError as e:
            log.warning("%s: cannot write the pins: %s", self.path, e)


def flags(entries: Iterable[ServerEntry], pins: Pins, known: Iterable[str] = ()) -> dict[str, str]:
    """Why each entry that must not be suggested or added is held (by name): poisoned,
    a look-alike, or changed behind its pinned version."""
    entries = list(entries)
    out = look_alike_names(entries, known)
    for e in entries:
        if pins.changed(e):
            out[e.name] = (
                f"{e.key} changed since it was first seen (the same version with other contents)"
            )
        elif poison := _poisoned(e):
            out.setdefault(e.name, f"its description reads like instructions ({poison[0]})")
    return out


def known_packages(config: GatewayConfig) -> tuple[str, ...]:
    """The package names the configured servers run (``pkg@1.2``, ``pkg==1.2`` → ``pkg``)."""
    out = []
    for spec in config.servers.values():
        for arg in getattr(spec, "args", ()):
            name = re.split(r"==|(?<=.)@", arg, maxsplit=1)[0]
            if name and not name.startswith("-"):
                out.append(name)
    return tuple(dict.fromkeys(out))
