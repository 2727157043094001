"""Two-phase presentation of tools to the model.

This is the lazy schema loader of *Tool Attention Is All You Need: Dynamic Tool Gating and Lazy
Schema Loading for Eliminating the MCP/Tools Tax in Scalable Agentic Workflows* (Tool Attention
§4.4, Alg. 1 lines 5–6).

- **Phase 1, summary pool** (always resident, stable across turns → a cacheable prompt prefix,
  §5.6): one compact line per tool — or, beyond the paper, one line per *server* when the catalog
  is large (``pool="auto"`` switches above ``pool_limit`` tools, because a pool of several
  hundred tools alone costs more than the token budget the gateway aims at).
- **Phase 2, promoted schemas** (per turn): full JSON schemas of the top-k at or above θ only,
  pinned tools first (always visible, as Anthropic and FastMCP offer).

The promoted set exports as ready-to-bind OpenAI and Anthropic tool definitions: the integration
point of Adaptive Tool Routing §IV ("filter before the tools reach the system prompt"); a Python
agent loop gets the whole of Tool Attention's Alg. 1 from
:class:`toolroute.papers.tool_attention.agent_loop.ToolAttention`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from toolroute.catalog.candidate import Candidate
from toolroute.catalog.models import Catalog
from toolroute.catalog.name import qualified_name
from toolroute.index.document import _first_sentence
from toolroute.present.tokens import TokenCounter, tool_json
from toolroute.settings import DEFAULTS

__all__ = ["PresentConfig", "Presentation", "Presenter", "binding_name"]

_BIND_OK = re.compile(r"[^A-Za-z0-9_-]")


def binding_name(server: str, tool: str) -> str:
    """``server__tool`` made legal for OpenAI / Anthropic tool names (``[A-Za-z0-9_-]{1,64}``);
    a name that had to change or be cut gets a short hash of the original, so two different
    tools never bind to the same name."""
    raw = qualified_name(server, tool)
    name = _BIND_OK.sub("_", raw)
    if name != raw or len(name) > 64:  # changed or cut: hash the original to keep names apart
        digest = hashlib.sha256(raw.encode()).hexdigest()[:8]
        name = f"{name[:55]}_{digest}"
    return name


@dataclass(frozen=True, slots=True)
class PresentConfig:
    top_k: int = DEFAULTS.k
    """Schemas promoted per turn (Tool Attention's top-k)."""
    threshold: float | None = None
    """θ of Tool Attention eq. 7: candidates scoring below it are not promoted (None: none)."""
    pool: Literal["auto", "tools", "servers", "none"] = "auto"
    pool_limit: int = 150
    """With ``pool="auto"``: above this many tools the summary pool lists servers, not tools."""
    pinned: tuple[str, ...] = ()
    """``server__tool`` names always promoted, before the ranked ones."""
    summary_words: int = 12


@dataclass(frozen=True, slots=True)
class Presentation:
    """What the model sees this turn, and what it costs."""

    pool: str
    promoted: tuple[Candidate, ...]
    gated_out: tuple[tuple[str, str], ...]
    """(``server__tool``, reason) of candidates that were not promoted."""
    phase1_tokens: int
    phase2_tokens: int

    @property
    def tokens(self) -> int:
        return self.phase1_tokens + self.phase2_tokens

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(qualified_name(c.server, c.tool) for c in self.promoted)

    def prompt(self) -> str:
        """Stable pool first (cacheable prefix), then this turn's schemas."""
        schemas = "\n".join(
            tool_json(n, c.description, c.input_schema)
            for n, c in zip(self.names, self.promoted, strict=True)
        )
        return f"{self.pool}\n\n{schemas}" if self.pool else schemas

    def to_openai(self) -> list[dict[str, Any]]:
        return [
            {
                "type": "function",
                "function": {
                    "name": binding_name(c.server, c.tool),
                    "description": c.description,
                    "parameters": c.input_schema or {"type": "object", "properties": {}},
                },
            }
            for c in self.promoted
        ]

    def to_anthropic(self) -> list[dict[str, Any]]:
        return [
            {
                "name": binding_name(c.server, c.tool),
                "description": c.description,
                "input_schema": c.input_schema or {"type": "object", "properties": {}},
            }
            for c in self.promoted
        ]


class Presenter:
    """Renders phase 1 once per catalog and phase 2 per turn, counting real tokens."""

    def __init__(
        self,
        catalog: Catalog,
        config: PresentConfig | None = None,
        tokens: TokenCounter | None = None,
    ) -> None:
        self.catalog = catalog
        self.config = config or PresentConfig()
        self.tokens = tokens or TokenCounter()
        self.tools_by_name = {qualified_name(t.server, t.name): t for t in catalog.tools()}
        self.pool = self._render_pool()
        self._pool_tokens: int | None = None

    @property
    def pool_tokens(self) -> int:
        """Tokens of the summary pool, counted on first use: a gateway that never presents
        (pass-through) never loads the tokenizer (tens of MB resident)."""
        if self._pool_tokens is None:
            self._pool_tokens = self.tokens(self.pool) if self.pool else 0
        return self._pool_tokens

    def _render_pool(self) -> str:
        mode = self.config.pool
        if mode == "auto":
            mode = "servers" if self.catalog.tool_count > self.config.pool_limit else "tools"
        if mode == "none":
            return ""
        words = self.config.summary_words
        lines: list[str] = []
        if mode == "tools":
            lines.append("Tools (ask find_tools for any of them):")
            for name, t in sorted(self.tools_by_name.items()):
                lines.append(f"- {name}: {_short(t.description, words)}")
        else:
            lines.append("Servers (ask find_tools for their tools):")
            for s in sorted(self.catalog.servers, key=lambda s: s.id):
                about = _short(s.description, words) or ", ".join(t.name for t in s.tools[:4])
                lines.append(f"- {s.id} ({len(s.tools)} tools): {about}")
        return "\n".join(lines)

    def present(self, candidates: Sequence[Candidate], top_k: int | None = None) -> Presentation:
        """Filter (θ, top-k) the ranked candidates and promote their schemas, pinned first."""
        cfg = self.config
        promoted: list[Candidate] = []
        held: list[tuple[str, str]] = []
        seen: set[str] = set()
        for name in cfg.pinned:
            t = self.tools_by_name.get(name)
            if t is not None:
                promoted.append(
                    Candidate(t.server, t.name, 1.0, t.description, dict(t.input_schema))
                )
                seen.add(name)
        budget = cfg.top_k if top_k is None else top_k
        for c in candidates:
            name = qualified_name(c.server, c.tool)
            if name in seen:
                continue
            if cfg.threshold is not None and c.score < cfg.threshold:
                held.append((name, f"score {c.score:.3f} below threshold {cfg.threshold}"))
            elif budget <= 0:
                held.append((name, "beyond top-k"))
            else:
                promoted.append(c)
                seen.add(name)
                budget -= 1
        texts = [
            tool_json(qualified_name(c.server, c.tool), c.description, c.input_schema)
            for c in promoted
        ]
        return Presentation(
            pool=self.pool,
            promoted=tuple(promoted),
            gated_out=tuple(held),
            phase1_tokens=self.pool_tokens,
            phase2_tokens=sum(self.tokens.many(texts)) if texts else 0,
        )

    def full_schema_tokens(self) -> int:
        """Every tool's schema, as a naive MCP client sends them each turn (baseline B1)."""
        return sum(
            self.tokens.many(
                [tool_json(n, t.description, t.input_schema) for n, t in self.tools_by_name.items()]
            )
        )


def _short(text: str, words: int) -> str:
    first = _first_sentence(text, 300).split()
    return " ".join(first[:words]) + ("…" if len(first) > words else "")
