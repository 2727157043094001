"""The cross-encoder fit model at routing time: scores (request, tool) pairs of a ranking's top.

    python -m benchmarks.cross_fit --model .toolroute/cross-onnx [--set union] [--top 3,5,10] \
        [--threads 1,2] [--tokens 96] [--log benchmarks/results/cross_speed.json]

:class:`CrossFit` loads the folder ``benchmarks.train_cross export`` writes (``model.onnx``
sha256-checked against its pin, ``tokenizer.json``, ``fit.json``: the threshold chosen on the
training data's dev split and the token limit) and runs it with onnxruntime and numpy, no torch.
It plugs into benchmarks/fit_compare.py and benchmarks/small_toolbox.py as train_fit's head does
(``keep``). Run as a command, it times the fit stage alone over ``default``'s top N of a real
catalog's requests: a bounded number of candidates, so the same cost at 100 tools and at 100k.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

MAX_TOKENS = 96


def tool_doc(tool: Any) -> str:
    """A catalog tool written as the training data writes tools (benchmarks/train_data.py):
    ``server: name words: description``, then ``: parameter names`` when it has any."""
    from toolroute.index.document import humanise

    text = f"{humanise(tool.server)}: {humanise(tool.name)}: {' '.join(tool.description.split())}"
    params = list(tool.input_schema.get("properties") or {})
    return text + (": " + ", ".join(humanise(p) for p in params) if params else "")


def encode_pairs(tok: Any, pairs: list[tuple[str, str]]) -> dict[str, np.ndarray]:
    """Token ids, type ids and mask of (request, tool document) pairs, padded to the longest."""
    enc = tok.encode_batch(pairs)
    n = max(len(e.ids) for e in enc)
    out = {k: np.zeros((len(enc), n), dtype=np.int64) for k in ("input_ids", "token_type_ids")}
    out["attention_mask"] = np.zeros((len(enc), n), dtype=np.int64)
    for i, e in enumerate(enc):
        out["input_ids"][i, : len(e.ids)] = e.ids
        out["token_type_ids"][i, : len(e.ids)] = e.type_ids
        out["attention_mask"][i, : len(e.ids)] = 1
    return out


def load_tokenizer(path: Path, max_tokens: int = MAX_TOKENS) -> Any:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(path))
    tok.no_padding()
    tok.enable_truncation(max_tokens, strategy="longest_first")
    return tok


class CrossFit:
    """The exported cross-encoder at routing time: scores the top ``top`` candidates of a ranking.

    ``keep`` has the seam of train_fit.FitModel: it returns [] ("no tool fits") when no candidate's
    logit reaches the threshold, else the ranking, its top reordered by the logits when
    ``rerank``. ``head_ms`` records the fit stage per call (tokenising and the model); the logits
    of a (request, candidates) already scored are reused, so arms over the same candidates share
    one pass (``head_ms`` then records the passes made)."""

    def __init__(
        self,
        folder: Path,
        top: int = 5,
        rerank: bool = True,
        decide: bool = True,
        threads: int = 1,
        max_tokens: int | None = None,
    ):
        import onnxruntime as ort

        model = folder / "model.onnx"
        want = (folder / "model.onnx.sha256").read_text().split()[0]
        got = hashlib.sha256(model.read_bytes()).hexdigest()
        if got != want:
            raise SystemExit(f"{model}: sha256 {got} is not the pinned {want}")
        meta = json.loads((folder / "fit.json").read_text())
        # fewer tokens than trained with: a cheaper pass, measured, not assumed, to cost nothing
        limit = max_tokens or int(meta["max_tokens"])
        # the threshold calibrated on dev for this token limit (export --base), else training's
        self.theta = float(meta.get("thresholds", {}).get(str(limit), meta["threshold"]))
        self.rank_weight = float(meta.get("rank_weight", 0.0))
        self.tok = load_tokenizer(folder / "tokenizer.json", limit)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
        self.top, self.rerank, self.decide = top, rerank, decide
        self.head_ms: list[float] = []
        self.cache: dict[tuple[str, tuple[str, ...]], np.ndarray] = {}

    def mode(self, rerank: bool, decide: bool, weight: float | None = None) -> CrossFit:
        """The same model (one session, its cache and timings) reranking and/or deciding;
        ``weight``: the router's order's weight in the rerank, else the calibrated one."""
        other = copy.copy(self)
        other.rerank, other.decide = rerank, decide
        if weight is not None:
            other.rank_weight = weight
        return other

    def logits(self, query: str, docs: list[str]) -> np.ndarray:
        feeds = encode_pairs(self.tok, [(query, d) for d in docs])
        return np.asarray(self.session.run(["logits"], feeds)[0]).reshape(-1)

    def keep(self, query: str, tools: list[Any], order: list[int]) -> list[int]:
        n = min(self.top, len(order))
        docs = tuple(tool_doc(t) for t in tools[:n])
        z = self.cache.get((query, docs))
        if z is None:
            t0 = time.perf_counter()
            z = self.cache[(query, docs)] = self.logits(query, list(docs))
            self.head_ms.append((time.perf_counter() - t0) * 1000)
        return fit_order(
            z, order, self.theta, rerank=self.rerank, decide=self.decide, weight=self.rank_weight
        )


def fit_order(
    z: np.ndarray,
    order: list[int],
    theta: float,
    *,
    rerank: bool,
    decide: bool,
    weight: float = 0.0,
) -> list[int]:
    """The ranking after the fit stage, from the logits ``z`` of its first ``len(z)``: [] when
    deciding and none reaches ``theta``; those first reordered by ``z - weight * position``
    when reranking (``weight``: how much the router's own order still counts)."""
    if decide and (not len(z) or z.max() < theta):
        return []
    if not rerank:
        return order
    n = len(z)
    score = z - weight * np.arange(n)
    return [order[i] for i in np.argsort(-score, kind="stable")] + order[n:]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", type=Path, default=Path(".toolroute/cross-onnx"))
    ap.add_argument("--set", default="union")
    ap.add_argument("--store", type=Path, default=Path(".toolroute/bench-store"))
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--top", type=lambda v: [int(x) for x in v.split(",")], default=[3, 5, 10])
    ap.add_argument("--threads", type=lambda v: [int(x) for x in v.split(",")], default=[1, 2])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=None, help="cut pairs shorter than trained")
    ap.add_argument("--log", type=Path, default=None)
    args = ap.parse_args()
    return speed(args)


def speed(args: argparse.Namespace) -> int:
    """The fit stage alone (tokenising and the model) over N candidates of a real catalog, in
    alternating blocks per thread count; the process's peak RSS. The candidates are ``default``'s
    top N for the requests of a benchmark set, so their documents are real MCP tools."""
    import resource

    from benchmarks import recall_suite as rs
    from toolroute.catalog import load_queries
    from toolroute.router import Router, top_k

    cat, qf = rs.SETS[args.set]
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with Router(cat, store=args.store) as r:
        r.index()
        ix = r.built
        cases = []
        for q in load_queries(qf, r.catalog)[: args.queries]:
            order = top_k(r.scores(q.text, "default"), max(args.top))
            cases.append((q.text, [tool_doc(ix.tools[j]) for j in order]))
    rss_router = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    fits = {t: CrossFit(args.model, threads=t, max_tokens=args.tokens) for t in args.threads}
    for f in fits.values():
        f.logits("warm", ["up"])
    rss_models = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    times: dict[tuple[int, int], list[float]] = defaultdict(list)
    for _ in range(args.rounds):  # alternating blocks: load falls on every arm alike
        for t, f in fits.items():
            for n in args.top:
                for text, docs in cases:
                    t0 = time.perf_counter()
                    f.logits(text, docs[:n])
                    times[(t, n)].append((time.perf_counter() - t0) * 1000)
    out = {
        "set": args.set,
        "requests": len(cases),
        "max_tokens": next(iter(fits.values())).tok.truncation["max_length"],
        "rounds": args.rounds,
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "rss_mb": {
            "start": round(rss0),
            "after_router": round(rss_router),
            "after_cross_encoders": round(rss_models),
        },
        "fit_stage_ms": {
            f"threads={t} candidates={n}": {
                "p50": round(float(np.percentile(v, 50)), 2),
                "p95": round(float(np.percentile(v, 95)), 2),
            }
            for (t, n), v in sorted(times.items())
        },
    }
    print(json.dumps(out, indent=1))
    if args.log is not None:
        args.log.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
