"""The API-style training sources of benchmarks/train_data.py: requests that name the API
operations they need, several per request, over small APIs that look like MCP servers.

- NESTFUL (IBM/NESTFUL): requests and the nested call sequences that serve them, over RapidAPI
  endpoints (executable) and Glaive-style functions (non-executable; its SGD part is left out,
  SGD being a source of its own).
- RestBench (Yifan-Song793/RestGPT): TMDB and Spotify requests with the REST operations of
  their solution; the operations' summaries and descriptions come from the OpenAPI specs.
- ToolAlpaca's evaluation files (tangqiaoyu/ToolAlpaca): 21 public APIs, their functions and
  the instructions written for them with the functions each one calls (its training file is
  not in the snapshot).

A request that needs several operations gets one row per operation; ``build`` marks each row
with the others (``also``), so the trainer never shows them as negatives. Requests are split
by a hash of their words (one in eight to dev), as API-Bank's are.
"""

from __future__ import annotations

import json
import random
import re
from typing import TYPE_CHECKING

from benchmarks._tool_sources import _held_out, words

if TYPE_CHECKING:
    from benchmarks.train_data import Build, _Repo

__all__ = ["nestful", "restbench", "toolalpaca"]


def _rows(b: Build, source: str, query: str, tids: list[str]) -> None:
    target = "dev" if _held_out(query) else "train"
    for tid in dict.fromkeys(tids):
        b.rows[target].append({"query": query, "tool": tid, "source": source})


def _first_line(text: str) -> str:
    return " ".join(text.strip().split("\n")[0].split())


NESTFUL_PARTS = (
    ("data/executable/executable-spec.json", "data/executable/executable-data.json", "rapidapi"),
    (
        "data/non-executable/non-executable-glaive-spec.json",
        "data/non-executable/non-executable-glaive-data.json",
        "glaive",
    ),
)


def nestful(b: Build, repo: _Repo, rng: random.Random, rev: str) -> None:
    for spec_path, data_path, part in NESTFUL_PARTS:
        tids: dict[str, str] = {}
        for spec in json.loads(repo.read(spec_path, rev)):
            name = str(spec["name"])
            host = str(spec.get("host", "")).split(".")[0].replace("-", " ")
            server = host or "functions"
            tids[name] = tid = f"nestful/{part}/{name}"
            params = list(spec.get("query_parameters") or spec.get("parameters") or {})
            b.tool(
                tid,
                server,
                name,
                " ".join(str(spec.get("description", "")).split()),
                group=f"nestful/{part}/{server}",
                key=tid,
                source="nestful",
                params=params,
            )
        for row in json.loads(repo.read(data_path, rev)):
            called = [tids[c["name"]] for c in row["output"] if c.get("name") in tids]
            if called:
                _rows(b, "nestful", " ".join(str(row["input"]).split()), called)


RESTBENCH_APIS = ("tmdb", "spotify")
_METHODS = ("get", "post", "put", "delete", "patch")


def restbench(b: Build, repo: _Repo, rng: random.Random, rev: str) -> None:
    for api in RESTBENCH_APIS:
        spec = json.loads(repo.read(f"specs/{api}_oas.json", rev))
        tids: dict[str, str] = {}
        for path, ops in spec["paths"].items():
            shared = [p.get("name") for p in ops.get("parameters", []) if isinstance(p, dict)]
            for method, op in ops.items():
                if method not in _METHODS or not isinstance(op, dict):
                    continue
                op_id = f"{method.upper()} {path}"
                tids[op_id] = tid = f"restbench/{api}/{op_id}"
                params = shared + [
                    p.get("name") for p in op.get("parameters", []) if isinstance(p, dict)
                ]
                desc = " ".join(str(op.get("description") or "").split())
                b.tool(
                    tid,
                    api,
                    str(op.get("summary") or op_id),
                    desc or str(op.get("summary") or ""),
                    group=f"restbench/{api}",
                    key=tid,
                    source="restbench",
                    params=[str(p) for p in dict.fromkeys(params) if p],
                )
        for row in json.loads(repo.read(f"datasets/{api}.json", rev)):
            called = [tids[s] for s in row["solution"] if s in tids]
            if called:
                _rows(b, "restbench", " ".join(row["query"].split()), called)


TOOLALPACA_FILES = ("data/eval_simulated.json", "data/eval_real.json")
_PARAMS = re.compile(r"Parameters:\s*(\{.*?\})\s*\n", re.S)


def toolalpaca(b: Build, repo: _Repo, rng: random.Random, rev: str) -> None:
    for path in TOOLALPACA_FILES:
        for api in json.loads(repo.read(path, rev)):
            server = str(api["Name"])
            tids: dict[str, str] = {}
            for fn, doc in (api.get("Function_Description") or {}).items():
                if fn == "components":
                    continue
                tids[fn] = tid = f"toolalpaca/{server}/{fn}"
                m = _PARAMS.search(str(doc) + "\n")
                try:
                    params = list(json.loads(m.group(1))) if m else []
                except json.JSONDecodeError:
                    params = []
                b.tool(
                    tid,
                    words(server),
                    fn,
                    _first_line(str(doc)),
                    group=f"toolalpaca/{server}",
                    key=tid,
                    source="toolalpaca",
                    params=params,
                )
            for query, answer in zip(
                api.get("Instructions", []), api.get("Golden_Answers", []), strict=False
            ):
                called = [tids[a["Action"]] for a in answer if a.get("Action") in tids]
                if called:
                    _rows(b, "toolalpaca", " ".join(str(query).split()), called)
