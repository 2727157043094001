"""Optional LLM stages of routing, each with a deterministic offline fallback.

- PA-RAG (§4.4–4.5): a complexity router over the query and its pre-retrieved servers,
  a decomposer for compound queries, cascade retrieval per sub-query, an LLM tool selector, and
  aggregation with de-duplication (strategies ``pa-rag`` and its Table 2 ablations).
- Adaptive Tool Routing (§IV–V): an LLM filter over compact summaries of the retrieved
  candidates with a ``max_tools`` cap, "include both when unsure", and the unfiltered list as
  the fallback (strategy ``atr``).
- EHRR's functional subtask (§III): ``{domain, operation, target}`` records.

Without an LLM (or when it fails), every stage falls back to the offline heuristic and the
strategy notes say so (``--explain``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from toolroute.index.build import ToolIndex
from toolroute.llm.client import ChatLLM, prompt_text
from toolroute.route.intent import split_intents

__all__ = ["classify", "decompose", "functional_subtasks", "select"]

DECOMPOSE = {
    "type": "object",
    "properties": {
        "sub_queries": {
            "type": "array",
            "minItems": 1,
            "maxItems": 8,
            "items": {"type": "string", "minLength": 3},
        }
    },
    "required": ["sub_queries"],
}
COMPLEXITY = {
    "type": "object",
    "properties": {"complex": {"type": "boolean"}},
    "required": ["complex"],
}


def _select_schema(n: int, max_tools: int) -> dict[str, Any]:
    """Numbers of listed candidates, at most ``max_tools`` (a grammar on llama.cpp)."""
    item = {"type": "integer", "minimum": 1, "maximum": n}
    return {
        "type": "object",
        "properties": {"tools": {"type": "array", "items": item, "maxItems": max_tools}},
        "required": ["tools"],
    }


SUBTASKS = {
    "type": "object",
    "properties": {
        "subtasks": {
            "type": "array",
            "minItems": 1,
            "maxItems": 8,
            "items": {
                "type": "object",
                "properties": {
                    "domain": {"type": "string"},
                    "operation": {"type": "string"},
                    "target": {"type": "string"},
                },
                "required": ["domain", "operation"],
            },
        }
    },
    "required": ["subtasks"],
}


T = TypeVar("T")


def _ask(
    llm: ChatLLM | None,
    stage: str,
    system: str,
    user: str,
    schema: dict[str, Any],
    fallback: Callable[[], T],
    read: Callable[[Any], T],
) -> tuple[T, bool]:
    """(``read(answer)``, True) when a model answers in shape, else (``fallback()``, False)."""
    if llm is None:
        return fallback(), False
    answer, used = llm.json(stage, system, user, schema, fallback)
    return (read(answer) if used else answer), used


def decompose(llm: ChatLLM | None, query: str) -> tuple[list[str], bool]:
    """Sub-queries of a compound request (PA-RAG §4.5); fallback: offline clause split."""

    def fallback() -> list[str]:
        return split_intents(query) or [query]

    return _ask(
        llm,
        "decompose",
        "Split the user's request into the separate tool-using steps it needs. Answer JSON "
        '{"sub_queries": ["step", ...]}; one step if it is a single action.',
        prompt_text(query),
        DECOMPOSE,
        fallback,
        lambda a: list(a["sub_queries"]),
    )


def classify(llm: ChatLLM | None, query: str, servers: Sequence[str]) -> tuple[bool, bool]:
    """Is the request complex (several tools/servers)? PA-RAG §4.4; fallback: ≥ 2 clauses."""

    def fallback() -> bool:
        return len(split_intents(query)) >= 2

    return _ask(
        llm,
        "complexity",
        "Decide if the request needs several different tools (complex) or one (simple). "
        'Answer JSON {"complex": true|false}.',
        f"Request: {prompt_text(query)}\nCandidate servers: {', '.join(servers)}",
        COMPLEXITY,
        fallback,
        lambda a: bool(a["complex"]),
    )


def select(
    llm: ChatLLM | None,
    need: str,
    ix: ToolIndex,
    candidates: Sequence[int],
    max_tools: int,
    *,
    unsure_keeps_both: bool = True,
) -> tuple[list[int], bool]:
    """The candidates that serve ``need`` (PA-RAG selector, ATR filter), at most ``max_tools``.

    The model sees compact numbered summaries (``3. server/tool: first sentence``) and answers
    with numbers — a few output tokens instead of long names, which is most of a small model's
    latency. Fallback and "nothing valid came back": the candidates as ranked, capped.
    """
    ranked = list(candidates)

    def fallback() -> list[int]:
        return ranked[:max_tools]

    if llm is None or not ranked:
        return fallback(), False
    lines = [
        f"{n}. {ix.tools[i].server}/{ix.tools[i].name}: {_first_sentence(ix.tools[i].description)}"
        for n, i in enumerate(ranked, start=1)
    ]
    hint = " If unsure between two tools, include both." if unsure_keeps_both else ""
    answer, used = llm.json(
        "select",
        f"Pick the tools the request needs, at most {max_tools}, best first.{hint} "
        'Answer JSON {"tools": [numbers]}.',
        f"Request: {prompt_text(need)}\nTools:\n" + "\n".join(lines),
        _select_schema(len(ranked), max_tools),
        fallback,
        max_tokens=16 + 4 * max_tools,
    )
    if not used:
        return answer, False
    chosen = list(dict.fromkeys(ranked[n - 1] for n in answer["tools"]))[:max_tools]
    return (chosen, True) if chosen else (fallback(), False)


def _first_sentence(text: str, limit: int = 120) -> str:
    head = text.strip().split("\n")[0].split(". ")[0]
    return head if len(head) <= limit else head[: limit - 1] + "…"


def functional_subtasks(llm: ChatLLM | None, query: str) -> tuple[list[dict[str, str]], bool]:
    """EHRR's structured functional subtasks ``{domain, operation, target}`` (§III);
    fallback: one record per offline clause, the clause as the operation."""

    def fallback() -> list[dict[str, str]]:
        return [
            {"domain": "", "operation": c, "target": ""} for c in (split_intents(query) or [query])
        ]

    return _ask(
        llm,
        "subtask",
        "Describe each tool-using step of the request functionally. Answer JSON "
        '{"subtasks": [{"domain": "...", "operation": "...", "target": "..."}]}.',
        prompt_text(query),
        SUBTASKS,
        fallback,
        lambda a: list(a["subtasks"]),
    )


def subtask_text(subtask: dict[str, Any]) -> str:
    """A functional subtask as routing text: ``operation target (domain)``."""
    parts = [str(subtask.get("operation", "")), str(subtask.get("target", ""))]
    domain = str(subtask.get("domain", ""))
    text = " ".join(p for p in parts if p)
    return f"{text} ({domain})" if domain else text


def top_indices(scores: np.ndarray, k: int) -> list[int]:
    finite = np.flatnonzero(np.isfinite(scores))
    order = finite[np.argsort(-scores[finite], kind="stable")]
    return [int(i) for i in order[:k]]
