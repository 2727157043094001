"""Planners of the per-step agent: the text the agent routes for each required step.

    whole     the whole-request agent: the whole request for every step (``agent.run_agent``)
    oracle    ORACLE PLANNER — it knows what each step needs: a functional description written
              from the step's tool, its description with the server's and the tool's names
              removed. It isolates routing economics from planning; results with it say
              nothing about how well an agent plans.
    clauses   the offline clause split of the request (``route.intent.split_intents``),
              steps matched to clauses greedily by cosine with the oracle description (the
              best pair first, each clause used once until all are used)
    llm       the router's functional-subtask writer (EHRR §III,
              :func:`toolroute.route.llm_stages.functional_subtasks`), matched to steps as
              clauses are; without a configured model it is its offline fallback, the clauses

Plans are written over the original catalog (a step needs a capability, not a vendor).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Literal, get_args

import numpy as np

from toolroute.catalog.loader import Query
from toolroute.catalog.models import Catalog, Server, Tool, ToolKey
from toolroute.embed.base import Matrix
from toolroute.errors import ConfigError
from toolroute.llm.client import ChatLLM
from toolroute.route import llm_stages
from toolroute.route.intent import split_intents

__all__ = ["PLANNERS", "Planner", "greedy_match", "oracle_text", "plan_steps"]

Planner = Literal["whole", "oracle", "clauses", "llm"]
PLANNERS: tuple[Planner, ...] = get_args(Planner)
Embed = Callable[[list[str]], Matrix]


def _spaced(name: str) -> str:
    return re.sub(r"[_\-.]+", " ", re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)).strip()


def oracle_text(tool: Tool, server: Server) -> str:
    """What the step needs, functionally: the tool's description with the server's and the
    tool's names (as written, and with ``_``/``-``/camelCase spelled as words) removed; the
    tool's name as words when nothing else is left."""
    text = tool.description
    names = {tool.name, _spaced(tool.name), server.id, server.name, _spaced(server.name)}
    for name in sorted((n for n in names if n), key=len, reverse=True):
        text = re.sub(re.escape(name), " ", text, flags=re.IGNORECASE)
    text = re.sub(r"\s+", " ", text).strip(" ,.:;-")
    return text or _spaced(tool.name).lower()


def greedy_match(sims: Matrix) -> list[int]:
    """For each row (step), a column (clause): the best remaining pair first, each column used
    once until all are, then all are free again."""
    steps, cols = sims.shape
    out = [-1] * steps
    free = np.ones(cols, dtype=bool)
    todo = np.ones(steps, dtype=bool)
    for _ in range(steps):
        if not free.any():
            free[:] = True
        masked = np.where(todo[:, None] & free[None, :], sims, -np.inf)
        s, c = np.unravel_index(int(np.argmax(masked)), masked.shape)
        out[int(s)] = int(c)
        todo[s], free[c] = False, False
    return out


def _first_key(group: frozenset[ToolKey], order: dict[ToolKey, int]) -> ToolKey:
    return min(group, key=lambda k: order[k])


def plan_steps(
    queries: Sequence[Query],
    catalog: Catalog,
    planner: Planner,
    *,
    embed: Embed | None = None,
    llm: ChatLLM | None = None,
) -> list[tuple[str, ...]]:
    """One text per group of every query (``catalog`` is the original one the queries name)."""
    if planner not in PLANNERS:
        raise ConfigError(f"unknown planner {planner!r}; choose from: {', '.join(PLANNERS)}")
    order = {t.key: j for j, t in enumerate(catalog.tools())}
    tools = {t.key: t for t in catalog.tools()}
    servers = {s.id: s for s in catalog.servers}

    def need(group: frozenset[ToolKey]) -> str:
        key = _first_key(group, order)
        return oracle_text(tools[key], servers[key[0]])

    out: list[tuple[str, ...]] = []
    for q in queries:
        if planner == "whole":
            out.append(tuple(q.text for _ in q.groups))
            continue
        needs = [need(g) for g in q.groups]
        if planner == "oracle":
            out.append(tuple(needs))
            continue
        if planner == "clauses":
            parts = split_intents(q.text) or [q.text]
        else:
            subtasks, _ = llm_stages.functional_subtasks(llm, q.text)
            parts = [llm_stages.subtask_text(s) for s in subtasks] or [q.text]
        if len(parts) == 1 or not needs:
            out.append(tuple(parts[0] for _ in needs))
            continue
        if embed is None:
            raise ConfigError(f"the {planner} planner needs an embedder to match steps")
        vectors = embed([*needs, *parts])
        sims = vectors[: len(needs)] @ vectors[len(needs) :].T
        out.append(tuple(parts[c] for c in greedy_match(np.asarray(sims))))
    return out
