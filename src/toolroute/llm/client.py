"""A small client for any OpenAI-compatible chat endpoint, for toolroute's optional LLM stages.

Contract: every call has a deadline and bounded retries, the answer must be JSON that passes a
JSON schema, and *any* failure (no endpoint, timeout, HTTP error, invalid JSON, schema
violation) returns the caller's deterministic fallback instead — the router stays fully useful
with no LLM. Answers are cached by prompt hash, in memory and (with ``cache_path``) in a SQLite
file that outlives the process; calls, tokens, latency and fallbacks are counted.

Configure with :meth:`LLMConfig.from_env` (``TOOLROUTE_LLM_BASE_URL``, ``TOOLROUTE_LLM_MODEL``,
``TOOLROUTE_LLM_API_KEY``) or explicitly.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import sqlite3
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import jsonschema

from toolroute.errors import ConfigError
from toolroute.store.base import open_private, private_dir

__all__ = [
    "AnswerCache",
    "ChatLLM",
    "LLMConfig",
    "LLMUsage",
    "Transport",
    "llm_cache_path",
    "prompt_text",
]

log = logging.getLogger(__name__)

T = TypeVar("T")
Transport = Callable[[str, dict[str, Any], dict[str, str], float], dict[str, Any]]
"""(url, JSON body, headers, timeout_s) → parsed JSON response; raises OSError-like on failure."""


@dataclass(frozen=True, slots=True)
class LLMConfig:
    base_url: str
    model: str
    api_key: str | None = None
    timeout_s: float = 20.0
    retries: int = 1
    max_tokens: int = 256

    @classmethod
    def from_env(cls) -> LLMConfig | None:
        """``TOOLROUTE_LLM_BASE_URL`` (None when unset), ``_MODEL``, ``_API_KEY`` and
        ``_TIMEOUT_S`` (seconds per request; default 20)."""
        url = os.environ.get("TOOLROUTE_LLM_BASE_URL")
        if not url:
            return None
        raw = os.environ.get("TOOLROUTE_LLM_TIMEOUT_S", "20")
        try:
            timeout = float(raw)
            if not timeout > 0:
                raise ValueError
        except ValueError:
            raise ConfigError(
                f"TOOLROUTE_LLM_TIMEOUT_S: expected seconds > 0, got {raw!r}"
            ) from None
        return cls(
            base_url=url,
            model=os.environ.get("TOOLROUTE_LLM_MODEL", "default"),
            api_key=os.environ.get("TOOLROUTE_LLM_API_KEY"),
            timeout_s=timeout,
        )


@dataclass(slots=True)
class LLMUsage:
    """The router's own LLM spend."""

    calls: int = 0
    cache_hits: int = 0
    fallbacks: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    last_error: str | None = None
    by_stage: dict[str, dict[str, float]] = field(default_factory=dict)
    """Per stage (decompose, select, …): requests, calls, seconds, tokens, fallbacks."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "fallbacks": self.fallbacks,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "latency_s": round(self.latency_s, 3),
            "by_stage": {k: dict(v) for k, v in self.by_stage.items()},
        }

    def _stage(self, stage: str) -> dict[str, float]:
        keys = ("requests", "calls", "latency_s", "prompt_tokens", "completion_tokens")
        return self.by_stage.setdefault(stage, dict.fromkeys((*keys, "fallbacks"), 0.0))


def _http(
    url: str, body: dict[str, Any], headers: dict[str, str], timeout: float
) -> dict[str, Any]:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers=headers, method="POST"
    )
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        out: dict[str, Any] = json.loads(resp.read())
        return out


_JSON_BLOCK = re.compile(r"\{.*\}", re.DOTALL)


PROMPT_CHARS = 1500
"""A request is clipped to this many characters in prompts, after long unbroken runs (base64,
hashes, minified data) are replaced: a pasted image must not overflow a small model's context."""
_BLOB = re.compile(r"\S{80,}")


def prompt_text(text: str) -> str:
    """``text`` as it goes into a prompt: blobs replaced by ``<data>``, then clipped."""
    text = _BLOB.sub("<data>", text)
    return text if len(text) <= PROMPT_CHARS else text[: PROMPT_CHARS - 1] + "…"


def llm_cache_path(store_dir: str | Path) -> Path:
    """Where a store keeps its LLM answers: beside its database, so one store, one cache."""
    return Path(store_dir) / "llm-cache.sqlite"


class AnswerCache:
    """Validated answers by prompt hash in a SQLite file (WAL; one row per answer).

    A prompt that was answered once is never sent again, across processes: a restarted gateway
    or a re-run benchmark pays only for new prompts. Failures to read or write the file are
    logged and treated as misses — the cache never breaks routing.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        private_dir(self.path.parent)
        if not self.path.exists():  # 0600 like the store's database (SQLite's -wal too)
            os.close(open_private(self.path, os.O_WRONLY))
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, answer TEXT NOT NULL)"
        )

    def get(self, key: str) -> Any | None:
        try:
            with self._lock:
                cur = self._db.execute("SELECT answer FROM answers WHERE key = ?", (key,))
                row = cur.fetchone()
            return None if row is None else json.loads(row[0])
        except (sqlite3.Error, ValueError) as e:
            log.warning("LLM answer cache %s unreadable: %s", self.path, e)
            return None

    def put(self, key: str, answer: Any) -> None:
        try:
            with self._lock:
                self._db.execute(
                    "INSERT OR REPLACE INTO answers (key, answer) VALUES (?, ?)",
                    (key, json.dumps(answer)),
                )
        except sqlite3.Error as e:
            log.warning("LLM answer cache %s not written: %s", self.path, e)

    def close(self) -> None:
        with self._lock:
            self._db.close()


class ChatLLM:
    """JSON-answering chat calls with deadline, retries, validation, cache and fallback."""

    def __init__(
        self,
        config: LLMConfig,
        transport: Transport | None = None,
        *,
        cache_path: str | Path | None = None,
    ) -> None:
        self.config = config
        self._transport = transport or _http
        self._cache: dict[str, Any] = {}
        self._disk = AnswerCache(cache_path) if cache_path is not None else None
        self._structured = True
        """Ask for schema-constrained output (``json_schema``: llama.cpp turns it into a grammar,
        so even a 0.5B model answers in shape); dropped after the endpoint refuses it once."""
        self.usage = LLMUsage()

    def json(
        self,
        stage: str,
        system: str,
        user: str,
        schema: Mapping[str, Any],
        fallback: Callable[[], T],
        *,
        max_tokens: int | None = None,
    ) -> tuple[Any, bool]:
        """(validated JSON answer, True) or (``fallback()``, False) on any failure.

        ``max_tokens`` bounds this answer (default: the config's); short answers are the main
        lever on a small local model's latency: on CPU output tokens cost far more than prompt
        tokens.
        """
        key = hashlib.sha256(
            json.dumps([self.config.model, stage, system, user, schema], sort_keys=True).encode()
        ).hexdigest()
        if key not in self._cache and self._disk is not None:
            stored = self._disk.get(key)
            if stored is not None:
                self._cache[key] = stored
        if key in self._cache:
            self.usage.cache_hits += 1
            return self._cache[key], True
        per = self.usage._stage(stage)
        per["requests"] += 1
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "temperature": 0,
            "max_tokens": max_tokens or self.config.max_tokens,
            "response_format": (
                {"type": "json_schema", "json_schema": {"name": stage, "schema": dict(schema)}}
                if self._structured
                else {"type": "json_object"}
            ),
        }
        headers = {"Content-Type": "application/json"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        url = self.config.base_url.rstrip("/") + "/chat/completions"
        error = "no attempt"
        attempts = 1 + max(0, self.config.retries)
        while attempts > 0:
            attempts -= 1
            start = time.perf_counter()
            timed = False
            try:
                self.usage.calls += 1
                per["calls"] += 1
                try:
                    resp = self._transport(url, body, headers, self.config.timeout_s)
                except urllib.error.HTTPError as e:
                    if e.code != 400 or body["response_format"]["type"] != "json_schema":
                        raise
                    # Maybe an endpoint without structured outputs: ask again in plain JSON
                    # mode, and stay there only if that works (a 400 for another reason, such
                    # as an over-long prompt, fails again and changes nothing).
                    plain = {**body, "response_format": {"type": "json_object"}}
                    resp = self._transport(url, plain, headers, self.config.timeout_s)
                    log.info("endpoint refused json_schema (%s); using json_object", e)
                    self._structured = False
                    body = plain
                self._spent(per, time.perf_counter() - start)
                timed = True
                usage = resp.get("usage") or {}
                for k in ("prompt_tokens", "completion_tokens"):
                    n = int(usage.get(k, 0))
                    setattr(self.usage, k, getattr(self.usage, k) + n)
                    per[k] += n
                content = resp["choices"][0]["message"]["content"]
                answer = _parse(content)
                jsonschema.validate(answer, dict(schema))
            except (
                OSError,
                urllib.error.URLError,
                TimeoutError,
                KeyError,
                IndexError,
                TypeError,
                ValueError,
                jsonschema.ValidationError,
            ) as e:
                if not timed:
                    self._spent(per, time.perf_counter() - start)
                error = f"{type(e).__name__}: {str(e)[:200]}"
                if isinstance(e, urllib.error.HTTPError):  # the endpoint says why (context, …)
                    error += f": {_body(e)}"
                continue
            self._cache[key] = answer
            if self._disk is not None:
                self._disk.put(key, answer)
            return answer, True
        self.usage.fallbacks += 1
        per["fallbacks"] += 1
        self.usage.last_error = error
        log.info("LLM stage %s fell back: %s", stage, error)
        return fallback(), False

    def _spent(self, per: dict[str, float], seconds: float) -> None:
        self.usage.latency_s += seconds
        per["latency_s"] += seconds


def _body(e: urllib.error.HTTPError) -> str:
    try:
        return e.read(300).decode("utf-8", "replace")
    except (OSError, AttributeError):
        return ""


def _parse(content: str) -> Any:
    """The JSON object in a model's answer (models sometimes wrap it in prose or fences)."""
    try:
        return json.loads(content)
    except json.JSONDecodeError:
        m = _JSON_BLOCK.search(content)
        if m is None:
            raise
        return json.loads(m.group(0))
