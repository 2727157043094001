"""Poisoned-description heuristics: a tool's text that reads like instructions aimed at the
model rather than a description of what the tool does ("ignore previous instructions", "do not
tell the user", reading ``~/.ssh``, sending secrets somewhere).

Text is normalised before matching (:func:`normalise`), so the tricks that hide a phrase from a
plain pattern but not from the model do not hide it here:

- compatibility forms are folded (NFKC: fullwidth ``ｉｇｎｏｒｅ``, ligatures);
- a right-to-left override (U+202E) shows its run reversed, so that run is reversed back
  (``\\u202esnoitcurtsni suoiverp erongi`` reads "ignore previous instructions");
- zero-width and other invisible format characters (U+200B/200C/200D/2060/FEFF, bidi
  embeddings and isolates, soft hyphen) are dropped, so ``ig\\u200bnore`` is "ignore";
- Unicode tag characters (U+E0020–E007E, invisible "ASCII smuggling") become the ASCII they
  encode.

The override and hiding phrases are matched in English and in common translations (Spanish,
French, German, Portuguese, Italian, Russian, Chinese, Japanese). A flag found only after
normalisation adds "obfuscated with invisible or reversed characters".

A tool's *name* is checked too (:func:`look_alikes`): one with invisible characters or
spaces other than the ASCII one is flagged, and so is one that looks like another tool's name
without being it (the same skeleton, :func:`toolroute.catalog.name.skeleton`: a Cyrillic ``і``
beside the Latin ``i``, ``probe_aII`` beside ``probe_all``, a trailing space), plain or
namespaced. Of names that look alike, the one kept is the one that is its own skeleton (what a
reader takes them all for), else the plainest (ASCII, no space, then the first in code point
order), so an impostor never displaces the name it imitates, whichever is listed first.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from toolroute.catalog.models import Tool
from toolroute.catalog.name import invisible, is_plain, qualified_name, skeleton

__all__ = ["OBFUSCATED", "look_alikes", "normalise", "suspicious"]

OBFUSCATED = "obfuscated with invisible or reversed characters"

_RLO, _LRO, _PDF = "\u202e", "\u202d", "\u202c"
_OVERRIDDEN = re.compile(f"{_RLO}([^{_RLO}{_LRO}{_PDF}\\n]*)(?:{_PDF}|$)", re.MULTILINE)
_TAGS = re.compile("[\U000e0020-\U000e007e]")


def normalise(text: str) -> str:
    """``text`` as the model reads it: NFKC, right-to-left overridden runs reversed back, tag
    characters decoded to ASCII, invisible format characters (category Cf) dropped."""
    text = unicodedata.normalize("NFKC", text)
    text = _OVERRIDDEN.sub(lambda m: m.group(1)[::-1], text)
    text = _TAGS.sub(lambda m: chr(ord(m.group(0)) - 0xE0000), text)
    return "".join(c for c in text if unicodedata.category(c) != "Cf")


def _any(*words: str) -> str:
    return "(?:" + "|".join(words) + ")"


# "ignore previous instructions" and its translations: (verb, earlier, instructions) in either
# order, since several languages put the verb last.
_OVERRIDE = (
    r"\b(ignore|disregard|forget|override)\b.{0,30}\b(previous|prior|above|earlier|"
    r"system|all other)\b.{0,20}\b(instructions?|prompts?|rules|directions)\b",
    # Spanish
    r"\b"
    + _any(
        "ignor[ae]\\w*",
        "olvid[ae]\\w*",
        "descart[ae]\\w*",
        "omit[ae]\\w*",
        "haz caso omiso",
        "no hagas caso",
    )
    + r"\b.{0,30}\b"
    + _any("instrucciones", "indicaciones", "reglas", "órdenes", "directrices")
    + r"\b.{0,20}\b"
    + _any("anteriores", "previas", "precedentes", "de arriba", "del sistema"),
    # French
    r"\b"
    + _any(
        "ignor\\w*",
        "oubli\\w*",
        "ne tiens? pas compte",
        "ne tenez pas compte",
        "fais abstraction",
        "faites abstraction",
    )
    + r"\b.{0,30}\b"
    + _any("instructions", "consignes", "règles", "directives")
    + r"\b.{0,20}"
    + _any("précédentes", "antérieures", "ci-dessus", "du système"),
    # German: verb first, or the infinitive last ("alle vorherigen Anweisungen ignorieren")
    r"\b"
    + _any("ignorier\\w*", "vergiss", "vergessen sie", "missacht\\w*", "übergeh\\w*")
    + r"\b.{0,30}\b"
    + _any(
        "vorherige\\w*",
        "vorige\\w*",
        "bisherige\\w*",
        "frühere\\w*",
        "obige\\w*",
        "vorangegangene\\w*",
        "system\\w*",
    )
    + r".{0,20}\b"
    + _any("anweisungen", "instruktionen", "regeln", "befehle", "vorgaben"),
    r"\b"
    + _any("vorherige\\w*", "vorige\\w*", "bisherige\\w*", "frühere\\w*", "obige\\w*")
    + r".{0,20}\b"
    + _any("anweisungen", "instruktionen", "regeln", "befehle", "vorgaben")
    + r"\b.{0,20}\b"
    + _any("ignorier\\w*", "vergessen", "missacht\\w*"),
    # Portuguese and Italian
    r"\b"
    + _any("ignor[ae]\\w*", "esqueça", "esquece", "desconsider[ae]\\w*", "dimentica\\w*")
    + r"\b.{0,30}\b"
    + _any("instruções", "instrucoes", "istruzioni", "regras", "regole")
    + r"\b.{0,20}\b"
    + _any("anteriores", "precedenti", "prévias", "previas", "di sistema"),
    # Russian
    r""
    + _any("игнорир\\w*", "забуд\\w*", "не обращай\\w*")
    + r".{0,30}"
    + _any("предыдущ\\w*", "прежн\\w*", "вышеуказанн\\w*", "системн\\w*")
    + r".{0,20}"
    + _any("инструкци\\w*", "указани\\w*", "правил\\w*", "команд\\w*"),
    # Chinese (simplified and traditional) and Japanese
    _any(
        "忽略",
        "无视",
        "無視",
        "忽视",
        "忽視",
        "忘记",
        "忘記",
        "不要理会",
        "不要理會",
        "不要遵守",
        "不要遵循",
    )
    + ".{0,10}"
    + _any(
        "之前",
        "以上",
        "先前",
        "前面",
        "上面",
        "此前",
        "上述",
        "原有",
        "原来",
        "原來",
        "系统",
        "系統",
    )
    + ".{0,8}"
    + _any("指令", "指示", "说明", "說明", "规则", "規則", "提示", "命令"),
    _any("以前", "前", "上記", "これまで", "先ほど", "システム")
    + "の.{0,6}"
    + _any("指示", "命令", "ルール", "指令", "プロンプト")
    + ".{0,6}"
    + _any("無視", "忘れ"),
)

# "do not tell the user" and its translations.
_HIDE = (
    r"\b(do not|don't|never|without)\b.{0,15}\b(tell|telling|inform|informing|mention|"
    r"mentioning|reveal|revealing|show|showing|notify|notifying|alert|alerting)\b"
    r".{0,25}\b(the )?(user|human|operator)\b",
    r"\b"
    + _any("no", "nunca", "sin")
    + r"\b.{0,15}\b"
    + _any(
        "digas",
        "diga",
        "decir",
        "informes",
        "informe",
        "informar",
        "menciones",
        "mencionar",
        "reveles",
        "revelar",
        "muestres",
        "avises",
        "avisar",
    )
    + r"\b.{0,25}\b"
    + _any("usuario", "usuaria"),
    r"\b"
    + _any("ne\\b", "n'", "sans\\b", "jamais\\b")
    + r".{0,20}\b"
    + _any(
        "dis",
        "dites",
        "dire",
        "informe\\w*",
        "mentionne\\w*",
        "révèle\\w*",
        "montre\\w*",
        "prévien\\w*",
        "signale\\w*",
        "avertir",
    )
    + r"\b.{0,25}"
    + _any("utilisateur", "utilisatrice"),
    r"\b"
    + _any(
        "sag",
        "sage",
        "sagen sie",
        "erzähl",
        "erzähle",
        "erzählen sie",
        "verrat",
        "verrate",
        "verraten sie",
        "informiere",
        "informieren sie",
        "erwähne",
        "erwähnen sie",
    )
    + r"\b.{0,25}\b"
    + _any("benutzer\\w*", "nutzer\\w*", "anwender\\w*")
    + r"\b.{0,15}\b"
    + _any("nicht", "nichts", "niemals", "kein\\w*"),
    r"\b"
    + _any("ohne", "nicht", "niemals")
    + r"\b.{0,25}\b"
    + _any("benutzer\\w*", "nutzer\\w*", "anwender\\w*")
    + r"\b.{0,25}\b"
    + _any("sagen", "informieren", "erwähnen", "verraten", "benachrichtigen", "zeigen"),
    r"\b"
    + _any("não", "nao", "sem", "non", "senza", "mai")
    + r"\b.{0,15}\b"
    + _any(
        "diga",
        "dizer",
        "informe",
        "informar",
        "mencione",
        "dire",
        "dirlo",
        "informare",
        "menzionare",
        "rivelare",
        "avvisare",
    )
    + r"\b.{0,25}\b"
    + _any("usuário", "usuario", "utente"),
    _any("не говори", "не сообщай", "не упоминай", "не показывай", "без ведома", "не рассказывай")
    + ".{0,25}"
    + _any("пользовател\\w*", "юзер\\w*"),
    _any("不要", "别", "別", "不得", "切勿", "勿")
    + ".{0,6}"
    + _any("告诉", "告訴", "通知", "提及", "透露")
    + ".{0,6}"
    + _any("用户", "用戶", "使用者"),
    _any("不要", "别", "別", "勿")
    + _any("让", "讓")
    + _any("用户", "用戶", "使用者")
    + _any("知道", "发现", "發現", "察觉", "察覺"),
    _any("ユーザー", "利用者")
    + ".{0,6}"
    + _any("に", "へ", "には")
    + ".{0,10}"
    + _any("言わない", "伝えない", "知らせない", "教えない", "言うな", "伝えるな", "知らせるな"),
)

_LABELLED: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("overrides earlier instructions", _OVERRIDE),
    ("hides something from the user", _HIDE),
    ("hidden instruction tag", (r"<\s*/?\s*(important|system|instructions?|secret)\s*>",)),
    (
        "reads secrets or private files",
        (
            r"(~/\.ssh|\bid_(rsa|ed25519|ecdsa)\b|\.aws/credentials|/etc/(passwd|shadow)|"
            r"\.netrc\b|\bmcp\.json\b|\.env\b|private[ _-]key|\bcredentials?\s+file)",
        ),
    ),
    (
        "sends data elsewhere",
        (
            r"\b(send|upload|post|forward|exfiltrate|leak|transmit|include|append|pass)\b.{0,60}"
            r"\b(api[ _-]?keys?|passwords?|secrets?|tokens?|credentials|conversation|"
            r"chat history|system prompt)\b",
        ),
    ),
    (
        "orders the model to act first",
        (
            r"\b(before|prior to)\b.{0,40}\b(using|calling|running)\b.{0,40}\b(you must|you "
            r"need to|always|first)\b.{0,20}\b(read|call|run|send|include)\b",
        ),
    ),
)

_POISON: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (label, re.compile("|".join(f"(?:{rx})" for rx in patterns), re.IGNORECASE | re.DOTALL))
    for label, patterns in _LABELLED
)


def _texts(tool: Tool) -> Iterable[str]:
    """The tool's description and every description inside its input schema."""
    yield tool.description
    stack: list[Any] = [tool.input_schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for k, v in node.items():
                if k in ("description", "title") and isinstance(v, str):
                    yield v
                else:
                    stack.append(v)
        elif isinstance(node, list):
            stack.extend(node)


_SEEN_MAX = 8192
"""Verdicts of :func:`suspicious` kept (oldest dropped first)."""
_seen: dict[bytes, tuple[str, ...]] = {}


def suspicious(tool: Tool) -> list[str]:
    """Why the tool's text reads like instructions aimed at the model (empty: it does not).

    Every listing of a server is reviewed again, most often unchanged: the verdict is kept by
    a digest of the texts it reads (the description and the schema, length-delimited so that
    no two tools' texts run together into one key)."""
    text = f"{len(tool.description)}:{tool.description}{tool.schema_json}".encode()
    key = hashlib.blake2b(text, digest_size=16).digest()
    verdict = _seen.get(key)
    if verdict is None:
        verdict = tuple(_suspicious(tool))
        if len(_seen) >= _SEEN_MAX:
            del _seen[next(iter(_seen))]
        _seen[key] = verdict
    return list(verdict)


def _suspicious(tool: Tool) -> list[str]:
    found: list[str] = []
    hidden = False
    for raw in _texts(tool):
        text = normalise(raw)
        for label, rx in _POISON:
            if label not in found and rx.search(text):
                found.append(label)
                hidden = hidden or not rx.search(unicodedata.normalize("NFKC", raw))
    if hidden:
        found.append(OBFUSCATED)
    return found


def look_alikes(tools: Iterable[Tool]) -> dict[str, list[str]]:
    """``{"<server>__<tool>": flags}`` for the tools whose name hides characters or looks like
    another tool's name (plain or namespaced) without being the one kept of them (module
    docstring); the others are absent."""
    listed = list(tools)
    forms: dict[str, set[str]] = {}
    for t in listed:
        for form in (t.name, qualified_name(t.server, t.name)):
            forms.setdefault(skeleton(form), set()).add(form)
    out: dict[str, list[str]] = {}
    for t in listed:
        qualified = qualified_name(t.server, t.name)
        flags = []
        if hidden := invisible(t.name):
            flags.append(f"name has invisible characters ({', '.join(hidden)})")
        for form in (t.name, qualified):
            group = forms[skeleton(form)]
            kept = min(group, key=_plainest)
            if kept not in (t.name, qualified):
                flags.append(f"name looks like {kept}")
                break
        if flags:
            out[qualified] = flags
    return out


def _plainest(name: str) -> tuple[bool, bool, bool, str]:
    """Of look-alike names, the one kept sorts first: its own skeleton, ASCII, no space."""
    return (not is_plain(name), not name.isascii(), " " in name, name)
