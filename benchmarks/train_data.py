"""Training data for toolroute's own models, rebuilt from public repository snapshots.

    python -m benchmarks.train_data --sources DIR [--out .toolroute/train-data] [--table]

``DIR`` holds bare git snapshots named ``owner+name/repo`` (the layout of the workplace's
repository mirror); files are read at ``HEAD`` with ``git show``, so the build is reproducible
from the commits printed in docs/training-data.md. Every source, its licence and its row counts
are listed there (``--table`` prints that table from a build).

What is built (JSON lines, one file per split):

- ``tools.jsonl``: every tool (intent) as a tool document ``server: name: description``, with
  its ``group`` (the siblings a near miss is drawn from) and ``key`` (the same operation under
  two service versions, e.g. SGD's Flights_1 / Flights_2, shares a key and is never a negative).
- ``train.jsonl`` / ``dev.jsonl``: ``{"query", "tool", "negative", "source"}`` — a request, the
  tool it needs, and a near miss: a sibling of the same service or domain doing another operation.
- ``oos_train.jsonl`` / ``oos_dev.jsonl``: requests no tool serves (CLINC's out-of-scope rows,
  HWU64's chit-chat), ``{"query", "source"}``.

The evaluation sets of ../shared/benchmarks (livemcpbench, mcpbench, union, tool_attention,
sealtools, metatool) are never read here: no request and no tool of them is trained on.
Dev rows come from the sources' own held-out splits (CLINC val, Banking77 test, HWU64 fold 10,
SGD dev), which the training rows never include.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import random
import re
import subprocess
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["SOURCES", "Build", "build", "sgd_intent_turns"]

# (snapshot folder, licence, what is read)
SOURCES: dict[str, tuple[str, str, str]] = {
    "sgd": (
        "google-research-datasets+dstc8-schema-guided-dialogue",
        "CC BY-SA 4.0",
        "train/dev schema.json + dialogues; SGD-X v1-v5 rewordings of the descriptions",
    ),
    "clinc": ("clinc+oos-eval", "CC BY 3.0", "data/data_full.json, data/domains.json"),
    "banking77": (
        "PolyAI-LDN+task-specific-datasets",
        "CC BY 4.0",
        "banking_data/train.csv, test.csv",
    ),
    "hwu64": (
        "xliuhw+NLU-Evaluation-Data",
        "CC BY 4.0",
        "CrossValidation/autoGeneFromRealAnno/*/KFold_*/testset (folds 1-9 train, 10 dev)",
    ),
}

PER_TOOL = {"sgd": 150, "clinc": 60, "banking77": 60, "hwu64": 60}
DEV_PER_TOOL = 8
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _words(identifier: str) -> str:
    return " ".join(_CAMEL.sub(" ", identifier).replace("_", " ").lower().split())


@dataclass
class Build:
    tools: dict[str, dict] = field(default_factory=dict)  # tool id -> record
    rows: dict[str, list[dict]] = field(default_factory=lambda: defaultdict(list))
    commits: dict[str, str] = field(default_factory=dict)

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
    ) -> None:
        text = f"{server}: {_words(name)}: {description}"
        alts = [f"{server}: {_words(name)}: {v}" for v in (variants or [])]
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

    def commit(self) -> str:
        return self._run("rev-parse", "HEAD").strip()

    def ls(self, prefix: str) -> list[str]:
        return self._run("ls-tree", "-r", "--name-only", "HEAD", prefix).split()

    def read(self, path: str) -> str:
        return self._run("show", f"HEAD:{path}")

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
        desc = f"{_words(intent).capitalize()}."
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


def build(sources: Path, seed: int = 13) -> Build:
    rng = random.Random(seed)
    b = Build()
    for name, fn in (("sgd", _sgd), ("clinc", _clinc), ("banking77", _banking), ("hwu64", _hwu)):
        repo = _Repo(sources, SOURCES[name][0])
        b.commits[name] = repo.commit()
        fn(b, repo, rng)
    _near_misses(b, rng)
    for rows in b.rows.values():
        rng.shuffle(rows)
    return b


def table(b: Build) -> str:
    lines = [
        "| source | snapshot | licence | tools | train pairs | dev pairs "
        "| no-tool train / dev | read |",
        "|---|---|---|---:|---:|---:|---:|---|",
    ]
    for name, (folder, licence, what) in SOURCES.items():
        n_tools = sum(1 for t in b.tools.values() if t["source"] == name)
        cnt = {s: sum(1 for r in b.rows[s] if r["source"] == name) for s in b.rows}
        lines.append(
            f"| {name} | {folder.replace('+', '/')} @{b.commits[name][:7]} | {licence} | {n_tools} "
            f"| {cnt.get('train', 0)} | {cnt.get('dev', 0)} "
            f"| {cnt.get('oos_train', 0)} / {cnt.get('oos_dev', 0)} | {what} |"
        )
    total = {s: len(r) for s, r in b.rows.items()}
    lines.append(
        f"| **all** | | | {len(b.tools)} | {total.get('train', 0)} | "
        f"{total.get('dev', 0)} | {total.get('oos_train', 0)} / "
        f"{total.get('oos_dev', 0)} | |"
    )
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sources", type=Path, required=True)
    ap.add_argument("--out", type=Path, default=Path(".toolroute/train-data"))
    ap.add_argument("--table", action="store_true", help="print the sources table (markdown)")
    ap.add_argument("--table-out", type=Path, default=None, help="also write the table here")
    args = ap.parse_args()
    b = build(args.sources)
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "tools.jsonl").open("w") as f:
        for t in b.tools.values():
            f.write(json.dumps(t) + "\n")
    for split, rows in b.rows.items():
        with (args.out / f"{split}.jsonl").open("w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    (args.out / "commits.json").write_text(json.dumps(b.commits, indent=1))
    print(table(b) if args.table else json.dumps({s: len(r) for s, r in b.rows.items()}))
    if args.table_out is not None:
        head = "# Training data sources\n\n`python -m benchmarks.train_data --sources DIR --table`"
        args.table_out.write_text(
            f"{head} (DIR: bare snapshots of the repositories below):\n\n" + table(b),
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
