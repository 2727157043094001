"""The tool-style training sources of benchmarks/train_data.py: API-Bank's dialogues and API
records, and the MCP reference servers' tool definitions, read from their source code.

The MCP reference servers define their tools in TypeScript or Python, not in a listing file,
so the definitions are read from the source text: each ``name``/``description`` pair that is
followed by an ``inputSchema`` (a literal ``properties`` object, a zod schema passed to
``zodToJsonSchema``, or a pydantic model's ``schema()``), with enum members resolved to their
string values. Only what a tool document needs is read: name, description, parameter names.
"""

from __future__ import annotations

import ast
import hashlib
import json
import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from benchmarks.train_data import Build, _Repo

__all__ = [
    "McpTool",
    "apibank",
    "apibank_dialogue",
    "apibank_lv3",
    "apibank_module_api",
    "mcp_servers",
    "mcp_tools",
    "norm",
    "sibling_near_misses",
    "words",
]

CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_STEM = re.compile(r"(?<=\w{3})(?:es|s)$")  # issues -> issue, not bus -> bu


def words(identifier: str) -> str:
    return " ".join(CAMEL.sub(" ", identifier).replace("_", " ").lower().split())


def norm(text: str) -> str:
    """Lower-case words and digits only: what two texts are compared by."""
    return " ".join(re.sub(r"[^a-z0-9]+", " ", CAMEL.sub(" ", text).lower()).split())


_IDENT = r"[A-Za-z_][\w.]*"
_STRING = r"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'"
_TOOL = re.compile(
    rf"\bname\s*[:=]\s*(?P<name>{_STRING}|{_IDENT})\s*,\s*description\s*[:=]\s*",
)
_NEXT_FIELD = re.compile(r"\s*,?\s*(?:inputSchema|input_schema)\s*[:=]")


@dataclass(frozen=True, slots=True)
class McpTool:
    server: str
    name: str
    description: str
    params: tuple[str, ...]


def _string_expr(text: str, i: int) -> tuple[str, int]:
    """The value of the string expression starting at ``i`` (literals joined by ``+``, by
    adjacency as Python allows, or in parentheses; triple quotes and template literals),
    and where it ends."""
    parts: list[str] = []
    depth = 0
    while True:
        while i < len(text) and text[i] in " \t\r\n+":
            i += 1
        if text.startswith("(", i):
            depth += 1
            i += 1
            continue
        if depth and text.startswith(")", i):
            depth -= 1
            i += 1
            continue
        m = re.match(r"[fr]?(\"\"\"|'''|\"|'|`)", text[i:])
        if not m:
            return "".join(parts), i
        quote = m.group(1)
        start = i + m.end()
        end = start
        while end < len(text) and not text.startswith(quote, end):
            end += 2 if text[end] == "\\" else 1
        raw = text[start:end]
        try:
            parts.append(ast.literal_eval(f'"""{raw}"""') if quote != "`" else raw)
        except (SyntaxError, ValueError):
            parts.append(raw)
        i = end + len(quote)


def _object_keys(text: str, i: int) -> tuple[list[str], list[str]]:
    """Top-level keys of the object literal whose ``{`` (or ``(``) is at ``i``, and the names
    spread into it (``...Name.shape``)."""
    keys: list[str] = []
    spreads: list[str] = []
    depth = 0
    at_key = False
    j = i
    while j < len(text):
        c = text[j]
        if c in "\"'`":
            end = j + 1
            while end < len(text) and text[end] != c:
                end += 2 if text[end] == "\\" else 1
            if depth == 1 and at_key and re.match(r"\s*:", text[end + 1 :]):
                keys.append(text[j + 1 : end])
            at_key = False
            j = end + 1
            continue
        if c in "{([":
            depth += 1
            at_key = depth == 1
        elif c in "})]":
            depth -= 1
            if depth == 0:
                break
        elif c == "," and depth == 1:
            at_key = True
        elif depth == 1 and at_key and not c.isspace():
            m = re.match(r"(\.\.\.(?P<spread>\w+)\.shape)|(?P<key>[A-Za-z_]\w*)\s*[:?]", text[j:])
            if m and m.group("spread"):
                spreads.append(m.group("spread"))
            elif m and m.group("key"):
                keys.append(m.group("key"))
            at_key = False
            if m:
                j += m.end()
                continue
        j += 1
    return keys, spreads


def _zod_keys(name: str, text: str, seen: frozenset[str] = frozenset()) -> list[str]:
    """Fields of the zod schema ``name`` defined in ``text`` (``z.object``, ``.extend``,
    ``...Other.shape``, ``Name = Other;``)."""
    if name in seen:
        return []
    m = re.search(
        rf"\b{re.escape(name)}\s*=\s*(?:(?P<base>\w+)\.extend|z\s*\.\s*object)\s*\(\s*\{{", text
    )
    inner = seen | {name}
    if not m:
        alias = re.search(rf"\b{re.escape(name)}\s*=\s*(\w+)\s*;", text)
        return _zod_keys(alias.group(1), text, inner) if alias else []
    keys, spreads = _object_keys(text, m.end() - 1)
    base = [*_zod_keys(m.group("base"), text, inner)] if m.group("base") else []
    for s in spreads:
        base += _zod_keys(s, text, inner)
    return list(dict.fromkeys([*base, *keys]))


def _pydantic_keys(name: str, text: str) -> list[str]:
    m = re.search(rf"^class {re.escape(name)}\(BaseModel\):\n((?:[ \t]+.*\n|\n)+)", text, re.M)
    if not m:
        return []
    return re.findall(r"^[ \t]+([a-z_]\w*)\s*:", m.group(1), re.M)


def _params(span: str, text: str) -> list[str]:
    m = re.search(r"[\"']?properties[\"']?\s*:\s*\{", span)
    if m:
        return _object_keys(span, m.end() - 1)[0]
    m = re.search(r"zodToJsonSchema\(\s*(?:\w+\.)?(\w+)", span)
    if m:
        return _zod_keys(m.group(1), text)
    m = re.search(r"(\w+)\.(?:model_json_schema|schema)\(\)", span)
    if m:
        return _pydantic_keys(m.group(1), text)
    return []


def _resolve(name: str, text: str) -> str | None:
    if name[:1] in "\"'":
        return str(ast.literal_eval(name))
    member = name.removesuffix(".value").split(".")[-1]
    m = re.search(rf"\b{re.escape(member)}\s*=\s*({_STRING})", text)
    return str(ast.literal_eval(m.group(1))) if m else None


def mcp_tools(server: str, files: dict[str, str]) -> list[McpTool]:
    """Every tool one server defines across its source ``files`` (path -> text), in order."""
    text = "\n".join(files.values())
    out: list[McpTool] = []
    for body in files.values():
        found = list(_TOOL.finditer(body))
        for k, m in enumerate(found):
            description, end = _string_expr(body, m.end())
            stop = found[k + 1].start() if k + 1 < len(found) else len(body)
            span = body[end:stop]
            if not _NEXT_FIELD.match(span) or not description.strip():
                continue  # a prompt, a resource or the server's own name: not a tool
            name = _resolve(m.group("name"), text)
            if name is None:
                continue
            out.append(McpTool(server, name, description, tuple(_params(span, text))))
    return out


def _literal(text: str) -> object:
    """A Python literal, or JSON's words where API-Bank writes them."""
    try:
        return ast.literal_eval(text)
    except (SyntaxError, ValueError):
        words = {"true": "True", "false": "False", "null": "None"}
        return ast.literal_eval(re.sub(r"\b(true|false|null)\b", lambda m: words[m[1]], text))


def apibank_lv3(rows: list[dict]) -> list[tuple[str, str, dict]]:
    """(the dialogue's request, a request, the API record it needs) of API-Bank's level-3
    training rows: the user's request for every API the dialogue called, and each tool-search
    query for the API it found. A record is the API as the dialogue shows it (name,
    description, input_parameters); an API called with no record shown is left out."""
    out: list[tuple[str, str, dict]] = []
    for r in rows:
        user = re.search(r"^User: (.*?)(?:TIME:.*)?$", r["input"], re.M)
        called = re.match(r"API-Request: \[(\w+)\(", r["output"])
        if not user or not called:
            continue
        request = user.group(1).strip()
        records: dict[str, dict] = {}
        for found in re.finditer(
            r"^API-Request: \[ToolSearcher\(keywords='(.*?)'\)\]->(\{.*\})$", r["input"], re.M
        ):
            try:
                rec = _literal(found.group(2))
            except (SyntaxError, ValueError):
                continue
            if isinstance(rec, dict) and "name" in rec:
                records[str(rec["name"])] = rec
                out.append((request, found.group(1), rec))
        if called.group(1) in records:
            out.append((request, request, records[called.group(1)]))
    return out


def apibank_dialogue(path: str, lines: list[dict]) -> tuple[str, str, list[str]] | None:
    """(first request, the API it asks for, the other APIs called) of one level-1/2 sample
    dialogue whose file names one API (``AddAgenda-level-1-1.jsonl``; the token lookup is a
    means, not a request) and calls it. Files naming several APIs are left out: their first
    request is not always for the first API called."""
    named = [a for a in path.rsplit("/", 1)[-1].split("-level-")[0].split("-") if a]
    asked = [a for a in named if a != "GetUserToken"]
    user = next((x["text"] for x in lines if x.get("role") == "User"), None)
    calls = [x.get("api_name") for x in lines if x.get("role") == "API"]
    if len(asked) != 1 or asked[0] not in calls or not user:
        return None
    others = [str(a) for a in dict.fromkeys(calls) if a not in (asked[0], "ToolSearcher")]
    return user, asked[0], others


def apibank_module_api(source: str) -> dict | None:
    """The API record (name, description, input_parameters) an ``apis/*.py`` module declares
    as class attributes."""
    tree = ast.parse(source)
    for node in tree.body:
        if not isinstance(node, ast.ClassDef) or node.name == "API":
            continue
        attrs: dict[str, object] = {}
        for stmt in node.body:
            if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
                try:
                    attrs[stmt.targets[0].id] = ast.literal_eval(stmt.value)
                except ValueError:
                    continue
        if isinstance(attrs.get("description"), str):
            return {
                "name": node.name,
                "description": attrs["description"],
                "input_parameters": attrs.get("input_parameters", {}),
            }
    return None


def _held_out(request: str, every: int = 8) -> bool:
    """Whether a request of a source with no split of its own is a dev request: one in
    ``every`` by a hash of its words, so that a request repeated anywhere lands on one side."""
    digest = hashlib.sha1(norm(request).encode()).hexdigest()
    return int(digest[:8], 16) % every == 0


def apibank(b: Build, repo: _Repo, rng: random.Random, rev: str) -> None:
    tids: dict[tuple[str, str], str] = {}

    def api(rec: dict, module: bool = False) -> str:
        """One tool per (name, description): level-3 dialogues describe the same API name
        differently (generated per dialogue); the same name shares a key, never a negative."""
        name, desc = str(rec["name"]), " ".join(str(rec.get("description", "")).split())
        if (name, desc) not in tids:
            n = sum(1 for other, _ in tids if other == name)
            tids[(name, desc)] = tid = f"apibank/{name}" + (f"~{n}" if n else "")
            params = rec.get("input_parameters")
            b.tool(
                tid,
                "api bank",
                name,
                desc,
                # level 1-2's APIs are one family (add / delete / modify / query an agenda);
                # level 3's were invented per dialogue, their names often synonyms: alone
                group="apibank/lv12" if module else f"apibank/{name}/{n}",
                key=f"apibank/{name}",
                source="apibank",
                params=list(params) if isinstance(params, dict) else None,
            )
        return tids[(name, desc)]

    modules = set()
    for p in repo.ls("api-bank/apis/"):
        rec = apibank_module_api(repo.read(p)) if p.endswith(".py") else None
        if rec is not None and rec["name"] not in ("ToolSearcher", "GetUserToken", "CheckToken"):
            modules.add(api(rec, module=True).removeprefix("apibank/"))
    lv3 = json.loads(repo.read("api-bank/training-data/lv3-train.json", rev))
    pairs = [(dialogue, q, api(rec)) for dialogue, q, rec in apibank_lv3(lv3)]
    called: dict[str, set[str]] = defaultdict(set)
    for dialogue, _, tid in pairs:
        called[dialogue].add(tid)
    for dialogue, q, tid in pairs:
        if q != dialogue:  # a search query: the dialogue's other APIs did the other steps
            b.siblings[q].update(called[dialogue] - {tid})
    for p in repo.ls("api-bank/lv1-lv2-samples/"):
        lines = [json.loads(x) for x in repo.read(p).splitlines() if x.strip()]
        found = apibank_dialogue(p, lines)
        asked = [tids[k] for k in tids if found and k[0] == found[1]]
        if found and asked:
            pairs.append((found[0], found[0], asked[0]))
            b.related[found[0]].update(tids[k] for k in tids if k[0] in found[2])
    _same_operations(b, [tid for (name, _), tid in tids.items() if name not in modules])
    split = {key: "dev" if _held_out(key[0]) else "train" for key in dict.fromkeys(pairs)}
    trained = {norm(q) for (_, q, _), target in split.items() if target == "train"}
    for (_, q, tid), target in split.items():
        if target == "train" or norm(q) not in trained:  # a search query two dialogues share
            b.rows[target].append({"query": q, "tool": tid, "source": "apibank"})


_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "api",
        "are",
        "as",
        "at",
        "based",
        "be",
        "by",
        "for",
        "from",
        "given",
        "in",
        "information",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "specific",
        "that",
        "the",
        "their",
        "this",
        "to",
        "user",
        "users",
        "which",
        "with",
    ]
)


def _content(text: str) -> set[str]:
    return {_STEM.sub("", w) for w in norm(text).split()} - _STOP


def _same_operations(b: Build, tids: list[str]) -> None:
    """Give one key to API-Bank's level-3 APIs that are one operation under two names (each
    dialogue invented its own: ``HospitalFinder``, ``NearestHospitalFinder``): a name word in
    common and descriptions sharing 60 % of their words or more, compared with the first API
    of each key (no chains). So they are never each other's negatives."""
    leaders: list[tuple[set[str], set[str], str]] = []
    for tid in tids:
        _, name, desc = b.origin[tid]
        mine = (_content(words(name)), _content(desc))
        for names, said, key in leaders:
            if names & mine[0] and len(said & mine[1]) >= 0.6 * len(said | mine[1]) > 0:
                b.tools[tid]["key"] = key
                break
        else:
            leaders.append((*mine, b.tools[tid]["key"]))


MCP_DEV_SERVERS = ("gitlab", "redis")  # held out whole: their tools are never trained on


def mcp_servers(b: Build, repo: _Repo, rng: random.Random, rev: str) -> None:
    for folder in sorted({p.split("/")[1] for p in repo.ls("src/", rev)}):
        files = {
            p: repo.read(p, rev)
            for p in repo.ls(f"src/{folder}/", rev)
            if p.endswith((".ts", ".py")) and "test" not in p.rsplit("/", 1)[-1]
        }
        server = folder.replace("-", " ")
        target = "dev" if folder in MCP_DEV_SERVERS else "train"
        for t in mcp_tools(server, files):
            tid = f"mcp_servers/{folder}/{t.name}"
            desc = " ".join(t.description.split())
            b.tool(
                tid,
                server,
                t.name,
                desc,
                group=f"mcp_servers/{folder}",
                key=tid,
                source="mcp_servers",
                params=list(t.params),
            )
            for q in dict.fromkeys(_mcp_requests(server, t.name, t.description, t.params)):
                b.rows[target].append({"query": q, "tool": tid, "source": "mcp_servers"})


def _mcp_requests(server: str, name: str, description: str, params: tuple[str, ...]) -> list[str]:
    """The two requests a tool with no requests gets: its description's first sentence, and
    its name (less the server's prefix) with up to three parameters by one fixed template."""
    first = re.split(r"(?<=[.!?])\s+|\n+", description.strip())[0].strip()
    said = words(name).split()
    lead = [w for w in server.split() if w != "server"]
    while said[1:] and said[0] in lead:  # slack_post_message -> post message
        said = said[1:]
    action = " ".join(said)
    named = [words(p) for p in params[:3]]
    if named:
        tail = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
        action += f" with {tail}"
    return [q for q in (first, action[:1].upper() + action[1:]) if q]


def _objects(name: str) -> set[str]:
    return {_STEM.sub("", w) for w in words(name).split()}


def sibling_near_misses(b: Build, rng: random.Random) -> None:
    """For tool-style sources: a sibling the request names (``b.siblings``), else the
    sibling of the same group (server) sharing the most name words with the tool (the same
    object, another operation: merge / get / list a pull request), else any tool of the
    source; never one with the same key nor one the same request needs."""
    objects = {tid: _objects(b.origin[tid][1]) for tid in b.tools}
    groups: dict[str, list[str]] = defaultdict(list)
    for tid, t in b.tools.items():
        groups[t["group"]].append(tid)
    common: dict[str, set[str]] = {}  # words most names of a group share (a prefix) tell nothing
    for g, ids in groups.items():
        counts = Counter(w for tid in ids for w in objects[tid])
        common[g] = {w for w, n in counts.items() if len(ids) > 2 and n > len(ids) / 2}
    needs: dict[str, set[str]] = defaultdict(set)
    for split in ("train", "dev"):
        for row in b.rows[split]:
            needs[row["query"]].add(row["tool"])
    for split in ("train", "dev"):
        for row in b.rows[split]:
            t = b.tools[row["tool"]]
            taken = needs[row["query"]] | b.related.get(row["query"], set())
            named = sorted(b.siblings.get(row["query"], ()))
            sib = [s for s in named if b.tools[s]["key"] != t["key"] and s not in taken]
            if sib:  # the request's own siblings (another step of its dialogue)
                row["negative"] = rng.choice(sib)
                continue
            sib = [
                s for s in groups[t["group"]] if b.tools[s]["key"] != t["key"] and s not in taken
            ]
            if not sib:  # a tool alone in its group: any tool of the source, at random
                others = [s for s in b.tools if b.tools[s]["key"] != t["key"] and s not in taken]
                row["negative"] = rng.choice(others)
                continue
            mine = objects[row["tool"]] - common[t["group"]]
            shared = {s: len(mine & objects[s]) for s in sib}
            best = max(shared.values())
            row["negative"] = rng.choice([s for s in sib if shared[s] == best])
