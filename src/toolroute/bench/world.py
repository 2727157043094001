"""The simulated world of the economics study (§V of *Clearing MCP Navigation Fog with
Economics-Aware Hierarchical Tool Routing*, EHRR).

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

Marketplace (:class:`Market`): with ``providers`` = V > 1, every server of the catalog
is offered by V competing vendors (:data:`VENDORS`): the same tools under a distinct server id
(``"<id>@<vendor>"``) and name (``"<name> (<Vendor>)"``), every description lightly and
deterministically perturbed (synonyms swapped per vendor, seeded by the vendor and the text, not
by the world seed) so that similarity cannot tell vendors apart reliably. Vendors are just more
servers to :meth:`World.draw`: each draws its own hidden success, post-accept failure and latency
and its own declared price from the distributions above, in the tier of the original tool (so
the vendors of one capability share a tier). Two price settings (``WorldParams.price_quality``):

    independent   price drawn independently of hidden quality (default)
    positive      paying more buys reliability: within each capability the vendors' prices are
                  re-assigned so that their order follows the order of hidden quality
                  q = (1 − p_i) r_ij perturbed by N(0, 0.1²) (rank correlation ≈ 0.7; the
                  realised one is :meth:`World.price_quality_correlation`). Marginal prices
                  are unchanged.

Two harder worlds, both drawn before any policy runs and from streams of their own,
so every other draw is the same with or without them:

    vendor correlation ρ   a vendor's server has a quality offset its tools share: on the
                  logit scale, z'_ij = μ + √(1−ρ)(z_ij − μ) + √ρ · s · u_i with u_i ~ N(0, 1)
                  per server (μ, s: mean and sd of z over tools), so two tools of one server
                  correlate by ρ and the marginal spread of success is kept (ρ = 0: the world above)
    outage A:B    one vendor, drawn per seed, is down for tasks A … B−1 of the stream: every
                  call to any of its servers fails (post-accept, nothing charged); with
                  ``providers`` = 1 the one vendor is every server

Never cheaper-is-better: that would hand an economics router its win for free. A query's group
is met by the tool of any vendor (:meth:`Market.queries`). V = 1 is the catalog itself, and the
world then is exactly the one above.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import numpy.typing as npt

from toolroute.catalog.loader import Query
from toolroute.catalog.models import Catalog, Server, Tool, ToolKey
from toolroute.errors import ConfigError
from toolroute.stats import Outcome

__all__ = [
    "HIGH_TIER_PATTERNS",
    "VENDORS",
    "Call",
    "Market",
    "PriceQuality",
    "World",
    "WorldParams",
    "call_outcome",
    "perturb",
    "price_tier",
]

Floats = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]
Tier = Literal["low", "high"]
PriceQuality = Literal["independent", "positive"]


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
"""Keyword patterns of the high-complexity tier H (EHRR §V: web search, geospatial grounding)
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
    """Price tier of a tool from its declared function (EHRR §V): ``"high"`` when its name,
    description or server name matches :data:`HIGH_TIER_PATTERNS`, else ``"low"``."""
    text = _normalise(f"{server_name} {tool.name} {tool.description}")
    return "high" if any(p.search(text) for p in _HIGH_TIER) else "low"


# -- the marketplace ----------------------------------------------------------------------------

VENDORS = ("Acme", "Globex", "Initech", "Umbrella", "Hooli", "Soylent", "Vandelay", "Wonka")
"""Vendor names of a marketplace, in order: ``providers`` = V takes the first V."""

_SYNONYMS: tuple[tuple[str, ...], ...] = (
    ("get", "retrieve", "fetch", "obtain"),
    ("gets", "retrieves", "fetches", "obtains"),
    ("create", "make", "generate", "produce"),
    ("creates", "makes", "generates", "produces"),
    ("list", "enumerate"),
    ("lists", "enumerates"),
    ("delete", "remove", "erase"),
    ("deletes", "removes", "erases"),
    ("update", "modify", "edit"),
    ("updates", "modifies", "edits"),
    ("return", "provide", "give"),
    ("returns", "provides", "gives"),
    ("information", "info", "details"),
    ("current", "latest"),
    ("using", "via", "with"),
    ("convert", "transform"),
    ("converts", "transforms"),
    ("add", "insert", "append"),
    ("adds", "inserts", "appends"),
    ("send", "deliver", "dispatch"),
    ("read", "load"),
    ("reads", "loads"),
    ("save", "store", "write"),
    ("specified", "given", "provided"),
    ("multiple", "several"),
    ("search", "find", "query"),
    ("searches", "finds", "queries"),
    ("allows", "lets", "enables"),
    ("tool", "function", "utility"),
    ("data", "records"),
    ("optional", "not required"),
    ("user", "caller"),
)
"""Word groups a vendor may swap within: the same function, said a little differently."""
_SYNONYM_OF = {w: g for g in _SYNONYMS for w in g}
_WORD = re.compile(r"[A-Za-z]+")


def perturb(text: str, vendor: str, share: float = 0.5) -> str:
    """``text`` as ``vendor`` words it: each word of :data:`_SYNONYMS` is swapped, with
    probability ``share``, for another of its group (capitalisation kept). Deterministic in
    (vendor, text); the meaning and every other word stay."""
    digest = hashlib.blake2b(f"{vendor}\x1f{text}".encode(), digest_size=16).digest()
    rng = np.random.default_rng(int.from_bytes(digest, "big"))

    def swap(m: re.Match[str]) -> str:
        word = m.group(0)
        group = _SYNONYM_OF.get(word.lower())
        if group is None or rng.random() >= share:
            return word
        others = [w for w in group if w != word.lower()]
        new = others[int(rng.integers(len(others)))]
        return new[:1].upper() + new[1:] if word[:1].isupper() else new

    return _WORD.sub(swap, text)


@dataclass(frozen=True, slots=True, eq=False)
class Market:
    """A catalog whose every server is offered by ``providers`` vendors (module docstring).

    ``catalog`` lists, server by server, the vendors' copies; ``capability[j]`` is the index in
    ``base`` of the tool that market tool ``j`` sells and ``vendor[j]`` its vendor's index.
    """

    base: Catalog
    providers: int
    catalog: Catalog
    capability: npt.NDArray[np.int64]
    vendor: npt.NDArray[np.int64]
    keys: tuple[ToolKey, ...]

    @classmethod
    def build(cls, base: Catalog, providers: int = 3) -> Market:
        if not 1 <= providers <= len(VENDORS):
            raise ConfigError(f"providers must be between 1 and {len(VENDORS)}, got {providers}")
        n = base.tool_count
        if providers == 1:
            keys = tuple(t.key for t in base.tools())
            zeros = np.zeros(n, dtype=np.int64)
            return cls(base, 1, base, np.arange(n, dtype=np.int64), zeros, keys)
        servers: list[Server] = []
        capability: list[int] = []
        vendor: list[int] = []
        first = 0
        for s in base.servers:
            for v, name in enumerate(VENDORS[:providers]):
                sid = f"{s.id}@{name.lower()}"
                tools = tuple(
                    replace(t, server=sid, description=perturb(t.description, name))
                    for t in s.tools
                )
                servers.append(
                    replace(
                        s,
                        id=sid,
                        name=f"{s.name} ({name})",
                        description=perturb(s.description, name),
                        tools=tools,
                    )
                )
                capability.extend(range(first, first + len(s.tools)))
                vendor.extend([v] * len(s.tools))
            first += len(s.tools)
        catalog = Catalog(servers=tuple(servers))
        return cls(
            base,
            providers,
            catalog,
            np.array(capability, dtype=np.int64),
            np.array(vendor, dtype=np.int64),
            tuple(t.key for t in catalog.tools()),
        )

    def offers(self) -> dict[ToolKey, frozenset[ToolKey]]:
        """For every original tool, the market tools of all its vendors."""
        base_keys = [t.key for t in self.base.tools()]
        out: dict[ToolKey, set[ToolKey]] = {k: set() for k in base_keys}
        for key, c in zip(self.keys, self.capability.tolist(), strict=True):
            out[base_keys[c]].add(key)
        return {k: frozenset(v) for k, v in out.items()}

    def queries(self, queries: Sequence[Query]) -> list[Query]:
        """``queries`` over the market: a group is met by its tools from any vendor."""
        if self.providers == 1:
            return list(queries)
        offers = self.offers()
        return [
            replace(q, groups=tuple(frozenset().union(*(offers[k] for k in g)) for g in q.groups))
            for q in queries
        ]


# -- the world ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WorldParams:
    """Distributions of the world (EHRR §V prices; the rest documented in the module)."""

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
    price_quality: PriceQuality = "independent"
    """How a vendor's declared price relates to its hidden quality (module docstring)."""
    quality_noise: float = 0.1
    """σ of the noise on hidden quality when prices follow it (``price_quality="positive"``)."""
    vendor_correlation: float = 0.0
    """ρ: correlation of hidden success between two tools of one server (module docstring)."""
    outage: tuple[int, int] | None = None
    """(A, B): one vendor's servers fail every call in tasks A … B−1 of the stream."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.vendor_correlation <= 1.0:
            raise ConfigError(
                f"vendor correlation must be in [0, 1], got {self.vendor_correlation}"
            )
        if self.outage is not None and not 0 <= self.outage[0] < self.outage[1]:
            raise ConfigError(f"an outage must be A:B with 0 <= A < B, got {self.outage}")


def _capability_members(capability: npt.NDArray[np.int64]) -> list[npt.NDArray[np.int64]]:
    order = np.argsort(capability, kind="stable")
    cuts = np.flatnonzero(np.diff(capability[order])) + 1
    return [m for m in np.split(order, cuts) if len(m)]


def _prices_follow(price: Floats, quality: Floats, capability: npt.NDArray[np.int64]) -> Floats:
    """Re-assign each capability's prices among its vendors in the order of ``quality``:
    the cheapest goes to the lowest quality. The multiset of prices is unchanged."""
    out = price.copy()
    for members in _capability_members(capability):
        out[members[np.argsort(quality[members], kind="stable")]] = np.sort(price[members])
    return out


def _correlated(success: Floats, shift: Floats, rho: float) -> Floats:
    """``success`` with a shared offset per server (``shift``: one N(0, 1) per tool's server) on
    the logit scale: tools of a server correlate by ``rho``, mean and spread kept."""
    z = np.log(success) - np.log1p(-success)  # success is in (0, 1): Beta and U(0.1, 0.5)
    mu, sd = float(z.mean()), float(z.std())
    z = mu + math.sqrt(1.0 - rho) * (z - mu) + math.sqrt(rho) * sd * shift
    out: Floats = 1.0 / (1.0 + np.exp(-z))
    return out


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
    capability: npt.NDArray[np.int64]
    """Per tool, the index of the original tool it sells (its own index without a market)."""
    down: frozenset[int] = frozenset()
    """Servers (indices) that fail every call during ``params.outage``."""
    down_vendor: str | None = None
    """The vendor whose servers are :attr:`down` (None: no outage)."""

    def __post_init__(self) -> None:
        for name in ("server_of", "high_tier", "price", "success", "fragile", "latency_s"):
            getattr(self, name).setflags(write=False)  # frozen means the arrays too
        for name in ("fail_prob", "flaky", "connect_s", "ask_cost", "capability"):
            getattr(self, name).setflags(write=False)

    @classmethod
    def draw(
        cls,
        catalog: Catalog,
        seed: int,
        params: WorldParams | None = None,
        market: Market | None = None,
    ) -> World:
        """Draw the world of ``seed`` over ``catalog`` (with ``market``, its vendors' catalog:
        tiers then come from the original tools, so the vendors of a capability share one)."""
        p = params or WorldParams()
        tools = list(catalog.tools())
        n, m = len(tools), len(catalog.servers)
        if n == 0:
            raise ConfigError("cannot simulate a catalog with no tools")
        pos = {s.id: i for i, s in enumerate(catalog.servers)}
        server_of = np.array([pos[t.server] for t in tools], dtype=np.int64)
        if market is not None:
            if market.catalog is not catalog and market.keys != tuple(t.key for t in tools):
                raise ConfigError("the catalog is not the market's")
            capability = market.capability
            base_names = {s.id: s.name for s in market.base.servers}
            base_high = np.array(
                [price_tier(t, base_names[t.server]) == "high" for t in market.base.tools()],
                dtype=bool,
            )
            high = base_high[capability]
        else:
            capability = np.arange(n, dtype=np.int64)
            names = {s.id: s.name for s in catalog.servers}
            high = np.array([price_tier(t, names[t.server]) == "high" for t in tools], dtype=bool)
        prices_rng, success_rng, fail_rng, latency_rng, connect_rng = (
            np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(5)
        )

        low_price = prices_rng.uniform(0.0, p.low_price_max, n)
        high_price = prices_rng.normal(p.high_price_mean, p.high_price_sd, n)
        while (neg := high_price < 0.0).any():  # truncation at 0 by rejection
            high_price[neg] = prices_rng.normal(p.high_price_mean, p.high_price_sd, int(neg.sum()))
        price: Floats = np.where(high, high_price, low_price)

        fragile = _pick(success_rng, n, p.fragile_share)
        success = np.where(
            fragile,
            success_rng.uniform(*p.fragile_success, n),
            success_rng.beta(*p.success_beta, n),
        )
        if p.vendor_correlation > 0.0:
            # A seventh stream: the draws above and below never move with ρ.
            vendor_rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(7)[6])
            shift = vendor_rng.standard_normal(m)[server_of]
            success = _correlated(success, shift, p.vendor_correlation)
        flaky = _pick(fail_rng, m, p.flaky_share)
        fail = np.where(flaky, fail_rng.uniform(*p.flaky_fail, m), fail_rng.beta(*p.fail_beta, m))
        median = np.where(high, p.latency_median_high_s, p.latency_median_low_s)
        latency = median * np.exp(p.latency_sigma * latency_rng.standard_normal(n))
        connect = connect_rng.uniform(*p.connect_s, m)
        if p.price_quality == "positive":
            # A sixth stream: the five above draw exactly what they draw without it.
            quality_rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(6)[5])
            noisy = (1.0 - fail[server_of]) * success
            noisy = noisy + p.quality_noise * quality_rng.standard_normal(n)
            price = _prices_follow(price, noisy, capability)
        down: frozenset[int] = frozenset()
        down_vendor = None
        if p.outage is not None:
            # An eighth stream: which vendor goes down depends on the seed alone.
            outage_rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(8)[7])
            vendor_of = np.zeros(m, dtype=np.int64)
            if market is not None:
                vendor_of[server_of] = market.vendor
            providers = market.providers if market is not None else 1
            v = int(outage_rng.integers(providers))
            down = frozenset(np.flatnonzero(vendor_of == v).tolist())
            down_vendor = VENDORS[v] if market is not None and providers > 1 else "every server"
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
            capability=capability,
            down=down,
            down_vendor=down_vendor,
        )

    def is_down(self, server: int, task: int) -> bool:
        """Whether ``server`` fails every call at position ``task`` of the stream (outage)."""
        span = self.params.outage
        return span is not None and span[0] <= task < span[1] and server in self.down

    @property
    def attempt_success(self) -> Floats:
        """Hidden success probability of one call of each tool, (1 − p_i) r_ij."""
        out: Floats = (1.0 - self.fail_prob[self.server_of]) * self.success
        return out

    def price_quality_correlation(self) -> float | None:
        """Mean, over capabilities sold by several vendors, of the Spearman correlation of
        the vendors' prices with their hidden attempt success; None without such a capability.
        """
        q = self.attempt_success
        rhos = []
        for members in _capability_members(self.capability):
            if len(members) < 2:
                continue
            a = np.argsort(np.argsort(self.price[members])).astype(np.float64)
            b = np.argsort(np.argsort(q[members])).astype(np.float64)
            rhos.append(float(np.corrcoef(a, b)[0, 1]))
        return float(np.mean(rhos)) if rhos else None

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
    depend only on (seed, query, group, key, attempt), never on which strategy calls.
    ``query`` is the task's position in the stream: a server down then (:meth:`World.is_down`)
    fails the call and charges nothing; the draws are made all the same."""
    j = world.index_of(key) if tool is None else tool
    i = int(world.server_of[j])
    rng = _crn_generator(world.seed, query, group, key, attempt)
    u_server, u_tool = rng.random(2)
    jitter = math.exp(world.params.call_jitter_sigma * float(rng.standard_normal()))
    server_failed = bool(u_server < world.fail_prob[i])  # post-accept failure, drawn first
    success = not server_failed and bool(u_tool < world.success[j])
    call_latency = float(world.latency_s[j] * jitter)
    latency = float(world.connect_s[i]) + call_latency
    if world.is_down(i, query):
        return Call(key, False, True, latency, 0.0, call_latency)
    return Call(key, success, server_failed, latency, float(world.price[j]), call_latency)
