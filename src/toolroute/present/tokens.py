"""Token counting with a real tokenizer: cl100k_base offline via ``toktok-rs``.

Never bytes / 4. Counts are cached by text, so a stable summary pool is counted once.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from toolroute.errors import ToolrouteError

__all__ = ["TokenCounter", "tool_json"]

CountFn = Callable[[list[str]], list[int]]


def tool_json(name: str, description: str, input_schema: Mapping[str, Any]) -> str:
    """A tool as an MCP ``tools/list`` entry would send it (what a naive client injects)."""
    body = {"name": name, "description": description, "input_schema": input_schema}
    return json.dumps(body, ensure_ascii=False)


class TokenCounter:
    """cl100k tokens of texts; ``count`` may be injected (tests), else toktok-rs is loaded."""

    def __init__(self, count: CountFn | None = None, encoding: str = "cl100k_base") -> None:
        self._count = count
        self._encoding = encoding
        self._cache: dict[str, int] = {}

    def _counter(self) -> CountFn:
        if self._count is None:
            try:
                toktok = importlib.import_module("toktok")
            except ImportError:
                raise ToolrouteError(
                    "token counting needs the toktok-rs package (cl100k offline): "
                    "pip install toktok-rs"
                ) from None
            encoding = self._encoding

            def count(texts: list[str]) -> list[int]:
                return [int(x) for x in toktok.batch_count(texts, encoding)]

            self._count = count
        return self._count

    def many(self, texts: Sequence[str]) -> list[int]:
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            self._cache.update(zip(missing, self._counter()(missing), strict=True))
        return [self._cache[t] for t in texts]

    def __call__(self, text: str) -> int:
        return self.many([text])[0]
