"""Operations: the verbs a request opens its clauses with, and whether a server's tools do them.

A request near a server that lacks the operation ("*push* my commits" beside a git server
with ``git_diff`` and ``git_commit`` but no push, "*buy* 10 shares" beside a stock-price
server) matches that server's topic, so its cosines look served; what gives it away is the
verb. Tool names are verb-first by MCP convention and descriptions say what a tool does, so a
server does an operation when the verb (or a verb of its action class, route/action.py) is
among its tools' name and description words. Asking for information (find, show, tell,
what …) is something nearly every server does, so such requests say nothing here.

The word lists are general English, no benchmark's requests: what comes before a request's
verb (politeness, the asker, auxiliaries), closed-class words that cannot open an imperative,
and the verbs that ask for information.
"""

from __future__ import annotations

import gzip
import hashlib
import re
import sys
from functools import lru_cache
from importlib import resources

import numpy as np
import numpy.typing as npt

from toolroute.index import document
from toolroute.index.build import ToolIndex
from toolroute.index.derived import Arrays, Derivation
from toolroute.index.document import humanise, tokenise
from toolroute.route.action import query_actions
from toolroute.route.precompute import index_actions

__all__ = [
    "LEAD",
    "QUESTION",
    "SERVER_NAME_WORDS",
    "SERVER_WORDS",
    "request_verbs",
    "server_does",
    "server_names",
    "stem",
    "is_verb",
    "verb_lemma",
]

_LEADWORDS = (
    # what comes before a request's verb: politeness, the asker, auxiliaries
    "please kindly can could would will you i id want wanna need to like help me hey hi ok "
    "okay so just let lets us go ahead and now also then first quickly"
)
LEAD = frozenset(_LEADWORDS.split())
_QUESTIONWORDS = (
    "what whats which how when where who whos whose why is are does do did was were any "
    "there should"
)
QUESTION = frozenset(_QUESTIONWORDS.split())
_CLOSEDWORDS = (
    # words that cannot open an imperative: pronouns, determiners, prepositions,
    # conjunctions, auxiliaries, adverbs of time and place, greetings, contraction tails
    "i me my mine myself we our ours you your yours he him his she her hers it its they them "
    "their theirs this that these those a an the some every each all no none both either "
    "neither another other for in on at by with from of about into onto over under after "
    "before during between through without within across or but if because while although "
    "though unless since as than am be been being does have has had shall may might must im "
    "ive here today tomorrow yesterday tonight only even still again already soon hello "
    "thanks thank yes yeah sure good great well oh ve ll re don doesn didn isn aren wasn "
    "won cannot"
)
_CLOSED = frozenset(_CLOSEDWORDS.split())
_INFOWORDS = (
    # verbs that ask for information: served by reading, which nearly every server does
    "provide give tell show know learn understand determine suggest recommend explain assist "
    "display gather research identify find get fetch retrieve search look lookup check list "
    "read view see query describe explore discover locate inspect browse summarize summarise "
    "analyze analyse count obtain access pull grab share compare"
)
_INFO = frozenset(_INFOWORDS.split())
_NOUN_ENDINGS = ("tion", "tions", "ance", "ence", "ment", "ments", "ity", "ness", "ist")
_CLAUSE = re.compile(
    # sentence ends, but not the dots and colons inside "example.org" or "1:52:30"
    r"[.?!;:]+(?=\s|$)|[?!;\n]+|,\s*(?:and|then|but|so)?\s*|\s+(?:and then|and|then)\s+"
)
_SUFFIXES = ("ing", "ed", "es", "s")
_LONGEST = 24
"""No English verb is longer: a longer "word" opens no operation (and is never embedded or
kept as one)."""
_LEMMA_TABLE = "resources/lemma_lu.csv.gz"
"""lemminflect's table of English words, their parts of speech and lemmas (one
``word,pos,lemma[/lemma]`` a line): pyproject bounds the version whose layout this reads."""


def stem(word: str) -> str:
    """A crude English stem (``publishes``, ``published``, ``publishing`` → ``publish``;
    ``create``, ``creates`` → ``creat``): enough to match a verb to a tool's words."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word.rstrip("e") if len(word) > 3 else word


def _clause_verb(clause: str) -> str | None:
    """The clause's verb when it opens with one (after politeness); None for a question, a
    statement or a noun."""
    for word in tokenise(clause):
        if word in LEAD:
            continue
        if word in QUESTION or word in _CLOSED or not (word.isascii() and word.isalpha()):
            return None
        if not 2 <= len(word) <= _LONGEST or (word.endswith("ing") and len(word) > 5):
            return None
        if len(word) > 6 and word.endswith(_NOUN_ENDINGS):
            return None
        return verb_lemma(word)
    return None


@lru_cache(maxsize=1)
def _english() -> tuple[frozenset[str], frozenset[str]]:
    """(every word lemminflect's dictionary knows, those that are a verb's base form), read
    from its lemma table: two sets of words (about 6 MB) instead of its whole lemmatiser
    (about 50 MB) in a serving process."""
    known: set[str] = set()
    verbs: set[str] = set()
    table = resources.files("lemminflect").joinpath(_LEMMA_TABLE)
    with table.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as lines:
        for line in lines:
            word, pos, lemmas = line.rstrip("\n").split(",", 2)
            known.add(word)
            if pos == "verb" and word in lemmas.split("/"):
                verbs.add(word)
    return frozenset(known), frozenset(verbs)


def is_verb(word: str) -> bool:
    """Whether English uses ``word`` as a verb's base form (``merge``, ``get``; not ``npm``)."""
    return word in _english()[1]


def verb_lemma(word: str) -> str | None:
    """``word`` when English uses it as a verb's base form, the form an imperative or "I want
    to …" opens with; the word itself when the dictionary does not know it (``rebase``,
    ``upvote``: an imperative's first word is then taken for a verb); None when it is known
    but not a verb's base form (``specifically``, ``durable``, and ``bought`` or ``ran``,
    which tell what happened rather than ask)."""
    known, verbs = _english()
    return word if word in verbs or word not in known else None


def request_verbs(text: str) -> tuple[str, ...]:
    """The verbs the request's clauses open with, in order; empty when none opens with one or
    when one asks for information (then reading serves it: nothing to check)."""
    verbs = [v for part in _CLAUSE.split(text) if part and (v := _clause_verb(part))]
    if any(v in _INFO or "read" in query_actions(v) for v in verbs):
        return ()
    return tuple(verbs)


def _word_id(word: str) -> int:
    """A stable 64-bit id of a word (8 bytes a word in the arrays, whatever its length)."""
    return int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little") >> 1


def _word_table(ix: ToolIndex, names_only: bool) -> Arrays:
    """Per server, the sorted ids of its tools' word stems (names and descriptions, or names
    only), concatenated, with each server's end offset."""
    ids: dict[str, int] = {}
    words: list[set[int]] = [set() for _ in ix.server_ids]
    for row, tool in enumerate(ix.tools):
        own = words[int(ix.server_of[row])]
        text = humanise(tool.name) if names_only else f"{humanise(tool.name)} {tool.description}"
        for w in tokenise(text):
            key = ids.get(w)
            if key is None:
                key = ids[w] = _word_id(stem(w))
            own.add(key)
    flat = np.array([w for ws in words for w in sorted(ws)], dtype=np.int64)
    ends = np.cumsum([len(ws) for ws in words], dtype=np.int64)
    return flat, ends


def _server_words(ix: ToolIndex) -> Arrays:
    return _word_table(ix, names_only=False)


def _server_name_words(ix: ToolIndex) -> Arrays:
    return _word_table(ix, names_only=True)


SERVER_WORDS = Derivation("server-words", _server_words, (sys.modules[__name__], document))
"""Per-server word stems, saved with the index's snapshot."""
SERVER_NAME_WORDS = Derivation(
    "server-name-words", _server_name_words, (sys.modules[__name__], document)
)
"""Per-server stems of its tool names only."""


def _has(ix: ToolIndex, table: Derivation[ToolIndex], server: int, verb: str) -> bool:
    words, ends = ix.derived.get(table, ix)
    start = int(ends[server - 1]) if server else 0
    own = words[start : int(ends[server])]
    key = _word_id(stem(verb))
    at = int(np.searchsorted(own, key))
    return at < own.size and bool(own[at] == key)


def server_names(ix: ToolIndex, server: int, verb: str) -> bool:
    """Whether a tool name of ``server`` holds ``verb`` itself (its stem; no action class):
    names are verb-first, so this is the server saying it does exactly that."""
    return _has(ix, SERVER_NAME_WORDS, server, verb)


def _server_classes(ix: ToolIndex) -> tuple[npt.NDArray[np.bool_], tuple[str, ...]]:
    """((servers, classes) table of the action classes each server's tool names carry, the
    class order)."""

    def make() -> tuple[npt.NDArray[np.bool_], tuple[str, ...]]:
        acts, classes = index_actions(ix)
        out = np.zeros((len(ix.server_ids), len(classes)), dtype=bool)
        known = acts >= 0
        out[ix.server_of[known], acts[known]] = True
        return out, classes

    made: tuple[npt.NDArray[np.bool_], tuple[str, ...]] = ix.derived.memo("server-classes", make)
    return made


def server_does(ix: ToolIndex, server: int, verb: str) -> bool:
    """Whether ``server``'s tools name or describe ``verb`` (its stem), or carry its action
    class in their names."""
    if _has(ix, SERVER_WORDS, server, verb):
        return True
    table, classes = _server_classes(ix)
    return any(table[server, classes.index(c)] for c in query_actions(verb))
