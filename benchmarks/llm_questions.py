"""ScaleMCP's LLM-written questions in the tool documents, measured: ``index --questions llm``
with the bundled local model against the offline template questions, ``default`` ranking.

    python -m benchmarks.llm_questions [--sets livemcpbench,mcpbench,metatool,union]
        [--size 0.5b] [--store .toolroute/questions-store] [--out FILE]

Each set is indexed twice in one store: with the template questions, and with five questions
per tool written by the local LLM (``toolroute[llm]``; cached in the store by tool hash, so a
second run asks nothing). ``default`` ranks each set's whole requests over both; the table
gives each metric and the paired bootstrap 95 % interval of the LLM questions against the
templates. No LLM runs at query time: the router that scores reads the LLM's questions back
from the store (index/document.py ``StoredQuestions``), as ``route`` and ``serve`` do.
sealtools is left out by default: 4,076 tools at a few seconds each on 2 cores.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.recall_suite import SETS

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sets", default="livemcpbench,mcpbench,metatool,union")
    ap.add_argument("--size", default="0.5b", help="local LLM: 0.5b or 1.5b")
    ap.add_argument("--store", type=Path, default=REPO / ".toolroute" / "questions-store")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if not SETS["livemcpbench"][0].exists():
        print("error: ../shared/benchmarks not found", file=sys.stderr)
        return 2

    from toolroute.bench.paired import paired_bootstrap, per_query_metrics
    from toolroute.catalog import load_queries
    from toolroute.embed.onnx import OnnxEmbedder
    from toolroute.index.document import LLMQuestions, TemplateQuestions
    from toolroute.llm.client import ChatLLM, LLMConfig
    from toolroute.llm.local import LocalLLMServer
    from toolroute.route.strategy import RouteParams
    from toolroute.router import Router, top_k

    embedder = OnnxEmbedder()
    t0 = time.perf_counter()
    lines: list[str] = []
    with LocalLLMServer(size=args.size) as srv:  # type: ignore[arg-type]
        llm = ChatLLM(LLMConfig(base_url=srv.base_url, model=srv.model, timeout_s=120))
        for name in args.sets.split(","):
            cat, queries_path = SETS[name]
            per: dict[str, Any] = {}
            for label in ("template", "llm"):
                with Router(cat, store=args.store, embedder=embedder, params=RouteParams()) as r:
                    r.questions = (
                        LLMQuestions(llm, r.store) if label == "llm" else TemplateQuestions()
                    )
                    r.index()
                ix_name = r.questions.name
                # score as `route` does: a router with no LLM, reading the questions back
                with Router(cat, store=args.store, embedder=embedder, params=RouteParams()) as r:
                    if label == "template":
                        r.questions = TemplateQuestions()
                    r.index()
                    assert r.questions.name == ix_name
                    ix = r.built
                    cases = [
                        (q.text, list(q.groups)) for q in load_queries(queries_path, r.catalog)
                    ]

                    def rank(text: str, r: Any = r, ix: Any = ix) -> list[Any]:
                        return [ix.keys[j] for j in top_k(r.scores(text, "default"), 10)]

                    per[label] = per_query_metrics(rank, cases)
            row = f"| {name} ({len(cases)})"
            lines.append(f"{row} | template | {_cells(per['template'])} | — | — |")
            i5 = paired_bootstrap(per["llm"]["recall@5"], per["template"]["recall@5"])
            im = paired_bootstrap(per["llm"]["mrr"], per["template"]["mrr"])
            lines.append(
                f"{row} | llm | {_cells(per['llm'])} | {i5} {i5.verdict} | {im} {im.verdict} |"
            )
            print(f"{name}: done at {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    took = time.perf_counter() - t0
    head = [
        f"`python -m benchmarks.llm_questions {' '.join(sys.argv[1:])}` ({took:.0f} s; "
        f"questions by the local {args.size} LLM at index time; `default`, no LLM at query "
        "time)",
        "",
        "| set (queries) | questions | R@1 | R@5 | R@10 | MRR | nDCG@10 | Full@10 | "
        "ΔR@5 [95 % CI] | ΔMRR [95 % CI] |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    text = "\n".join(head + lines) + "\n"
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


def _cells(pq: Any) -> str:
    from toolroute.bench.paired import mean_metrics

    m = mean_metrics(pq)
    keys = ("recall@1", "recall@5", "recall@10", "mrr", "ndcg@10", "full@10")
    return " | ".join(f"{m[k]:.3f}" for k in keys)


if __name__ == "__main__":
    sys.exit(main())
