"""Pinning and quarantine of downstream tools (the "rug pull" defence).

The first time a tool is indexed its description and input schema are pinned (SHA-256 of
each, trust on first use). A later listing whose description or schema differs from the pin
puts the tool in quarantine: it is left out of the index (so ``find_tools`` never returns it)
and ``call_tool`` refuses it, until someone approves the new version (``toolroute approve``, or
``approved = ["server__tool@<hash prefix>"]`` in toolroute.toml). A description that reads like
instructions aimed at the model (tool poisoning: "ignore previous instructions", "do not tell
the user", reading ``~/.ssh`` or sending secrets somewhere;
:mod:`toolroute.gateway.calls._poison`) is
flagged and held the same way, and so is a tool whose name hides invisible characters or looks
like another tool's name (``get_current_tіme`` with a Cyrillic ``і`` beside ``get_current_time``).
Every tool of a server added from a registry without the operator (``[registry] auto_add``,
:func:`hold_server`) is held the same way until approved.

Every decision is a :class:`QuarantineEvent` (logged as one JSON line on the
``toolroute.quarantine`` logger, returned by sync). State lives in the store's ``meta`` table:
``quarantine.pins`` ({name: {"description": sha, "input_schema": sha}}), ``quarantine.held``
({name: what is held and why}), ``quarantine.approvals`` ({name: approved version}) and
``quarantine.revision`` (bumped by each approval, so a running gateway notices it).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal, Protocol

from toolroute.catalog.models import Catalog, Tool
from toolroute.catalog.name import is_plain, qualified_name
from toolroute.gateway.calls._poison import look_alikes, suspicious

__all__ = [
    "Held",
    "MetaStore",
    "Quarantine",
    "QuarantineEvent",
    "approve",
    "held_tools",
    "hold_server",
    "revision",
    "suspicious",
    "version",
]

log = logging.getLogger("toolroute.quarantine")

PINS, HELD, APPROVALS, REVISION, UNREVIEWED = (
    "quarantine.pins",
    "quarantine.held",
    "quarantine.approvals",
    "quarantine.revision",
    "quarantine.unreviewed",
)


class MetaStore(Protocol):
    """The part of the store this module uses: its key/value ``meta`` table."""

    def get_meta(self, key: str) -> str | None: ...
    def set_meta(self, items: Mapping[str, str]) -> None: ...


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _pin(tool: Tool) -> dict[str, str]:
    schema = json.dumps(tool.input_schema, sort_keys=True, separators=(",", ":"))
    return {"description": _sha(tool.description), "input_schema": _sha(schema)}


def version(tool: Tool) -> str:
    """Short id of this description + schema (what ``name@version`` approves)."""
    return tool.hash[:12]


@dataclass(frozen=True, slots=True)
class Held:
    """A tool kept out of find_tools and call_tool until approved."""

    name: str
    reason: Literal["changed", "suspicious", "look-alike", "unreviewed"]
    version: str
    hash: str
    changed: tuple[str, ...] = ()
    """Which of description / input_schema differ from the pin (reason ``changed``)."""
    flags: tuple[str, ...] = ()
    """What the poisoned-description and look-alike name checks found."""
    description: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def message(self) -> str:
        if self.reason == "changed":
            why = f"its {' and '.join(self.changed)} changed after it was approved"
        elif self.reason == "unreviewed":
            why = "its server was added from a registry without the operator (auto_add)"
        elif self.reason == "look-alike":
            why = f"its name could pass for another tool's ({', '.join(self.flags)})"
        else:
            why = f"its description looks like instructions to the model ({', '.join(self.flags)})"
        return f"{self.name} is quarantined: {why}; approve it with `toolroute approve {self.name}`"


@dataclass(frozen=True, slots=True)
class QuarantineEvent:
    """One decision: a tool quarantined, released by an approval, or flagged."""

    kind: Literal["quarantined", "approved"]
    tool: str
    reason: str
    version: str
    changed: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    at: float = field(default_factory=time.time)

    def to_json(self) -> str:
        return json.dumps({"event": f"tool_{self.kind}", **asdict(self)}, sort_keys=True)


def _load(store: MetaStore, key: str) -> dict[str, Any]:
    raw = store.get_meta(key)
    value = json.loads(raw) if raw else {}
    return value if isinstance(value, dict) else {}


class Quarantine:
    """Review a freshly listed catalog against the pins in ``store``."""

    def __init__(self, store: MetaStore, approved: Sequence[str] = ()) -> None:
        self.store = store
        self.config_approved = {a.partition("@")[0]: a.partition("@")[2] for a in approved}

    def _approved(self, name: str, tool: Tool, approvals: Mapping[str, str]) -> bool:
        if name in self.config_approved:
            prefix = self.config_approved[name]
            if not prefix or tool.hash.startswith(prefix):
                return True
        return approvals.get(name) == tool.hash

    def review(
        self, catalog: Catalog, others: Sequence[Tool] = (), waiting: Sequence[str] = ()
    ) -> tuple[Catalog, list[Held], list[QuarantineEvent]]:
        """The catalog without held tools, the held tools, and the events of this review.
        ``others``: tools of servers reviewed apart (listed, not in ``catalog``), whose names
        a tool of ``catalog`` must not look like either. ``waiting``: servers not listed
        yet, whose names are unknown: a name that could look like one of theirs (one not
        plain, bare or namespaced: :func:`~toolroute.catalog.name.is_plain`) is held as a
        look-alike until they have listed; a plain name looks like no other name."""
        pins = _load(self.store, PINS)
        approvals = _load(self.store, APPROVALS)
        held: list[Held] = []
        events: list[QuarantineEvent] = []
        servers = []
        alike = look_alikes([*catalog.tools(), *others])
        unreviewed = _load(self.store, UNREVIEWED)
        verb = "has" if len(waiting) == 1 else "have"
        wait = f"its name is not plain: held until {', '.join(waiting)} {verb} listed"
        for server in catalog.servers:
            kept = []
            for tool in server.tools:
                name = qualified_name(tool.server, tool.name)
                pin, now = pins.get(name), _pin(tool)
                approved = self._approved(name, tool, approvals)
                changed = tuple(k for k in now if pin is not None and pin.get(k) != now[k])
                named = () if approved else tuple(alike.get(name, ()))
                if waiting and not (named or approved or (is_plain(tool.name) and is_plain(name))):
                    named = (wait,)
                flags = () if approved else (*named, *suspicious(tool))
                if pin is None or approved:
                    if pin is not None and changed:
                        events.append(QuarantineEvent("approved", name, "changed", version(tool)))
                    pins[name] = now
                new = tool.server in unreviewed and not approved
                if approved or not (changed or flags or new):
                    kept.append(tool)
                    continue
                h = Held(
                    name,
                    "changed"
                    if changed
                    else "look-alike"
                    if named
                    else "suspicious"
                    if flags
                    else "unreviewed",
                    version(tool),
                    tool.hash,
                    changed,
                    flags,
                    tool.description[:300],
                )
                held.append(h)
                events.append(
                    QuarantineEvent("quarantined", name, h.reason, h.version, changed, flags)
                )
            servers.append(replace(server, tools=tuple(kept)))
        previously = _load(self.store, HELD)
        self.store.set_meta(
            {
                PINS: json.dumps(pins, sort_keys=True),
                HELD: json.dumps({h.name: h.to_dict() for h in held}, sort_keys=True),
            }
        )
        for e in events:  # a tool still held from the last review is not news
            if e.kind == "approved" or e.tool not in previously:
                log.warning("%s", e.to_json())
        return Catalog(servers=tuple(servers)), held, events


def held_tools(store: MetaStore) -> dict[str, dict[str, Any]]:
    """The tools held at the last review, by name."""
    return _load(store, HELD)


def hold_server(store: MetaStore, server: str, origin: str) -> None:
    """Hold every tool of ``server`` until approved (added from ``origin``, a registry's
    ``name@version``, without the operator)."""
    unreviewed = _load(store, UNREVIEWED)
    unreviewed[server] = origin
    store.set_meta({UNREVIEWED: json.dumps(unreviewed, sort_keys=True)})


def revision(store: MetaStore) -> str:
    """Changes whenever a tool is approved (a running gateway then re-lists its servers)."""
    return store.get_meta(REVISION) or "0"


def approve(store: MetaStore, names: Sequence[str]) -> list[str]:
    """Approve the held versions of ``names`` (every held tool when empty); returns them.

    Raises KeyError with the first name that is not held."""
    held = held_tools(store)
    chosen = list(names) or sorted(held)
    for name in chosen:
        if name not in held:
            raise KeyError(name)
    approvals = _load(store, APPROVALS)
    for name in chosen:
        approvals[name] = held[name]["hash"]  # pinned at the next review
    store.set_meta(
        {
            APPROVALS: json.dumps(approvals, sort_keys=True),
            REVISION: str(int(revision(store)) + 1),
        }
    )
    return chosen
