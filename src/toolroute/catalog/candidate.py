"""A routed tool: what every stage after routing (presenter, gateway, benchmarks) passes on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Candidate"]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A routed tool, ready to bind: identity, score, and the schema the agent needs."""

    server: str
    tool: str
    score: float
    description: str
    input_schema: dict[str, Any] = field(hash=False, compare=False)

    def to_dict(self, *, full: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "server": self.server,
            "tool": self.tool,
            "score": round(self.score, 6),
        }
        if full:
            out["description"] = self.description
            out["input_schema"] = self.input_schema
        return out
