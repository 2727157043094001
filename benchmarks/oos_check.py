"""Check the hand-written request sets of benchmarks/out_of_scope and benchmarks/in_scope.

    python -m benchmarks.oos_check [--dup 0.85] [--test-dup 0.75] [--no-embed]

Why: the abstention model (route/abstain.py, benchmarks/abstain_train.py) trains on some sets
and is measured on another, and is measured once more on ``union_test``, which nothing is
tuned on. A request written twice in two sets, or close to one of union_test's, would leak
between them; a misspelt tool or server id would be a silent label error. So:

- **rows**: every row is valid JSON with exactly the expected keys; out-of-scope rows have
  ``relevant: []``, a ``kind`` of far/near/none and, for near rows only, a ``near`` server
  that exists in the set's catalog (``../shared/benchmarks/<set>/catalog.json``; union_test
  uses the union's); in-scope rows name at least one tool, every tool exists in the catalog,
  ``relevant`` is the union of ``relevant_groups``; ids are unique over all files and no
  request text occurs twice;
- **duplicates**: no two rows of any out_of_scope or in_scope file (union_test aside) have an
  embedding cosine above ``--dup`` (0.85), with the repository's embedder
  (``toolroute.embed.onnx.OnnxEmbedder``);
- **union_test**: no row of any other file has a cosine above ``--test-dup`` (0.75) to a row
  of union_test. union_test's text is never printed: only the other row's id and its highest
  cosine.

Prints counts per file and kind and every failure, and exits 1 when a check fails (0 when all
pass), so it can run as a test. ``--no-embed`` runs the row checks only.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
OOS = REPO / "benchmarks" / "out_of_scope"
SHORT = REPO / "benchmarks" / "in_scope"
TEST = "union_test"
KINDS = ("far", "near", "none")
OOS_KEYS = {"id", "query", "relevant", "kind"}
INS_KEYS = {"id", "query", "relevant", "relevant_groups"}


def shared() -> Path:
    from benchmarks.abstain_train import SHARED

    return SHARED


def catalog_of(stem: str) -> dict[str, set[str]]:
    """server id -> tool names of the catalog a file's rows are written for."""
    name = "union" if stem == TEST else stem
    data = json.loads((shared() / name / "catalog.json").read_text())
    return {s["id"]: {t["name"] for t in s["tools"]} for s in data["servers"]}


def load(path: Path) -> list[dict[str, Any]]:
    rows = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            d = json.loads(line)
            d["_file"], d["_line"] = path.name, n
            rows.append(d)
    return rows


def check_oos(rows: list[dict[str, Any]], cat: dict[str, set[str]], secret: bool) -> list[str]:
    errs = []
    for d in rows:
        where = f"{d['_file']}:{d['_line']}"
        keys = set(d) - {"_file", "_line"}
        want = OOS_KEYS | ({"near"} if d.get("kind") == "near" else set())
        if keys != want:
            errs.append(f"{where}: keys {sorted(keys)}, want {sorted(want)}")
        if d.get("relevant") != []:
            errs.append(f"{where}: relevant is not []")
        if d.get("kind") not in KINDS:
            errs.append(f"{where}: kind {d.get('kind')!r}")
        if d.get("kind") == "near" and d.get("near") not in cat:
            # a server id is no request text, but union_test's stays unprinted all the same
            errs.append(
                f"{where}: near server not in the catalog"
                + ("" if secret else f": {d.get('near')!r}")
            )
        if not isinstance(d.get("query"), str) or not d["query"].strip():
            errs.append(f"{where}: empty query")
    return errs


def check_ins(rows: list[dict[str, Any]], cat: dict[str, set[str]]) -> list[str]:
    errs = []
    for d in rows:
        where = f"{d['_file']}:{d['_line']} {d.get('id')}"
        keys = set(d) - {"_file", "_line"}
        if keys != INS_KEYS:
            errs.append(f"{where}: keys {sorted(keys)}, want {sorted(INS_KEYS)}")
            continue
        groups = d["relevant_groups"]
        if not d["relevant"] or not groups or not all(groups):
            errs.append(f"{where}: no relevant tool")
        refs = [r for g in groups for r in g] + list(d["relevant"])
        errs += [
            f"{where}: unknown tool {r}"
            for r in refs
            if set(r) != {"server", "tool"} or r["tool"] not in cat.get(r["server"], set())
        ]
        flat = {(r["server"], r["tool"]) for g in groups for r in g}
        if {(r["server"], r["tool"]) for r in d["relevant"]} != flat:
            errs.append(f"{where}: relevant is not the union of relevant_groups")
        if not isinstance(d.get("query"), str) or not d["query"].strip():
            errs.append(f"{where}: empty query")
    return errs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="Exits 1 when a check fails. union_test's text is never printed.",
    )
    ap.add_argument("--dup", type=float, default=0.85, help="highest cosine between two rows")
    ap.add_argument(
        "--test-dup", type=float, default=0.75, help="highest cosine of a row to union_test's"
    )
    ap.add_argument("--no-embed", action="store_true", help="row checks only")
    args = ap.parse_args(argv)

    errs: list[str] = []
    files = sorted(OOS.glob("*.jsonl")) + sorted(SHORT.glob("*.jsonl"))
    rows: list[dict[str, Any]] = []
    test: list[dict[str, Any]] = []
    print("file                               far  near  none  in-scope")
    for f in files:
        part = load(f)
        secret = f.parent == OOS and f.stem == TEST
        cat = catalog_of(f.stem)
        if f.parent == OOS:
            errs += check_oos(part, cat, secret)
        else:
            errs += check_ins(part, cat)
        kinds = Counter(d.get("kind", "in") for d in part)
        label = f"{f.parent.name}/{f.name}"
        print(f"{label:34} {kinds['far']:4} {kinds['near']:5} {kinds['none']:5} {kinds['in']:9}")
        for d in part:
            d["_secret"] = secret
        (test if secret else rows).extend(part)

    ids = Counter(d.get("id") for d in rows + test)
    for i, n in ids.items():
        if n > 1:
            errs.append(f"id used {n} times: {i}")
    texts = Counter(d["query"].strip().lower() for d in rows)
    for d in rows:
        if texts[d["query"].strip().lower()] > 1:
            errs.append(f"{d['_file']} {d['id']}: the same request text occurs twice")
    for d in rows:
        if d["query"].strip().lower() in {t["query"].strip().lower() for t in test}:
            errs.append(f"{d['_file']} {d['id']}: a union_test request, word for word")

    if not args.no_embed:
        import numpy as np

        from toolroute.embed.onnx import OnnxEmbedder

        e = OnnxEmbedder()
        v = np.asarray(e.embed([d["query"] for d in rows]), dtype=np.float64)
        sim = v @ v.T
        np.fill_diagonal(sim, -1.0)
        pairs = np.argwhere(np.triu(sim > args.dup, 1))
        for a, b in pairs:
            da, db = rows[a], rows[b]
            errs.append(
                f"cosine {sim[a, b]:.3f} > {args.dup}: {da['_file']} {da['id']} "
                f"{da['query']!r} ~ {db['_file']} {db['id']} {db['query']!r}"
            )
        print(f"rows compared: {len(rows)}; highest cosine between two: {sim.max():.3f}")
        if test:
            t = np.asarray(e.embed([d["query"] for d in test]), dtype=np.float64)
            best = (v @ t.T).max(axis=1)
            for d, c in zip(rows, best, strict=True):
                if c > args.test_dup:
                    errs.append(
                        f"cosine {c:.3f} > {args.test_dup} to union_test: {d['_file']} {d['id']}"
                    )
            print(f"union_test rows: {len(test)}; highest cosine of a row to one: {best.max():.3f}")

    for m in errs:
        print("FAIL", m)
    print(f"{len(errs)} failure(s)" if errs else "all checks pass")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
