"""Exact names: a request that names a tool as its need gets that tool first, whatever the
strategy.

Embeddings and BM25 both blur identifiers: ``git_status`` is three tokens to BM25 and a
neighbourhood to MiniLM, so "run git_status" can rank ``git_diff`` first. This pre-ranking
step runs after every strategy (the router calls :func:`prerank`):

- a **tool mention**: the query holds an identifier that is a tool's name as written
  (``git_status``, ``createEntities``, ``read-file``), ``server__tool`` / ``server.tool`` /
  ``server/tool`` (the server by its id, or by its key: the id's last ``/`` segment, the name
  a gateway's config gives it, ``hackernews__getStory`` for ``livemcpbench/hackernews``), or a
  tool's name in words or its MCP ``title`` inside quotes or backticks (``"create entities"``,
  ``"Quill Board"``). A server is never named by what it calls itself (its ``name``, which a
  live server's ``serverInfo`` sets): a server calling itself ``time`` must not answer
  ``time__get_current_time``; nor does a title that reads as another tool's name claim that
  name. A one-word name with no ``_``/``-``/camel case/digit (``fetch``, ``search``) is
  English as often as a name, so it counts only quoted, or qualified by its server; an
  unquoted name counts only written as an identifier (``endGame``, not the film "Avengers:
  Endgame"; ``takeOff``, not "ready for takeoff": sealtools' whole requests held 4 such false
  mentions and no true one written as a word), except right after "run", "call", "invoke" or
  "execute" ("please run think"). Mentioned tools rank above every other tool, in the
  strategy's order, **when the mention names the need**;
- a mention names **context**, and lifts nothing, when its sentence marks it as
  - a prerequisite: a cue before it with only filler words between ("after calling X",
    "before 'X'", "PREREQUISITE: Use the 'X' tool", "first use X"; not "First, use X", a
    request's own first step, nor "after that, use X", a later one), "requires … from X"
    (up to three words), or a cue after it ("X first", "the 'X' tool FIRST", "X is required");
  - an alternative: "instead of X", "rather than X", or "For <a purpose>, use X" (the
    purpose is another than the text's: "For articles about variants, use
    article_searcher"). "Use X instead" asks for X and lifts it;
  - an aside: inside parentheses; or a companion of the tool the text is about ("ALWAYS
    use this tool + interact_with_process").
  A tool named once as context is context: per-step needs name prerequisites ("use the
  'think' tool FIRST"), and lifting every mention ranked the prerequisite above the need
  (benchmarks/recall_suite.py measures both). Still lifted, as the need, though the data
  shows them as context: a list of four names ("use the specialized getter tools: - a: … -
  b: …"), "Use X for more detailed information", "First use X, then Y" (Y);
- a **server mention**: the query names a server by its id (``github``,
  ``brave-search``), or by its name unless that is another server's id or key, as an
  identifier token. Its best tool is first among equals: a lift of
  :data:`SERVER_LIFT`, the scale of a near tie in hybrid scores, so a server named in passing
  cannot carry an unrelated tool over a relevant one. Only its best tool: lifting all of a
  many-tool server's tools ("based on Wikipedia") pushed the request's other steps (the file
  writer) out of the top 5.

Nothing here reads a query's answers; the names come from the catalog.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from toolroute.catalog.models import Catalog, ToolKey
from toolroute.index.build import ToolIndex

__all__ = [
    "SERVER_LIFT",
    "NameTable",
    "exact_name_cases",
    "mentions",
    "name_table",
    "names_a_tool",
    "prerank",
    "prerank_index",
    "server_key",
    "whole_name",
]

SERVER_LIFT = 0.02
"""What a named server's tools gain (hybrid scores of near ties differ by about this)."""

_IDENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-.:/&]*[A-Za-z0-9]|[A-Za-z0-9]")
_RUN = re.compile(
    # "run think", "call the search tool": a one-word English name right after a verb that
    # only a tool takes is a name, not the word
    # (the whole word: "run fetch-content" names fetch-content, not fetch)
    r"\b(?:run|call|invoke|execute)\s+(?:the\s+)?([A-Za-z][A-Za-z0-9]*)\b(?![-_.]\w)",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"[`\"'“‘]([^`\"'”’]{2,80})[`\"'”’]")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_QUALIFIERS = ("__", ".", "/", ":")
_SENTENCE_END = re.compile(r"[.!?;]\s+|\n")
_FILLER = (
    r"(?:you|have|had|calling|called|call|using|used|use|running|ran|run|invoking|invoked|"
    r"invoke|the|a|an|tool|function)"
)
_CUE_BEFORE = re.compile(
    # "after calling X", "before 'X'", "PREREQUISITE: use the X", "instead of X", "first use
    # X" (not "First, use X": a request's own first step), only filler words between ("after
    # that, use X" is a later step, not a prerequisite); "requires an id from X" (any words)
    rf"(?:(?:\b(?:after|before|once|prerequisites?|already|instead\s+of|rather\s+than)\b\W*"
    rf"|\bfirst\s+)(?:{_FILLER}\W+){{0,3}}"
    rf"|\b(?:requires?|required|requiring)\b\W*(?:\w+\W+){{0,3}}"
    # "For articles about variants, use X": X is for another purpose than the text's
    rf"|(?:^|[.:!?]\s*|\bnote\W+)for\b[^,.;:!?()]{{1,60}},\s*(?:{_FILLER}\W+){{1,3}}"
    # "use this tool + X": X goes beside the tool the text is about
    rf"|\bthis\s+(?:tool|function)\s*(?:\+|&|\band\b|\bwith\b|\bplus\b)\W*)$",
    re.IGNORECASE,
)
_CUE_AFTER = re.compile(
    # "X tool FIRST", "X first", "X is required" (not "use X instead": that asks for X)
    r"^\W*(?:\w+\W+){0,2}?(?:first|beforehand|required)\b",
    re.IGNORECASE,
)
_COMMON_SERVERS = frozenset(
    # server ids that are everyday words: named in passing far more often than meant
    {"time", "fetch", "memory", "search", "file", "files", "web", "data", "everything", "mcp"}
)


def _words(name: str) -> str:
    return " ".join(w.lower() for w in re.findall(r"[^\W_]+", _CAMEL.sub(" ", name)))


def _is_identifier(name: str) -> bool:
    """Looks like code, not English: has ``_``/``-``/``.``, camel case or a digit."""
    return bool(re.search(r"[_\-.\d]", name) or _CAMEL.search(name))


class _Qualified:
    """``server__tool`` and its ``.``/``/``/``:`` forms (lower case) → rows, split on demand:
    a table of every form held eight strings per tool, most of a fresh large gateway's first
    route (benchmarks/scale.py)."""

    __slots__ = ("_names", "_row_server", "_server_forms", "_spelled")

    def __init__(
        self,
        names: dict[str, tuple[int, ...]],
        server_forms: dict[str, frozenset[int]],
        row_server: list[int],
        spelled: list[frozenset[str]],
    ) -> None:
        self._names = names
        self._server_forms = server_forms
        self._row_server = row_server
        self._spelled = spelled

    def get(self, form: str, default: tuple[int, ...] = ()) -> tuple[int, ...]:
        """The rows ``form`` names; where it names several servers' tools, only those of a
        server it spells exactly when there are such (``Context7__x`` beside ``context7__x``:
        two config keys differing in case are two servers)."""
        low = form.lower()
        found: dict[int, None] = {}
        spelled: dict[int, None] = {}
        for sep in _QUALIFIERS:
            at = low.find(sep)
            while at > 0:  # every split: a server id may itself hold the separator
                servers = self._server_forms.get(low[:at])
                if servers:
                    for row in self._names.get(low[at + len(sep) :], ()):
                        si = self._row_server[row]
                        if si in servers:
                            found[row] = None
                            if form[:at] in self._spelled[si]:
                                spelled[row] = None
                at = low.find(sep, at + 1)
        if len(found) > 1 and spelled:
            return tuple(spelled)
        return tuple(found) if found else default

    def __contains__(self, form: object) -> bool:
        return isinstance(form, str) and bool(self.get(form))


@dataclass(frozen=True, slots=True)
class NameTable:
    """Lookups from a written form to the tool rows (or server ids) it names."""

    plain: dict[str, tuple[int, ...]]
    """Identifier-like tool names (lower case) → rows."""
    bare: dict[str, tuple[int, ...]]
    """One-word English tool names → rows (count only quoted or qualified)."""
    qualified: _Qualified
    """``server__tool`` and its ``.``/``/``/``:`` forms (lower case) → rows."""
    phrases: dict[str, tuple[int, ...]]
    """Tool names and titles in words (``create entities``) → rows (count only quoted)."""
    servers: dict[str, int]
    """Server id (and its name when it is one identifier and not another server's id or
    key), lower case → server index."""


def server_key(server_id: str) -> str:
    """The server's key: the last ``/`` segment of its id (``hackernews`` for
    ``livemcpbench/hackernews``), as a gateway's config names it."""
    return server_id.rsplit("/", 1)[-1]


def name_table(catalog: Catalog) -> NameTable:
    plain: dict[str, list[int]] = {}
    bare: dict[str, list[int]] = {}
    every: dict[str, list[int]] = {}
    phrases: dict[str, list[int]] = {}
    servers: dict[str, int] = {}
    server_forms: dict[str, set[int]] = {}
    row_server: list[int] = []
    spelled = [frozenset({s.id, server_key(s.id)}) for s in catalog.servers]
    read: dict[str, tuple[bool, str]] = {}  # per distinct name: mirrors repeat their names
    titles: list[tuple[str, int]] = []
    row = 0

    def mention(form: str, si: int) -> None:
        if form and " " not in form and form not in _COMMON_SERVERS and len(form) > 2:
            servers.setdefault(form, si)

    for si, server in enumerate(catalog.servers):  # ids first: names never take them
        for form in {server.id.lower(), server_key(server.id).lower()}:
            server_forms.setdefault(form, set()).add(si)
        mention(server.id.lower(), si)
    for si, server in enumerate(catalog.servers):
        own = {server.id.lower(), server_key(server.id).lower()}
        if server.name.lower() in own or server.name.lower() not in server_forms:
            mention(server.name.lower(), si)  # never another server's id or key
        for tool in server.tools:
            name = tool.name.lower()
            seen = read.get(tool.name)
            if seen is None:
                seen = read[tool.name] = (_is_identifier(tool.name), _words(tool.name))
            identifier, words = seen
            (plain if identifier else bare).setdefault(name, []).append(row)
            every.setdefault(name, []).append(row)
            if words:
                phrases.setdefault(words, []).append(row)
            if tool.title:
                titles.append((tool.title, row))
            row_server.append(si)
            row += 1
    named = set(phrases)
    for text, at in titles:  # a title that reads as a tool's name does not claim that name
        for words in {_words(text), " ".join(re.findall(r"[^\W_]+", text.lower()))}:
            if words and words not in named:
                phrases.setdefault(words, []).append(at)

    def frozen(d: dict[str, list[int]]) -> dict[str, tuple[int, ...]]:
        return {k: tuple(dict.fromkeys(v)) for k, v in d.items()}

    qualified = _Qualified(
        frozen(every), {k: frozenset(v) for k, v in server_forms.items()}, row_server, spelled
    )
    return NameTable(frozen(plain), frozen(bare), qualified, frozen(phrases), servers)


def _occurrences(
    table: NameTable, query: str, written: bool
) -> list[tuple[tuple[int, ...], int, int]]:
    """Every tool mention as (rows, start, end) in ``query``; with ``written``, an unquoted
    name counts only written as an identifier (``endGame``, not the word "Endgame")."""
    out: list[tuple[tuple[int, ...], int, int]] = []
    for m in _IDENT.finditer(query):
        token = m.group(0).rstrip(".:/")
        low = token.lower()
        rows = table.qualified.get(token) or (
            table.plain.get(low, ()) if not written or _is_identifier(token) else ()
        )
        if rows:
            out.append((rows, m.start(), m.end()))
    for m in _RUN.finditer(query):
        rows = table.bare.get(m.group(1).lower(), ())
        if rows:
            out.append((rows, m.start(1), m.end(1)))
    for m in _QUOTED.finditer(query):
        text = m.group(1).strip()
        low = text.lower()
        rows = (
            tuple(r for lookup in (table.plain, table.bare) for r in lookup.get(low, ()))
            + table.qualified.get(text)
            + table.phrases.get(_words(text), ())
        )
        if rows:
            out.append((tuple(dict.fromkeys(rows)), m.start(), m.end()))
    return out


def _is_context(query: str, start: int, end: int) -> bool:
    """The mention at ``query[start:end]`` is named as context, not as the need (module
    docstring): a prerequisite, an alternative, or an aside."""
    before = _SENTENCE_END.split(query[:start])[-1]  # the mention's sentence, up to it
    after = _SENTENCE_END.split(query[end : end + 60])[0]
    return bool(
        _CUE_BEFORE.search(before)
        or _CUE_AFTER.match(after)
        or before.count("(") > before.count(")")
    )


_WRAPPING = " \t\r\n`\"'“”‘’.!?"


def whole_name(table: NameTable, query: str) -> tuple[int, ...]:
    """The tools a query names when the whole query is one name: ``server__tool`` (or its
    ``.``/``/``/``:`` forms), the name as written, or its title (the name in words, any
    case), bare or quoted. Such a query is nothing but the name, so even an English one-word
    name (``search``) or a server id or tool name with spaces in it (``Ant Design
    Components``, which no identifier token can hold) counts."""
    text = query.strip(_WRAPPING)
    if not text or len(text) > 200:
        return ()
    low = text.lower()
    qualified = table.qualified.get(text)
    if qualified:
        return qualified
    rows = table.plain.get(low, ()) + table.bare.get(low, ())
    if rows:
        return tuple(dict.fromkeys(rows))
    # in words: as the name splits ("Get Current Stock Price"), or with a title's own casing
    # ("Get 36Kr Trending" for get-36kr-trending), which camel-case splitting would cut
    return table.phrases.get(_words(text)) or table.phrases.get(
        " ".join(re.findall(r"[^\W_]+", low)), ()
    )


def mentions(table: NameTable, query: str, *, roles: bool = False) -> tuple[set[int], set[int]]:
    """(tool rows, server indices) the query names (module docstring); with ``roles``, only
    the tools named as the need: a tool any of whose mentions is context is left out. A
    query that is one name and nothing else (:func:`whole_name`) names that tool alone."""
    whole = whole_name(table, query)
    if whole:
        return set(whole), set()
    tools: set[int] = set()
    context: set[int] = set()
    servers: set[int] = set()
    for rows, start, end in _occurrences(table, query, roles):
        tools.update(rows)
        if roles and _is_context(query, start, end):
            context.update(rows)
    for token in _IDENT.findall(query):
        low = token.lower().rstrip(".:/")
        if low not in table.qualified and low in table.servers:
            servers.add(table.servers[low])
    return tools - context, servers


def prerank(
    table: NameTable,
    server_of: npt.NDArray[np.int32],
    query: str,
    scores: npt.NDArray[np.float32],
    *,
    roles: bool = True,
) -> npt.NDArray[np.float32]:
    """``scores`` with the tools the query names as its need above all others (in their own
    order), and the best tool of a server it names lifted by :data:`SERVER_LIFT`. Unchanged
    when it names nothing; ``-inf`` (a tool the strategy does not return) stays. ``roles``
    off: every mention lifts (the rule before roles, kept as the measured ablation)."""
    tools, servers = mentions(table, query, roles=roles)
    if not tools and not servers:
        return scores
    out = scores.astype(np.float32, copy=True)
    finite = np.isfinite(out)
    for si in servers:  # the server's best tool only: a named server with many tools
        mine = np.flatnonzero((server_of == si) & finite)  # must not crowd other steps out
        if mine.size:
            out[mine[np.argmax(out[mine])]] += SERVER_LIFT
    if tools:
        rows = np.fromiter(tools, dtype=np.int64)
        rows = rows[finite[rows]]
        if rows.size:
            top = float(out[finite].max())
            floor = float(out[rows].min())
            out[rows] += (top - floor) + 1.0
    return out


_TEMPLATES = (
    "call {name}",
    "use the {name} tool",
    "run `{name}` on this",
    "I want {name} with the usual arguments",
    "{name} please",
    "invoke {server}__{name}",
    "can you use {server}.{name} for me",
    'use "{words}"',
)


def exact_name_cases(catalog: Catalog, limit: int, seed: int = 0) -> list[tuple[str, ToolKey]]:
    """Generated queries that name one tool, and the tool: a sample of ``limit`` tools, each
    with one template (its bare name when unambiguous in the catalog and identifier-like,
    else qualified by its server, or its name in words, quoted)."""
    rng = np.random.default_rng(seed)
    tools = list(catalog.tools())
    counts: dict[str, int] = {}
    for t in tools:
        counts[t.name.lower()] = counts.get(t.name.lower(), 0) + 1
    words_count: dict[str, int] = {}
    for t in tools:
        words_count[_words(t.name)] = words_count.get(_words(t.name), 0) + 1
    pick = rng.permutation(len(tools))[:limit]
    out: list[tuple[str, ToolKey]] = []
    for i in pick:
        t = tools[int(i)]
        ambiguous = counts[t.name.lower()] > 1 or not _is_identifier(t.name)
        choices = [
            k
            for k, tpl in enumerate(_TEMPLATES)
            if ("{server}" in tpl or not ambiguous)
            and ("{words}" not in tpl or words_count[_words(t.name)] == 1)
        ]
        tpl = _TEMPLATES[choices[int(rng.integers(len(choices)))]]
        out.append((tpl.format(name=t.name, server=t.server, words=_words(t.name)), t.key))
    return out


def prerank_index(
    ix: ToolIndex, query: str, scores: npt.NDArray[np.float32], *, roles: bool = True
) -> npt.NDArray[np.float32]:
    """:func:`prerank` over an index, its name table kept by the index (built once)."""
    table: NameTable = ix.derived.memo("exact-name-table", lambda: name_table(ix.catalog))
    return prerank(table, ix.server_of, query, scores, roles=roles)


def names_a_tool(ix: ToolIndex, query: str) -> bool:
    """The query names some tool as its need (what :func:`prerank_index` lifts first)."""
    table: NameTable = ix.derived.memo("exact-name-table", lambda: name_table(ix.catalog))
    return bool(mentions(table, query, roles=True)[0])
