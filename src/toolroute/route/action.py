"""Action words: what a request asks to *do*, matched against the verb a tool is named by.

Embeddings place "what time is it in Tokyo" near ``convert_time`` (its parameters mention
``Asia/Tokyo``) and "remember that Alice works at Acme" near ``read_graph``: they match the
topic, not the action. Tool names are verb-first by MCP convention (``get_current_time``,
``create_entities``, ``delete_file``), so the verb of a tool's name gives its action class;
the request's verbs (and question words) give the classes it asks for. A tool whose class the
request does not ask for loses a small, fixed amount — a soft prior, never a filter.

The lexicon is general English (no benchmark was read to build it): six classes, each a short
list of verbs and their common forms.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt

from toolroute.index.document import humanise

__all__ = ["ActionClass", "query_actions", "tool_action", "tool_actions"]

ActionClass = Literal["read", "create", "update", "delete", "convert", "send"]

_LEXICON: dict[ActionClass, tuple[str, ...]] = {
    "read": (
        "get",
        "read",
        "list",
        "show",
        "search",
        "find",
        "fetch",
        "query",
        "lookup",
        "look",
        "retrieve",
        "view",
        "check",
        "see",
        "browse",
        "tell",
        "what",
        "which",
        "where",
        "when",
        "who",
        "whats",
        "how",
        "describe",
        "explore",
        "discover",
        "locate",
        "count",
        "inspect",
        "download",
        "scan",
        "analyze",
        "analyse",
        "summarize",
        "summarise",
        "recommend",
        "open",
    ),
    "create": (
        "create",
        "add",
        "new",
        "make",
        "write",
        "save",
        "store",
        "remember",
        "record",
        "insert",
        "register",
        "build",
        "put",
        "upload",
        "draft",
        "compose",
        "generate",
        "append",
        "memorize",
        "memorise",
        "keep",
        "init",
        "initialize",
        "start",
    ),
    "update": (
        "update",
        "edit",
        "modify",
        "change",
        "set",
        "rename",
        "move",
        "replace",
        "patch",
        "fix",
        "adjust",
        "correct",
        "reset",
        "merge",
    ),
    "delete": (
        "delete",
        "remove",
        "forget",
        "erase",
        "clear",
        "drop",
        "destroy",
        "purge",
        "unset",
        "wipe",
        "uninstall",
        "cancel",
        "close",
    ),
    "convert": ("convert", "transform", "translate", "export", "encode", "decode", "render"),
    "send": ("send", "post", "publish", "notify", "reply", "share", "tweet"),
}
_CLASS_OF: dict[str, ActionClass] = {w: cls for cls, words in _LEXICON.items() for w in words}
_SUFFIX = re.compile(r"(?:ing|ed|es|s)$")


def _lemma(word: str) -> str:
    """A crude English verb stem: ``creates`` / ``created`` / ``creating`` → ``creat``-forms
    found in the lexicon, else the word itself."""
    if word in _CLASS_OF:
        return word
    for cand in (_SUFFIX.sub("", word), _SUFFIX.sub("", word) + "e", word.rstrip("s")):
        if cand in _CLASS_OF:
            return cand
    return word


def tool_action(name: str) -> ActionClass | None:
    """The class of the first lexicon verb among a tool name's words (``mcp_howtocook_get…``
    skips the prefix), or None when the name carries no known verb."""
    for w in humanise(name).split():
        cls = _CLASS_OF.get(_lemma(w))
        if cls is not None:
            return cls
    return None


def tool_actions(names: Sequence[str]) -> tuple[npt.NDArray[np.int8], tuple[ActionClass, ...]]:
    """(class index per tool, −1 when unknown; the class order) for a catalog's tool names."""
    order: tuple[ActionClass, ...] = tuple(_LEXICON)
    pos = {c: i for i, c in enumerate(order)}
    out = np.full(len(names), -1, dtype=np.int8)
    for i, n in enumerate(names):
        cls = tool_action(n)
        if cls is not None:
            out[i] = pos[cls]
    return out, order


def query_actions(text: str) -> frozenset[ActionClass]:
    """The action classes a request's words ask for (empty when it names none)."""
    return frozenset(
        cls for w in humanise(text).split() if (cls := _CLASS_OF.get(_lemma(w))) is not None
    )
