"""Training data for toolroute's own models, rebuilt from public repository snapshots.

    python -m benchmarks.train_data --sources DIR [--out .toolroute/train-data] [--table]
        [--only a,b] [--skip a,b] [--evals ../shared/benchmarks]

``DIR`` holds bare git snapshots named ``owner+name/repo`` (the layout of the workplace's
repository mirror); files are read with ``git show`` at ``HEAD``, or at the commit a source
pins (``Source.pinned``: files its repository has since removed), so the build is
reproducible from the commits printed in docs/training-data.md. Every source, its licence and
its row counts are listed there (``--table`` prints that table from a build).

Two kinds of sources: intent sets (SGD, CLINC150, Banking77, HWU64: consumer requests and
their intents) and tool-style ones (API-Bank's requests and API records; the MCP reference
servers' tool definitions, which have no requests: each tool gets its description's first
sentence and a request made from its name and parameters by one template) and API-style ones
(NESTFUL, RestBench, ToolAlpaca's evaluation files: requests over small APIs, most needing
several operations; benchmarks/_api_sources.py).

What is built (JSON lines, one file per split):

- ``tools.jsonl``: every tool (intent) as a tool document ``server: name: description`` (and
  ``: parameter names`` where the source has them), with its ``group`` (the siblings a near
  miss is drawn from) and ``key`` (the same operation under two service versions, e.g. SGD's
  Flights_1 / Flights_2, shares a key and is never a negative).
- ``train.jsonl`` / ``dev.jsonl``: ``{"query", "tool", "negative", "source"}`` — a request, the
  tool it needs, and a near miss: a sibling of the same service or domain doing another operation;
  ``"also"``: the other tools a request needing several needs (never its negatives).
- ``oos_train.jsonl`` / ``oos_dev.jsonl``: requests no tool serves (CLINC's out-of-scope rows,
  HWU64's chit-chat), ``{"query", "source"}``.
- ``commits.json``: the commit of each snapshot (and ``name@pinned``: the commit read);
  ``left_out.json``: each tool the evaluation check took out, and why.

The evaluation sets of ../shared/benchmarks (livemcpbench, mcpbench, union, tool_attention,
sealtools, metatool) and this repository's own requests over them (benchmarks/in_scope,
out_of_scope, union_queries.jsonl) are read only to leave them out (``EvalSets``): no tool of
their catalogs and none of their requests is trained on; what was taken out is counted per
source in the table. Dev rows come from the sources' own held-out splits (CLINC val, Banking77
test, HWU64 fold 10, SGD dev), or, where a source has none, from a hash of the request
(API-Bank) or whole servers held out (the MCP servers' gitlab and redis).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import random
import re
import subprocess
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks._api_sources import nestful, restbench, toolalpaca
from benchmarks._tool_sources import apibank, mcp_servers, norm, sibling_near_misses, words

__all__ = ["SOURCES", "Build", "build", "sgd_intent_turns"]


@dataclass(frozen=True, slots=True)
class Source:
    folder: str  # the snapshot's folder under --sources: owner+name
    licence: str
    read: str  # what is read, for the table
    pinned: str = ""  # a commit read instead of HEAD (its files left HEAD), "" for HEAD only


APIBANK_LV3 = "1d76900822d9ecfcd6e9eb0ca64a073cb892b735"  # api-bank/training-data, since removed
MCP_SERVERS = "1f705677a930ec618b7a16d87d00cee7db747ff2"  # last commit before 13 were archived

SOURCES: dict[str, Source] = {
    "sgd": Source(
        "google-research-datasets+dstc8-schema-guided-dialogue",
        "CC BY-SA 4.0",
        "train/dev schema.json + dialogues; SGD-X v1-v5 rewordings of the descriptions",
    ),
    "clinc": Source("clinc+oos-eval", "CC BY 3.0", "data/data_full.json, data/domains.json"),
    "banking77": Source(
        "PolyAI-LDN+task-specific-datasets",
        "CC BY 4.0",
        "banking_data/train.csv, test.csv",
    ),
    "hwu64": Source(
        "xliuhw+NLU-Evaluation-Data",
        "CC BY 4.0",
        "CrossValidation/autoGeneFromRealAnno/*/KFold_*/testset (folds 1-9 train, 10 dev)",
    ),
    "apibank": Source(
        "AlibabaResearch+DAMO-ConvAI",
        "Apache-2.0",
        "api-bank/training-data/lv3-train.json at the pinned commit (the request, each API it "
        "called, each tool-search query and the API it found; lv1/lv2 training files are not in "
        "the snapshot); at HEAD apis/*.py and lv1-lv2-samples (the first request of each "
        "dialogue whose file names one API)",
        pinned=APIBANK_LV3,
    ),
    "mcp_servers": Source(
        "modelcontextprotocol+servers",
        "MIT",
        "src/*/ tool definitions (name, description, input schema) at the pinned commit; "
        "requests: the description's first sentence, and name + parameters by a template",
        pinned=MCP_SERVERS,
    ),
    "nestful": Source(
        "IBM+NESTFUL",
        "Apache-2.0",
        "data/executable/*, data/non-executable/non-executable-glaive-* (requests and the "
        "call sequences serving them; function specs)",
    ),
    "restbench": Source(
        "Yifan-Song793+RestGPT",
        "MIT",
        "datasets/{tmdb,spotify}.json (requests, solution operations); specs/*_oas.json",
    ),
    "toolalpaca": Source(
        "tangqiaoyu+ToolAlpaca",
        "Apache-2.0",
        "data/eval_simulated.json, eval_real.json (APIs, functions, instructions and the "
        "functions each calls; the training file is not in the snapshot)",
    ),
}
INTENT_SOURCES = ("sgd", "clinc", "banking77", "hwu64")  # one random stream, as first built

PER_TOOL = {"sgd": 150, "clinc": 60, "banking77": 60, "hwu64": 60}
DEV_PER_TOOL = 8


@dataclass
class Build:
    tools: dict[str, dict] = field(default_factory=dict)  # tool id -> record
    rows: dict[str, list[dict]] = field(default_factory=lambda: defaultdict(list))
    commits: dict[str, str] = field(default_factory=dict)
    # tool id -> (server, name, description) as the source wrote them: what the evaluation
    # check compares
    origin: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    # request -> tools it also needs beyond its rows' (never its near miss)
    related: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    # request -> the tools its near miss is drawn from first (tool-style sources)
    siblings: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    # source -> what the evaluation check dropped: reason -> count
    dropped: dict[str, dict[str, int]] = field(default_factory=lambda: defaultdict(dict))
    left_out: dict[str, str] = field(default_factory=dict)  # tool id -> why

    def tool(
        self,
        tid: str,
        server: str,
        name: str,
        description: str,
        group: str,
        key: str,
        source: str,
        variants: list[str] | None = None,
        params: list[str] | None = None,
    ) -> None:
        text = f"{server}: {words(name)}: {description}"
        if params:
            text += ": " + ", ".join(words(p) for p in params)
        alts = [f"{server}: {words(name)}: {v}" for v in (variants or [])]
        self.origin[tid] = (server, name, description)
        self.tools[tid] = {
            "id": tid,
            "text": text,
            "variants": alts,
            "group": group,
            "key": key,
            "source": source,
        }


class _Repo:
    def __init__(self, root: Path, folder: str) -> None:
        self.git = root / folder / "repo"
        if not self.git.is_dir():
            raise SystemExit(
                f"{self.git}: snapshot missing (fetch github:{folder.replace('+', '/')})"
            )

    def commit(self, rev: str = "HEAD") -> str:
        try:
            return self._run("rev-parse", "--verify", f"{rev}^{{commit}}").strip()
        except subprocess.CalledProcessError:
            raise SystemExit(f"{self.git}: commit {rev} is not in the snapshot") from None

    def ls(self, prefix: str, rev: str = "HEAD") -> list[str]:
        return self._run("ls-tree", "-r", "--name-only", rev, prefix).splitlines()

    def read(self, path: str, rev: str = "HEAD") -> str:
        return self._run("show", f"{rev}:{path}")

    def _run(self, *args: str) -> str:
        return subprocess.run(
            ["git", f"--git-dir={self.git}", *args], check=True, capture_output=True, text=True
        ).stdout


def _sgd(b: Build, repo: _Repo, rng: random.Random) -> None:
    for split, target in (("train", "train"), ("dev", "dev")):
        schema = json.loads(repo.read(f"{split}/schema.json"))
        variants: dict[tuple[str, int], list[str]] = defaultdict(list)
        for v in range(1, 6):
            try:
                sx = json.loads(repo.read(f"sgd_x/data/v{v}/{split}/schema.json"))
            except subprocess.CalledProcessError:
                continue
            for s_orig, s_x in zip(schema, sx, strict=False):
                for i, intent in enumerate(s_x["intents"]):
                    variants[(s_orig["service_name"], i)].append(intent["description"])
        for s in schema:
            svc = s["service_name"]
            domain = svc.split("_")[0]
            for i, intent in enumerate(s["intents"]):
                tid = f"sgd/{svc}/{intent['name']}"
                b.tool(
                    tid,
                    domain.lower(),
                    intent["name"],
                    intent["description"],
                    group=f"sgd/{svc}",
                    key=f"sgd/{domain}/{intent['name']}",
                    source="sgd",
                    variants=variants.get((svc, i)),
                )
        pairs: dict[str, list[str]] = defaultdict(list)
        for path in repo.ls(f"{split}/"):
            if not path.split("/")[-1].startswith("dialogues_"):
                continue
            try:
                dialogues = json.loads(repo.read(path))
            except (subprocess.CalledProcessError, json.JSONDecodeError):
                continue  # files of 4 MiB or more are not in the snapshot
            for service, intent, utterance in sgd_intent_turns(dialogues):
                pairs[f"sgd/{service}/{intent}"].append(utterance)
        cap = PER_TOOL["sgd"] if target == "train" else DEV_PER_TOOL
        for tid, qs in sorted(pairs.items()):
            rng.shuffle(qs)
            b.rows[target] += [{"query": q, "tool": tid, "source": "sgd"} for q in qs[:cap]]


def _intent_set(b: Build, source: str, server_of: dict[str, str]) -> None:
    for intent, server in server_of.items():
        desc = f"{words(intent).capitalize()}."
        b.tool(
            f"{source}/{intent}",
            server,
            intent,
            desc,
            group=f"{source}/{server}",
            key=f"{source}/{intent}",
            source=source,
        )


def _take(
    b: Build, target: str, source: str, rows: list[tuple[str, str]], cap: int, rng: random.Random
) -> None:
    by: dict[str, list[str]] = defaultdict(list)
    for q, intent in rows:
        by[intent].append(q)
    for intent, qs in sorted(by.items()):
        rng.shuffle(qs)
        b.rows[target] += [
            {"query": q, "tool": f"{source}/{intent}", "source": source} for q in qs[:cap]
        ]


def _clinc(b: Build, repo: _Repo, rng: random.Random) -> None:
    data = json.loads(repo.read("data/data_full.json"))
    domains = json.loads(repo.read("data/domains.json"))
    _intent_set(b, "clinc", {i: d for d, intents in domains.items() for i in intents})
    _take(b, "train", "clinc", [tuple(r) for r in data["train"]], PER_TOOL["clinc"], rng)
    _take(b, "dev", "clinc", [tuple(r) for r in data["val"]], DEV_PER_TOOL, rng)
    b.rows["oos_train"] += [{"query": q, "source": "clinc"} for q, _ in data["oos_train"]]
    b.rows["oos_dev"] += [{"query": q, "source": "clinc"} for q, _ in data["oos_val"]]


def _banking(b: Build, repo: _Repo, rng: random.Random) -> None:
    rows = {
        s: [
            (r["text"], r["category"])
            for r in csv.DictReader(io.StringIO(repo.read(f"banking_data/{s}.csv")))
        ]
        for s in ("train", "test")
    }
    _intent_set(b, "banking77", {i: "banking" for _, i in rows["train"]})
    _take(b, "train", "banking77", rows["train"], PER_TOOL["banking77"], rng)
    _take(b, "dev", "banking77", rows["test"], DEV_PER_TOOL, rng)


def _hwu(b: Build, repo: _Repo, rng: random.Random) -> None:
    rows: dict[str, list[tuple[str, str]]] = {"train": [], "dev": []}
    for path in repo.ls("CrossValidation/autoGeneFromRealAnno"):
        m = re.search(r"KFold_(\d+)/testset/annotated/", path)
        if not m:
            continue
        target = "dev" if m.group(1) == "10" else "train"
        for r in json.loads(repo.read(path))["test_data_annotation"]:
            rows[target].append((r["text"], r["intent"]))
    chit = {"train": "oos_train", "dev": "oos_dev"}
    for target, rs in rows.items():
        b.rows[chit[target]] += [
            {"query": q, "source": "hwu64"} for q, i in rs if i.startswith("general_")
        ]
        rows[target] = [(q, i) for q, i in rs if not i.startswith("general_")]
    _intent_set(b, "hwu64", {i: i.split("_")[0] for _, i in rows["train"]})
    _take(b, "train", "hwu64", rows["train"], PER_TOOL["hwu64"], rng)
    _take(b, "dev", "hwu64", rows["dev"], DEV_PER_TOOL, rng)


def _near_misses(b: Build, rng: random.Random) -> None:
    """A sibling of the same service or domain with another operation (never the same key)."""
    groups: dict[str, list[str]] = defaultdict(list)
    for tid, t in b.tools.items():
        groups[t["group"]].append(tid)
    by_source: dict[str, list[str]] = defaultdict(list)
    for tid, t in b.tools.items():
        by_source[t["source"]].append(tid)
    for split in ("train", "dev"):
        for row in b.rows[split]:
            t = b.tools[row["tool"]]
            sib = [s for s in groups[t["group"]] if b.tools[s]["key"] != t["key"]]
            if not sib:  # a one-intent service: a tool of the same source
                sib = [s for s in by_source[t["source"]] if b.tools[s]["key"] != t["key"]]
            row["negative"] = rng.choice(sib)


# ../shared beside the repo; TOOLROUTE_SHARED names it from a checkout elsewhere
REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TOOLROUTE_SHARED", REPO.parent / "shared")) / "benchmarks"
EVAL_SETS = ("livemcpbench", "mcpbench", "union", "tool_attention", "sealtools", "metatool")
# the repository's own requests over those catalogs
EVAL_QUERIES = ("benchmarks/in_scope", "benchmarks/out_of_scope", "benchmarks/union_queries.jsonl")


def _first(text: str) -> str:
    return norm(re.split(r"(?<=[.!?])\s+|\n+", text.strip())[0])


@dataclass
class EvalSets:
    """What of the evaluation sets no training row may hold. Their catalogs and requests are
    read only to leave them out:

    - a tool whose normalised name + description equals an evaluation tool's (``copy``);
    - a tool whose description's first sentence (six words or more) equals one of theirs
      under another name (``description``);
    - every tool of a server that has an evaluation server's name and shares half its tool
      names with it, three or more: the same server, reworded (``server``);
    - a request equal, normalised, to one of their requests (a row, not a tool: ``request``).
    """

    tools: set[str] = field(default_factory=set)
    firsts: set[str] = field(default_factory=set)
    servers: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    queries: set[str] = field(default_factory=set)

    @classmethod
    def load(cls, shared: Path = SHARED, repo: Path = REPO) -> EvalSets:
        ev = cls()
        for name in EVAL_SETS:
            path = shared / name / "catalog.json"
            if not path.is_file():
                raise SystemExit(f"{path}: missing; the evaluation sets must be left out")
            for server in json.loads(path.read_text(encoding="utf-8"))["servers"]:
                for t in server["tools"]:
                    ev.add_tool(server["id"].split("/")[-1], t["name"], t["description"])
                    ev.add_tool(server["name"], t["name"], t["description"])
            queries = shared / name / "queries.jsonl"
            files = [queries] if queries.is_file() else []
            ev.add_queries(files)
        for rel in EVAL_QUERIES:
            path = repo / rel
            ev.add_queries(sorted(path.glob("*.jsonl")) if path.is_dir() else [path])
        return ev

    def add_tool(self, server: str, name: str, description: str) -> None:
        self.tools.add(f"{norm(name)} | {norm(description)}")
        first = _first(description)
        if len(first.split()) >= 6:
            self.firsts.add(first)
        self.servers[norm(server).replace(" ", "")].add(norm(name))  # GitHub is github

    def add_queries(self, files: list[Path]) -> None:
        for f in files:
            for line in f.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    self.queries.add(norm(json.loads(line)["query"]))

    def drop(self, b: Build, sources: tuple[str, ...]) -> None:
        """Take out of ``b`` the tools and the requests of ``sources`` that the sets hold,
        counting them in ``b.dropped``; a row whose tool or near miss was taken out goes too."""
        by_server: dict[str, list[str]] = defaultdict(list)
        for tid, t in b.tools.items():
            if t["source"] in sources:
                by_server[norm(b.origin[tid][0]).replace(" ", "")].append(tid)
        gone: dict[str, str] = {}
        for server, tids in by_server.items():
            theirs = self.servers.get(server, set())
            names = {norm(b.origin[tid][1]) for tid in tids}
            shared = len(names & theirs)
            same = shared >= 3 and shared * 2 >= len(names)
            for tid in tids:
                _, name, desc = b.origin[tid]
                if f"{norm(name)} | {norm(desc)}" in self.tools:
                    gone[tid] = "copy"
                elif _first(desc) in self.firsts:
                    gone[tid] = "description"
                elif same:
                    gone[tid] = "server"
        for tid, why in gone.items():
            counts = b.dropped[b.tools.pop(tid)["source"]]
            counts[why] = counts.get(why, 0) + 1
        b.left_out.update(gone)
        for split, rows in b.rows.items():
            kept = []
            for r in rows:
                if r["source"] not in sources:
                    kept.append(r)
                elif norm(r["query"]) in self.queries:
                    counts = b.dropped[r["source"]]
                    counts["request"] = counts.get("request", 0) + 1
                elif r.get("tool") not in gone and r.get("negative") not in gone:
                    kept.append(r)
            b.rows[split] = kept


def _interleave(mine: list[dict], more: list[dict], rng: random.Random) -> list[dict]:
    """Both lists merged at random, each in its own order (so the rows already there keep
    theirs: adding a source changes no other source's rows)."""
    out: list[dict] = []
    i = j = 0
    while i < len(mine) or j < len(more):
        if j == len(more) or (
            i < len(mine) and rng.random() * (len(mine) - i + len(more) - j) < len(mine) - i
        ):
            out.append(mine[i])
            i += 1
        else:
            out.append(more[j])
            j += 1
    return out


TOOL_SOURCES = {
    "apibank": apibank,
    "mcp_servers": mcp_servers,
    "nestful": nestful,
    "restbench": restbench,
    "toolalpaca": toolalpaca,
}
INTENT_FNS = {"sgd": _sgd, "clinc": _clinc, "banking77": _banking, "hwu64": _hwu}


def build(
    sources: Path,
    evals: EvalSets,
    seed: int = 13,
    only: tuple[str, ...] = tuple(SOURCES),
    pins: dict[str, str] | None = None,
) -> Build:
    """The data of the ``only`` sources. The intent sources share one random stream (their
    rows are those of the first build, byte for byte, less what the evaluation check takes
    out after the draws); each tool-style source has its own,
    so that selecting sources changes no other tool-style source's rows. ``evals`` takes out
    what the evaluation sets hold; ``pins`` overrides the pinned commits (tests' fixture
    snapshots)."""
    rng = random.Random(seed)
    b = Build()
    intents = tuple(n for n in INTENT_SOURCES if n in only)
    for name in intents:
        repo = _Repo(sources, SOURCES[name].folder)
        b.commits[name] = repo.commit()
        INTENT_FNS[name](b, repo, rng)
    _near_misses(b, rng)
    for rows in b.rows.values():
        rng.shuffle(rows)
    evals.drop(b, intents)  # after the draws, so that every other row stays as first built
    for name, fn in TOOL_SOURCES.items():
        if name not in only:
            continue
        own = random.Random(f"{seed}:{name}")
        part = Build()
        repo = _Repo(sources, SOURCES[name].folder)
        pin = (pins or {}).get(name, SOURCES[name].pinned) or "HEAD"
        b.commits[name] = repo.commit()
        b.commits[f"{name}@pinned"] = repo.commit(pin)
        fn(part, repo, own, pin)
        evals.drop(part, (name,))
        sibling_near_misses(part, own)
        b.tools.update(part.tools)
        b.dropped.update(part.dropped)
        b.left_out.update(part.left_out)
        for q, tids in part.related.items():
            b.related[q] |= tids
        for split, rows in part.rows.items():
            own.shuffle(rows)
            b.rows[split] = _interleave(b.rows[split], rows, own)
    _mark_also(b)
    return b


def _mark_also(b: Build) -> None:
    """Give each row of a request that needs several tools the others (``also``, sorted,
    with what ``b.related`` adds): the trainer never shows them as its negatives."""
    for rows in (b.rows["train"], b.rows["dev"]):
        needs: dict[str, set[str]] = defaultdict(set)
        for r in rows:
            needs[r["query"]].add(r["tool"])
        for r in rows:
            also = (needs[r["query"]] | b.related.get(r["query"], set())) - {r["tool"]}
            if also:
                r["also"] = sorted(also)


def table(b: Build) -> str:
    lines = [
        "| source | snapshot | licence | tools | train pairs | dev pairs "
        "| no-tool train / dev | left out, in the evaluation sets: tools / requests | read |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for name, src in SOURCES.items():
        if name not in b.commits:
            continue  # not selected
        n_tools = sum(1 for t in b.tools.values() if t["source"] == name)
        cnt = {s: sum(1 for r in b.rows[s] if r["source"] == name) for s in b.rows}
        gone = b.dropped.get(name, {})
        tools_gone = sum(n for why, n in gone.items() if why != "request")
        snap = f"{src.folder.replace('+', '/')} @{b.commits[name][:7]}"
        if src.pinned:
            snap += f" (pinned @{b.commits[name + '@pinned'][:7]})"
        lines.append(
            f"| {name} | {snap} | {src.licence} | {n_tools} "
            f"| {cnt.get('train', 0)} | {cnt.get('dev', 0)} "
            f"| {cnt.get('oos_train', 0)} / {cnt.get('oos_dev', 0)} "
            f"| {tools_gone} / {gone.get('request', 0)} | {src.read} |"
        )
    total = {s: len(r) for s, r in b.rows.items()}
    all_gone = [n for g in b.dropped.values() for why, n in g.items() if why != "request"]
    requests_gone = sum(g.get("request", 0) for g in b.dropped.values())
    lines.append(
        f"| **all** | | | {len(b.tools)} | {total.get('train', 0)} | "
        f"{total.get('dev', 0)} | {total.get('oos_train', 0)} / "
        f"{total.get('oos_dev', 0)} | {sum(all_gone)} / {requests_gone} | |"
    )
    reasons = ("copy", "description", "server", "request")
    lines += [
        "",
        "Left out because the evaluation sets hold them (`EvalSets` in the script):",
        "",
        "| source | " + " | ".join(reasons) + " |",
        "|---|" + "---:|" * len(reasons),
    ]
    for name in SOURCES:
        if name in b.commits:
            gone = b.dropped.get(name, {})
            lines.append(f"| {name} | " + " | ".join(str(gone.get(r, 0)) for r in reasons) + " |")
    return "\n".join(lines) + "\n"


def sgd_intent_turns(dialogues: list[dict[str, Any]]) -> Iterator[tuple[str, str, str]]:
    """(service, intent, utterance) of each SGD user turn that opens a new active intent of
    its service: the request that asks for the intent, not the slot-filling turns after it."""
    for d in dialogues:
        active: dict[str, str] = {}
        for turn in d["turns"]:
            if turn["speaker"] != "USER":
                continue
            for fr in turn["frames"]:
                intent = fr["state"]["active_intent"]
                if intent != "NONE" and active.get(fr["service"]) != intent:
                    yield fr["service"], intent, turn["utterance"]
                active[fr["service"]] = intent


def _names(text: str) -> tuple[str, ...]:
    names = tuple(n for n in text.split(",") if n)
    unknown = [n for n in names if n not in SOURCES]
    if unknown:
        raise SystemExit(f"unknown source(s) {', '.join(unknown)}; known: {', '.join(SOURCES)}")
    return names


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sources", type=Path, required=True)
    ap.add_argument("--out", type=Path, default=Path(".toolroute/train-data"))
    ap.add_argument("--only", default=",".join(SOURCES), help="comma-separated sources to build")
    ap.add_argument("--skip", default="", help="comma-separated sources to leave out")
    ap.add_argument(
        "--evals", type=Path, default=SHARED, help="the evaluation sets, read to leave them out"
    )
    ap.add_argument("--table", action="store_true", help="print the sources table (markdown)")
    ap.add_argument("--table-out", type=Path, default=None, help="also write the table here")
    args = ap.parse_args()
    skip = _names(args.skip)
    only = tuple(n for n in _names(args.only) if n not in skip)
    b = build(args.sources, EvalSets.load(args.evals), only=only)
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "tools.jsonl").open("w") as f:
        for t in b.tools.values():
            f.write(json.dumps(t) + "\n")
    for split, rows in b.rows.items():
        with (args.out / f"{split}.jsonl").open("w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    (args.out / "commits.json").write_text(json.dumps(b.commits, indent=1))
    (args.out / "left_out.json").write_text(json.dumps(b.left_out, indent=1))
    print(table(b) if args.table else json.dumps({s: len(r) for s, r in b.rows.items()}))
    if args.table_out is not None:
        head = "# Training data sources\n\n`python -m benchmarks.train_data --sources DIR --table`"
        args.table_out.write_text(
            f"{head} (DIR: bare snapshots of the repositories below):\n\n" + table(b),
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
