"""The simulated world of the EHRR economics study (seed ``000_33cbc8800e6eb5c6.txt`` §V).

World, drawn per seed from ``numpy.random.SeedSequence(seed)`` (one spawned stream per quantity,
so one quantity's draws never shift another's), before any strategy routes a query:

    price p_ij    high tier ~ N(0.0225, 0.005²) truncated at 0 (negatives redrawn),
                  low tier ~ U(0, 0.0025) USD/call; tier by :func:`price_tier`   declared
    ask cost c_i  mean price of the server's tools (§V)                          declared
    connect G_i   ~ U(0.05, 0.6) s per server                                    declared
    success r_ij  ~ Beta(8, 2); 20 % of tools, "fragile", ~ U(0.1, 0.5)          hidden
    fail p_i      post-accept failure ~ Beta(1, 12); 15 % of servers, "flaky",
                  ~ U(0.2, 0.5)                                                  hidden
    latency l_ij  per-tool median ~ LogNormal(ln m, 0.5), m = 0.5 s low tier,
                  1.5 s high tier; each call draws l_ij · exp(0.25 Z)            hidden

The router sees the declared figures only (:meth:`World.catalog`); hidden ones drive outcomes.

Common random numbers: the draws of one call depend only on (seed, query index, group index,
tool key, attempt number) through a BLAKE2b-seeded Generator (:func:`call_outcome`), so every
strategy meets the same luck when it calls the same tool for the same need.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import numpy.typing as npt

from toolroute.catalog.models import Catalog, Tool, ToolKey
from toolroute.errors import ConfigError
from toolroute.stats import Outcome

__all__ = [
    "HIGH_TIER_PATTERNS",
    "Call",
    "World",
    "WorldParams",
    "call_outcome",
    "price_tier",
]

Floats = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]
Tier = Literal["low", "high"]


# -- price tiers (§V: "assigned to L or H based on its declared functionality") ----------------

HIGH_TIER_PATTERNS: Mapping[str, tuple[str, ...]] = {
    "web-search": (
        r"\bweb ?search",
        r"\bsearch engines?\b",
        r"\b(search|browse|browsing)\w* (the )?(web|internet|online)\b",
        r"\bgoogle (search|news|scholar|trends|lens)\b",
        r"\b(bing|duckduckgo|tavily|searxng|perplexity|serp\w*|exa search|brave search)\b",
        r"\bcrawl\w*",
        r"\bscrap(e|es|ed|er|ers|ing)\b",
        r"\bweb ?pages?\b",
        r"\bweb urls?\b",
        r"\bfrom (a |the )?(internet|web|websites?)\b",
        r"\b(fetch|crawl|scrape|open|read|browse|download)\w* (a |an |the )?(urls?|websites?)\b",
        "搜索引擎|网页|联网搜索|必应|百度|谷歌",
    ),
    "geo": (
        r"\bgeo(\b|cod|graph|locat|spatial|json)",
        r"\b(google|baidu|amap|gaode|apple|bing) maps?\b",
        r"\bmaps? (api|service|search|grounding)\b",
        r"\bopen ?street ?map\b",
        r"\b(osm|mapbox)\b",
        r"\b(latitude|longitude)\b",
        r"\b(route|driving|walking|transit|cycling) directions?\b",
        r"\bnearby\b",
        r"\bpoints? of interest\b",
        r"\bplaces? (search|api|details)\b",
        "地图|地理|经纬度|导航",
    ),
    "grounding": (r"\bground(ing|ed)\b",),
    "llm": (
        r"\b(openai|anthropic|gemini|claude|gpt ?\d\w*|chat ?gpt|llm) (api|models?)\b",
        r"\b(powered by|backed by|using|uses|via|calls?) (the |an? )?"
        r"(openai|anthropic|gemini|claude|gpt\w*|chat ?gpt|llms?|(large )?language models?)\b",
        r"\bllm (powered|based|backed)\b",
        r"\b(dall ?e|midjourney|stable diffusion)\b",
        r"\b(text|image|video|speech) generation\b",
        r"\bgenerat(e|es|ing) (an? )?(text|images?|videos?)\b",
        r"\btext to (image|speech|video)\b",
        r"\bai (powered|generated)\b",
    ),
}
"""Keyword patterns of the high-complexity tier H (seed 000 §V: web search, geospatial grounding)
plus grounding and LLM-backed tools, matched against the normalised text of
:func:`price_tier`. Bare "search", "map", "location" and "google" are left out on purpose: local
file, note or icon search, "Valorant maps" and Google Sheets are not grounding services, and a
mere mention of an LLM (as the client) does not make a tool LLM-backed."""

_HIGH_TIER = tuple(re.compile(p) for ps in HIGH_TIER_PATTERNS.values() for p in ps)


def _normalise(text: str) -> str:
    text = re.sub(r"([a-z0-9])([A-Z][a-z])", r"\1 \2", text)  # getBaziDetail, not OpenAI
    text = re.sub(r"[\W_]+", " ", text.lower())  # punctuation, "_" and "-" → one space
    return f" {text.strip()} "


def price_tier(tool: Tool, server_name: str) -> Tier:
    """Price tier of a tool from its declared function (seed 000 §V): ``"high"`` when its name,
    description or server name matches :data:`HIGH_TIER_PATTERNS`, else ``"low"``."""
    text = _normalise(f"{server_name} {tool.name} {tool.description}")
    return "high" if any(p.search(text) for p in _HIGH_TIER) else "low"


# -- the world ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WorldParams:
    """Distributions of the world (seed 000 §V prices; the rest documented in the module)."""

    high_price_mean: float = 0.0225
    high_price_sd: float = 0.005
    low_price_max: float = 0.0025
    success_beta: tuple[float, float] = (8.0, 2.0)
    fragile_share: float = 0.20
    fragile_success: tuple[float, float] = (0.1, 0.5)
    fail_beta: tuple[float, float] = (1.0, 12.0)
    flaky_share: float = 0.15
    flaky_fail: tuple[float, float] = (0.2, 0.5)
    latency_median_low_s: float = 0.5
    latency_median_high_s: float = 1.5
    latency_sigma: float = 0.5
    call_jitter_sigma: float = 0.25
    connect_s: tuple[float, float] = (0.05, 0.6)


def _pick(rng: np.random.Generator, size: int, share: float) -> Bools:
    """Exactly round(share · size) members, chosen uniformly."""
    out = np.zeros(size, dtype=bool)
    out[rng.choice(size, size=round(share * size), replace=False)] = True
    return out


@dataclass(frozen=True, slots=True, eq=False)
class World:
    """One seeded world over a catalog: declared prices/connect times and hidden behaviour.

    Tool arrays follow catalog order (server order, then tool order); server arrays follow
    server order. Draw it with :meth:`draw`; it never changes afterwards.
    """

    seed: int
    params: WorldParams
    keys: tuple[ToolKey, ...]
    server_ids: tuple[str, ...]
    server_of: npt.NDArray[np.int64]
    high_tier: Bools
    price: Floats
    success: Floats
    fragile: Bools
    latency_s: Floats
    """Hidden median call latency of each tool (s), connect time excluded."""
    fail_prob: Floats
    flaky: Bools
    connect_s: Floats
    ask_cost: Floats

    def __post_init__(self) -> None:
        for name in ("server_of", "high_tier", "price", "success", "fragile", "latency_s"):
            getattr(self, name).setflags(write=False)  # frozen means the arrays too
        for name in ("fail_prob", "flaky", "connect_s", "ask_cost"):
            getattr(self, name).setflags(write=False)

    @classmethod
    def draw(cls, catalog: Catalog, seed: int, params: WorldParams | None = None) -> World:
        p = params or WorldParams()
        tools = list(catalog.tools())
        n, m = len(tools), len(catalog.servers)
        if n == 0:
            raise ConfigError("cannot simulate a catalog with no tools")
        pos = {s.id: i for i, s in enumerate(catalog.servers)}
        server_of = np.array([pos[t.server] for t in tools], dtype=np.int64)
        names = {s.id: s.name for s in catalog.servers}
        high = np.array([price_tier(t, names[t.server]) == "high" for t in tools], dtype=bool)
        prices_rng, success_rng, fail_rng, latency_rng, connect_rng = (
            np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(5)
        )

        low_price = prices_rng.uniform(0.0, p.low_price_max, n)
        high_price = prices_rng.normal(p.high_price_mean, p.high_price_sd, n)
        while (neg := high_price < 0.0).any():  # truncation at 0 by rejection
            high_price[neg] = prices_rng.normal(p.high_price_mean, p.high_price_sd, int(neg.sum()))
        price = np.where(high, high_price, low_price)

        fragile = _pick(success_rng, n, p.fragile_share)
        success = np.where(
            fragile,
            success_rng.uniform(*p.fragile_success, n),
            success_rng.beta(*p.success_beta, n),
        )
        flaky = _pick(fail_rng, m, p.flaky_share)
        fail = np.where(flaky, fail_rng.uniform(*p.flaky_fail, m), fail_rng.beta(*p.fail_beta, m))
        median = np.where(high, p.latency_median_high_s, p.latency_median_low_s)
        latency = median * np.exp(p.latency_sigma * latency_rng.standard_normal(n))
        connect = connect_rng.uniform(*p.connect_s, m)
        tools_of = np.bincount(server_of, minlength=m)  # ask cost = mean tool price (§V)
        ask = np.bincount(server_of, weights=price, minlength=m) / np.maximum(tools_of, 1)
        return cls(
            seed=seed,
            params=p,
            keys=tuple(t.key for t in tools),
            server_ids=tuple(pos),
            server_of=server_of,
            high_tier=high,
            price=price,
            success=success,
            fragile=fragile,
            latency_s=latency,
            fail_prob=fail,
            flaky=flaky,
            connect_s=connect,
            ask_cost=ask,
        )

    def catalog(self, base: Catalog) -> Catalog:
        """The catalog the router sees: prices, ask costs and connect latencies injected;
        success rates, failure rates and tool latencies cleared (hidden), whatever ``base`` had.
        """
        if tuple(t.key for t in base.tools()) != self.keys:
            raise ConfigError("the catalog is not the one this world was drawn for")
        price = iter(self.price.tolist())
        servers = tuple(
            replace(
                s,
                tools=tuple(
                    replace(t, price=next(price), success_rate=None, latency_s=None)
                    for t in s.tools
                ),
                ask_cost=float(self.ask_cost[i]),
                connect_latency_s=float(self.connect_s[i]),
                failure_rate=None,
            )
            for i, s in enumerate(base.servers)
        )
        return Catalog(servers=servers)

    def index_of(self, key: ToolKey) -> int:
        return self.keys.index(key)


@dataclass(frozen=True, slots=True)
class Call:
    """One executed call in the world: what the agent observes and pays."""

    key: ToolKey
    success: bool
    server_failed: bool
    latency_s: float
    """Time the agent waited: the server's connect time G_i plus the call itself."""
    price: float
    call_latency_s: float
    """The call alone: what the router's statistics learn (eqs. 2 and 6 add G_i themselves)."""

    def outcome(self) -> Outcome:
        return Outcome(
            self.key[0], self.key[1], self.success, self.call_latency_s, self.server_failed
        )


def _crn_generator(
    seed: int, query: int, group: int, key: ToolKey, attempt: int
) -> np.random.Generator:
    payload = "\x1f".join(map(str, (seed, query, group, key[0], key[1], attempt)))
    digest = hashlib.blake2b(payload.encode("utf-8"), digest_size=16).digest()
    return np.random.default_rng(int.from_bytes(digest, "big"))


def call_outcome(
    world: World, query: int, group: int, key: ToolKey, attempt: int = 0, *, tool: int | None = None
) -> Call:
    """Execute ``key`` for (query, group) in ``world``, with common random numbers: the draws
    depend only on (seed, query, group, key, attempt), never on which strategy calls."""
    j = world.index_of(key) if tool is None else tool
    i = int(world.server_of[j])
    rng = _crn_generator(world.seed, query, group, key, attempt)
    u_server, u_tool = rng.random(2)
    jitter = math.exp(world.params.call_jitter_sigma * float(rng.standard_normal()))
    server_failed = bool(u_server < world.fail_prob[i])  # post-accept failure, drawn first
    success = not server_failed and bool(u_tool < world.success[j])
    call_latency = float(world.latency_s[j] * jitter)
    latency = float(world.connect_s[i]) + call_latency
    return Call(key, success, server_failed, latency, float(world.price[j]), call_latency)
