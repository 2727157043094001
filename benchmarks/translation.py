"""What an offline model that reads Chinese would add: tool descriptions the embedder cannot read,
translated at index time, measured on the whole requests of a set.

    python -m benchmarks.translation [--set livemcpbench] [--size 0.5b] [--params]
        [--cache .toolroute/translations-0.5b.json] [--store DIR] [--out FILE]

MiniLM reads English only. 62 of livemcpbench's 527 tools describe themselves in Chinese (47 of
its 255 required groups are such tools); the other public sets have none (mcpbench one, in
Korean). Each description with CJK, Hangul or kana in it is translated by the bundled local LLM
(``toolroute[llm]``, llm/local.py) once, cached in ``--cache`` (text → English), and the set's
catalog is indexed twice more: with each such description replaced by its English, and with
the English followed by the original in parentheses. ``default`` ranks the set's queries over
all three catalogs; the table gives each metric and the paired bootstrap 95 % interval against
the original catalog. No LLM runs at query time. The catalog is rewritten under a temporary
directory, never copied into the repo; the cache lives under .toolroute/ (gitignored).

This is a measurement, not a shipped stage: the set it gains on is the one the idea came from.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks._report import missing
from benchmarks.recall_suite import SETS

REPO = Path(__file__).resolve().parents[1]
FOREIGN = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
SYSTEM = (
    "You translate MCP tool descriptions into English. Keep names, identifiers and numbers as "
    "they are. Answer with the English text only."
)
SCHEMA = {"type": "object", "properties": {"english": {"type": "string"}}, "required": ["english"]}


def foreign_texts(catalog: dict[str, Any], params: bool) -> Iterator[tuple[str, str]]:
    """(tool name or tool.param, text) of every description with CJK, Hangul or kana in it."""
    for server in catalog["servers"]:
        for tool in server["tools"]:
            text = tool.get("description") or ""
            if FOREIGN.search(text):
                yield tool["name"], text
            if not params:
                continue
            props = (tool.get("input_schema") or {}).get("properties") or {}
            for name, spec in props.items():
                text = spec.get("description") if isinstance(spec, dict) else None
                if isinstance(text, str) and FOREIGN.search(text):
                    yield f"{tool['name']}.{name}", text


def translate(texts: list[tuple[str, str]], cache: Path, size: str) -> dict[str, str]:
    """Each of ``texts``' English, cached in ``cache`` (the LLM starts only for missing ones)."""
    done: dict[str, str] = json.loads(cache.read_text("utf-8")) if cache.exists() else {}
    missing = [(n, t) for n, t in texts if not done.get(t)]
    if missing:
        from toolroute.llm.client import ChatLLM, LLMConfig
        from toolroute.llm.local import LocalLLMServer

        with LocalLLMServer(size=size) as srv:  # type: ignore[arg-type]
            llm = ChatLLM(LLMConfig(base_url=srv.base_url, model=srv.model, timeout_s=120))
            for i, (name, text) in enumerate(missing, 1):
                t0 = time.perf_counter()
                user = f"Tool: {name}\nText: {text}"
                answer, ok = llm.json("translate", SYSTEM, user, SCHEMA, dict, max_tokens=120)
                if ok and answer.get("english", "").strip():
                    done[text] = answer["english"].strip()
                    cache.parent.mkdir(parents=True, exist_ok=True)
                    cache.write_text(json.dumps(done, ensure_ascii=False, indent=0), "utf-8")
                took = time.perf_counter() - t0
                print(f"[{i}/{len(missing)}] {name} ({took:.1f} s)", file=sys.stderr)
    return {t: done[t] for _, t in texts if done.get(t)}


def rewritten(catalog: dict[str, Any], english: dict[str, str], mode: str) -> dict[str, Any]:
    """``catalog`` with each translated description replaced (``replace``) or led by its
    English (``append``: "English (original)")."""

    def swap(text: Any) -> Any:
        en = english.get(text) if isinstance(text, str) else None
        if not en:
            return text
        return en if mode == "replace" else f"{en} ({text})"

    out = copy.deepcopy(catalog)
    for server in out["servers"]:
        for tool in server["tools"]:
            tool["description"] = swap(tool.get("description"))
            props = (tool.get("input_schema") or {}).get("properties") or {}
            for spec in props.values():
                if isinstance(spec, dict) and "description" in spec:
                    spec["description"] = swap(spec["description"])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--set", default="livemcpbench", choices=sorted(SETS))
    ap.add_argument("--size", default="0.5b", help="local LLM: 0.5b or 1.5b")
    ap.add_argument("--params", action="store_true", help="translate parameter texts too")
    ap.add_argument("--cache", type=Path, default=None)
    ap.add_argument("--store", type=Path, default=REPO / ".toolroute" / "bench-store")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    cat_path, queries_path = SETS[args.set]
    if missing(cat_path):
        return 2

    from toolroute.bench.paired import mean_metrics, paired_bootstrap, per_query_metrics
    from toolroute.catalog import load_queries
    from toolroute.embed.onnx import OnnxEmbedder
    from toolroute.route.strategy import RouteParams
    from toolroute.router import Router, top_k

    catalog = json.loads(cat_path.read_text("utf-8"))
    texts = list(foreign_texts(catalog, args.params))
    cache = args.cache or REPO / ".toolroute" / f"translations-{args.size}.json"
    t0 = time.perf_counter()
    english = translate(texts, cache, args.size)
    tools = sum(1 for n, t in texts if "." not in n and english.get(t))
    embedder = OnnxEmbedder()
    per: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        variants = {"original": cat_path}
        for mode in ("replace", "append"):
            path = Path(tmp) / f"{mode}.json"
            path.write_text(json.dumps(rewritten(catalog, english, mode), ensure_ascii=False))
            variants[mode] = path
        for label, path in variants.items():
            with Router(path, store=args.store, embedder=embedder, params=RouteParams()) as r:
                r.index()
                ix = r.built
                cases = [(q.text, list(q.groups)) for q in load_queries(queries_path, r.catalog)]

                def rank(text: str, r: Any = r, ix: Any = ix) -> list[Any]:
                    return [ix.keys[j] for j in top_k(r.scores(text, "default"), 10)]

                per[label] = per_query_metrics(rank, cases)
    took = time.perf_counter() - t0
    foreign = {
        (server["id"], tool["name"])
        for server in catalog["servers"]
        for tool in server["tools"]
        if FOREIGN.search(tool.get("description") or "")
    }
    groups = [g for _, gs in cases for g in gs]
    unread = sum(1 for g in groups if g <= foreign)
    lines = [
        f"`python -m benchmarks.translation {' '.join(sys.argv[1:])}` ({took:.0f} s; "
        f"{tools} tool descriptions{' and their parameters' if args.params else ''} translated "
        f"by the local {args.size} LLM at index time; `default`, no LLM at query time)",
        "",
        f"{unread} of the {len(groups)} required groups are met only by tools described this way.",
        "",
        f"| {args.set} ({len(cases)} queries) | R@1 | R@5 | R@10 | MRR | nDCG@10 | Full@10 | "
        "ΔR@5 [95 % CI] | ΔMRR [95 % CI] |",
        "|---|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for label, pq in per.items():
        m = mean_metrics(pq)
        cells = " | ".join(
            f"{m[k]:.3f}" for k in ("recall@1", "recall@5", "recall@10", "mrr", "ndcg@10")
        )
        cells += f" | {m['full@10']:.3f}"
        if label == "original":
            deltas = "— | —"
        else:
            i5 = paired_bootstrap(pq["recall@5"], per["original"]["recall@5"])
            im = paired_bootstrap(pq["mrr"], per["original"]["mrr"])
            deltas = f"{i5} {i5.verdict} | {im} {im.verdict}"
        lines.append(f"| {label} | {cells} | {deltas} |")
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
