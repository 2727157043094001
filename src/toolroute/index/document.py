"""Tool documents: the texts a tool is indexed by.

As in §3.2.1 of *ScaleMCP: Dynamic and Auto-Synchronizing Model Context Protocol Tools for LLM
Agents* (ScaleMCP), a document has components — name, description, parameters, synthetic
questions (ScaleMCP §4.1.1) — plus, beyond the paper, the server's own profile as context. The
same components feed the lexical index (as one text) and the dense index (concatenated, or as
a TDWA weighted average of per-component embeddings, ScaleMCP eq. 1).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from toolroute.catalog.models import Server, Tool, ToolKey
from toolroute.llm.client import prompt_text

__all__ = [
    "LLMQuestions",
    "QuestionGenerator",
    "StoredQuestions",
    "TemplateQuestions",
    "ToolDoc",
    "build_docs",
    "humanise",
    "param_texts",
    "server_profile",
    "tokenise",
]

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|\n+")


def humanise(identifier: str) -> str:
    """``get_weRead-rank`` → ``get we read rank``: split snake, kebab and camel case."""
    spaced = _CAMEL.sub(" ", identifier)
    return " ".join(w.lower() for w in _WORD.findall(spaced))


def tokenise(text: str) -> list[str]:
    """Lower-cased alphanumeric runs with camelCase and snake_case split."""
    return [w.lower() for w in _WORD.findall(_CAMEL.sub(" ", text))]


def _first_sentence(text: str, limit: int = 200) -> str:
    parts = [p.strip() for p in _SENTENCE.split(text.strip()) if p.strip()]
    return parts[0][:limit] if parts else ""


def param_texts(schema: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(name, description) of every parameter an input schema declares, in its order ("" for
    a parameter with no description): what a tool document says about its arguments."""
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(props, Mapping):
        return []
    out: list[tuple[str, str]] = []
    for name, spec in props.items():
        desc = spec.get("description", "") if isinstance(spec, Mapping) else ""
        out.append((str(name), str(desc) if isinstance(desc, str) else ""))
    return out


PROFILE_CHARS = 2000
"""Longest server profile body (the dense models read ~1,000 characters of it anyway)."""


def server_profile(server: Server) -> str:
    """Server-layer text: name + description, or name + tool names when the description is empty."""
    body = server.description.strip() or ", ".join(t.name for t in server.tools)
    # every tool's lexical text repeats its server's profile: uncapped, a server of 10,000
    # tools made 10,000 copies of 10,000 names (tests/downstream/test_faults.py)
    return f"{server.name}: {body[:PROFILE_CHARS]}"


class QuestionGenerator(Protocol):
    """Makes synthetic user questions for a tool (ScaleMCP §4.1.1)."""

    @property
    def name(self) -> str: ...

    def questions(self, server: Server, tool: Tool) -> list[str]: ...


class TemplateQuestions:
    """Offline generator: rephrases name, description and parameters as user requests.

    Deterministic, no model. It cannot invent paraphrases an LLM would, so its value is
    measured in benchmarks/tdwa.py rather than assumed.
    """

    name = "template-v1"

    def questions(self, server: Server, tool: Tool) -> list[str]:
        action = humanise(tool.name)
        lead = _first_sentence(tool.description)
        params = [humanise(p) for p, _ in param_texts(tool.input_schema)][:4]
        out = [f"How can I {action}?"]
        if lead:
            body = lead.rstrip(".。!！")
            out.append(f"I need to {body[0].lower()}{body[1:]}" if body[:1].isupper() else body)
        if params:
            out.append(f"{action} given {', '.join(params)}")
        out.append(f"Use {server.name} to {action}")
        return out


class QuestionCache(Protocol):
    def get_questions(self, generator: str, tool_hash: str) -> list[str] | None: ...
    def put_questions(self, generator: str, tool_hash: str, questions: list[str]) -> None: ...


QUESTIONS_SCHEMA = {
    "type": "object",
    "properties": {
        "questions": {
            "type": "array",
            "minItems": 1,
            "maxItems": 10,
            "items": {"type": "string", "minLength": 5},
        }
    },
    "required": ["questions"],
}


class LLMQuestions:
    """Synthetic questions from an LLM (ScaleMCP §4.1.1), cached by tool hash in the store so
    an unchanged tool is never sent to the model again; the offline templates stand in when
    the model fails (and that answer is not cached, so a later run can still ask)."""

    def __init__(self, llm: Any, cache: QuestionCache | None = None, count: int = 5) -> None:
        self.llm = llm
        self.cache = cache
        self.count = count
        self.name = f"llm:{llm.config.model}:{count}"
        self._fallback = TemplateQuestions()

    def questions(self, server: Server, tool: Tool) -> list[str]:
        if self.cache is not None:
            cached = self.cache.get_questions(self.name, tool.hash)
            if cached is not None:
                return cached
        params = ", ".join(n for n, _ in param_texts(tool.input_schema)) or "none"
        answer, used = self.llm.json(
            "questions",
            f"Write {self.count} short, varied requests a user might type that this tool "
            'answers. Answer JSON {"questions": ["...", ...]}.',
            f"Server: {server.name}\nTool: {tool.name}\n"
            f"Description: {prompt_text(tool.description)}\nParameters: {prompt_text(params)}",
            QUESTIONS_SCHEMA,
            lambda: self._fallback.questions(server, tool),
        )
        if not used:
            return list(answer)
        questions = [str(q) for q in answer["questions"]][: self.count]
        if self.cache is not None:
            self.cache.put_questions(self.name, tool.hash, questions)
        return questions


class StoredQuestions:
    """The questions an LLM wrote at index time, read back from the store by a later command
    that has no LLM (``route``, ``serve``): under the LLM generator's ``name``, so the index
    it built is reused as it is. A tool the LLM was never asked about (added since) gets the
    offline templates."""

    def __init__(self, name: str, cache: QuestionCache) -> None:
        self.name = name
        self.cache = cache
        self._fallback = TemplateQuestions()

    def questions(self, server: Server, tool: Tool) -> list[str]:
        cached = self.cache.get_questions(self.name, tool.hash)
        return cached if cached is not None else self._fallback.questions(server, tool)


@dataclass(frozen=True, slots=True)
class ToolDoc:
    """The indexed texts of one tool."""

    key: ToolKey
    name: str
    description: str
    parameters: str
    questions: tuple[str, ...]
    server: str

    def concat(self, include: Sequence[str] = ("server", "name", "description")) -> str:
        """One text of the chosen components, in a fixed order (ScaleMCP's 'Concat')."""
        parts: list[str] = []
        for comp in include:
            if comp == "server":
                parts.append(self.server.split(":", 1)[0])
            elif comp == "name":
                parts.append(self.name)
            elif comp == "description":
                parts.append(self.description)
            elif comp == "parameters":
                parts.append(self.parameters)
            elif comp == "questions":
                parts.append(" ".join(self.questions))
        return ": ".join(p for p in parts if p)

    def lexical_text(self) -> str:
        return " ".join((self.server, self.name, self.description, self.parameters))


def build_docs(servers: Sequence[Server], generator: QuestionGenerator | None) -> list[ToolDoc]:
    """Documents for every tool, in catalog order."""
    docs: list[ToolDoc] = []
    for server in servers:
        profile = server_profile(server)
        for tool in server.tools:
            params = "; ".join(
                f"{humanise(n)}: {d}" if d else humanise(n)
                for n, d in param_texts(tool.input_schema)
            )
            docs.append(
                ToolDoc(
                    key=tool.key,
                    name=humanise(tool.name),
                    description=tool.description.strip(),
                    parameters=params,
                    questions=tuple(generator.questions(server, tool)) if generator else (),
                    server=profile,
                )
            )
    return docs
