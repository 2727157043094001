"""A cross-encoder fit model: [CLS] request [SEP] tool document [SEP] -> one logit, "does it fit".

    python -m benchmarks.train_cross train --base /work/embedder-run2 --data .toolroute/train-data \
        --out .toolroute/cross [--minutes 50] [--log benchmarks/results/train_cross.jsonl]
    python -m benchmarks.train_cross export --model .toolroute/cross --out .toolroute/cross-onnx

MiniLM-L6 with a classification head (BertForSequenceClassification, one label), initialised from
the fine-tuned embedder (benchmarks/train_embedder.py), trained on benchmarks/train_data.py's
train split only. Each request makes a group: its tool (fits), its near miss (a sibling doing
another operation), the fine-tuned embedder's two most similar other tools of its source (hard
negatives); each no-tool request (CLINC out-of-scope, HWU64 chit-chat) is
paired with its source's two most similar tools (do not fit). Loss: softmax over each group (the
listwise part: the tool above its neighbours) plus binary cross-entropy over every pair (the
calibrated part: a logit above the threshold means "fits"). The pair is cut to 96 tokens.

Every ``--eval-every`` steps, on the dev split: the pairs' AUC and accuracy (logit > 0), and the
reranking of the embedder's top 5 of each dev request's source (R@1 before and after); the
threshold that refuses at most 2 % of dev requests whose tool is in their top 5, and the share of
dev no-tool requests it still answers. JSON lines in ``--log``: the training curve.

``export`` writes ``model.onnx`` (int8 weights, as benchmarks/export_embedder.py; with
``--activations-int8``, onnxruntime's dynamic quantisation: int8 matrix products), its sha256,
``tokenizer.json`` and ``fit.json`` (threshold, token limit), and checks the ONNX logits against
torch's on a sample of pairs; with ``--base`` (the embedder), it then calibrates the exported
model on the dev split: its threshold per token limit and the weight of the embedder's order
when it reranks (``calibrate``). benchmarks/cross_fit.py runs it at routing time (onnxruntime).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.cross_fit import MAX_TOKENS, CrossFit, encode_pairs, load_tokenizer


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """Probability that a positive outscores a negative (ties count half)."""
    if not len(pos) or not len(neg):
        return float("nan")
    s = np.concatenate([pos, neg])
    ranks = np.empty(len(s))
    order = np.argsort(s, kind="stable")
    ranks[order] = np.arange(1, len(s) + 1)
    for v in np.unique(s):  # average ranks of ties
        m = s == v
        if m.sum() > 1:
            ranks[m] = ranks[m].mean()
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def refusal_threshold(best_in_scope: np.ndarray, refuse: float = 0.02) -> float:
    """The highest threshold refusing at most ``refuse`` of in-scope requests (their best score
    below it means "no tool fits")."""
    s = np.sort(best_in_scope)
    k = int(np.floor(refuse * len(s)))  # this many may fall below
    return float(s[k]) if len(s) else 0.0


# ---------------------------------------------------------------- training


def _load(data: Path) -> tuple[dict, dict[str, list[dict]]]:
    tools = {
        json.loads(x)["id"]: json.loads(x)
        for x in (data / "tools.jsonl").read_text().split("\n")
        if x
    }
    rows = {
        name: [json.loads(x) for x in (data / f"{name}.jsonl").read_text().splitlines()]
        for name in ("train", "dev", "oos_train", "oos_dev")
    }
    return tools, rows


def _sample(rows: list[dict], n: int, seed: int) -> list[dict]:
    """``n`` rows, every row of the small tool-style sources (apibank, mcp_servers) first."""
    rng = random.Random(seed)
    small = [r for r in rows if r["source"] in ("apibank", "mcp_servers")]
    rest = [r for r in rows if r["source"] not in ("apibank", "mcp_servers")]
    return small + rng.sample(rest, max(0, min(n - len(small), len(rest))))


class Neighbours:
    """The fine-tuned embedder's ranking of a source's tools for a request."""

    def __init__(self, enc: Any, tools: dict) -> None:
        self.ids = list(tools)
        self.key = {t: tools[t]["key"] for t in self.ids}
        self.by_source: dict[str, list[int]] = defaultdict(list)
        for i, t in enumerate(self.ids):
            self.by_source[tools[t]["source"]].append(i)
        self.enc = enc
        self.tv = enc.embed([tools[t]["text"] for t in self.ids], "tool").numpy()

    def ranked(self, queries: list[str], sources: list[str]) -> list[list[str]]:
        qv = self.enc.embed(queries, "query").numpy()
        out = []
        for v, s in zip(qv, sources, strict=True):
            cols = self.by_source[s]
            order = np.argsort(-(self.tv[cols] @ v), kind="stable")
            out.append([self.ids[cols[j]] for j in order[:10]])
        return out


def _groups(rows: list[dict], ranked: list[list[str]], tools: dict) -> list:
    """(request, [tool ids], gold index or -1) per row."""
    out = []
    for r, near in zip(rows, ranked, strict=True):
        if "tool" not in r:  # a no-tool request: its two nearest tools
            out.append((r["query"], near[:2], -1))
            continue
        gold = tools[r["tool"]]["key"]
        hard = [t for t in near if tools[t]["key"] != gold and t != r["negative"]][:2]
        out.append((r["query"], [r["tool"], r["negative"], *hard], 0))
    return out


def torch_logits(model: Any, tok: Any, pairs: list[tuple[str, str]]) -> np.ndarray:
    """The torch cross-encoder's logit of each (request, tool text) pair, 64 pairs a pass."""
    import torch

    with torch.no_grad():
        return np.concatenate(
            [
                model(
                    **{
                        k: torch.from_numpy(v)
                        for k, v in encode_pairs(tok, pairs[i : i + 64]).items()
                    }
                )
                .logits.reshape(-1)
                .numpy()
                for i in range(0, len(pairs), 64)
            ]
        )


def evaluate(model: Any, tok: Any, tools: dict, dev: list, oos: list, gold_keys: list) -> dict:
    """AUC / accuracy of the dev pairs; R@1 of reranking each request's embedder top 5; the 2 %
    refusal threshold and the dev no-tool requests still answered at it."""

    model.eval()
    texts = [(q, tools[t]["text"]) for q, cands, _ in dev + oos for t in cands]
    z = torch_logits(model, tok, texts)
    model.train()
    pos, neg, best_in, best_oos = [], [], [], []
    r1_emb = r1_cross = eligible = 0
    k = 0
    for (_, cands, _), gold in zip(dev, gold_keys, strict=True):
        s = z[k : k + len(cands)]
        k += len(cands)
        keys = [tools[t]["key"] for t in cands]
        for key, v in zip(keys, s, strict=True):
            (pos if key == gold else neg).append(v)
        r1_emb += keys[0] == gold
        r1_cross += keys[int(np.argmax(s))] == gold
        if gold in keys:
            eligible += 1
            best_in.append(s.max())
    for _, cands, _ in oos:
        s = z[k : k + len(cands)]
        k += len(cands)
        neg.extend(s)
        best_oos.append(s.max())
    pa, na = np.array(pos), np.array(neg)
    theta = refusal_threshold(np.array(best_in))
    return {
        "dev_auc": round(auc(pa, na), 4),
        "dev_acc": round(float(np.concatenate([pa > 0, na <= 0]).mean()), 4),
        "rerank_r1_embedder": round(r1_emb / len(dev), 4),
        "rerank_r1_cross": round(r1_cross / len(dev), 4),
        "gold_in_top5": round(eligible / len(dev), 4),
        "threshold_2pct": round(theta, 4),
        "oos_answered_at_threshold": round(float((np.array(best_oos) >= theta).mean()), 4),
    }


def train(args: argparse.Namespace) -> int:
    import torch
    from transformers import BertForSequenceClassification

    from benchmarks.train_embedder import Encoder, jsonl_log, optimise

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    t_start = time.monotonic()
    tools, rows = _load(args.data)
    train_rows = _sample(rows["train"], args.rows, args.seed)
    oos_rows = random.Random(args.seed).sample(
        rows["oos_train"], min(args.oos_rows, len(rows["oos_train"]))
    )
    dev_rows = random.Random(0).sample(rows["dev"], min(args.dev_rows, len(rows["dev"])))
    oos_dev = random.Random(0).sample(
        rows["oos_dev"], min(args.dev_rows // 2, len(rows["oos_dev"]))
    )

    # the embedder's neighbours: hard negatives (train), the candidates to rerank (dev)
    nb = Neighbours(Encoder(args.base, max_query=48, max_tool=64), tools)
    every = train_rows + oos_rows + dev_rows + oos_dev
    ranked = nb.ranked([r["query"] for r in every], [r["source"] for r in every])
    a, b, c = (
        len(train_rows),
        len(train_rows) + len(oos_rows),
        len(train_rows) + len(oos_rows) + len(dev_rows),
    )
    groups = _groups(train_rows, ranked[:a], tools)
    oos_groups = _groups(oos_rows, ranked[a:b], tools)
    dev = [(r["query"], near[:5], 0) for r, near in zip(dev_rows, ranked[b:c], strict=True)]
    dev_gold = [tools[r["tool"]]["key"] for r in dev_rows]
    dev_oos = [(r["query"], near[:2], -1) for r, near in zip(oos_dev, ranked[c:], strict=True)]
    prep_s = time.monotonic() - t_start

    model = BertForSequenceClassification.from_pretrained(str(args.base), num_labels=1)
    model.bert.embeddings.word_embeddings.weight.requires_grad_(False)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01)
    tok = load_tokenizer(args.base / "tokenizer.json")
    write = jsonl_log(args.log)

    write(
        {
            "step": 0,
            "prep_s": round(prep_s, 1),
            "train_groups": len(groups),
            "no_tool_groups": len(oos_groups),
            "dev_requests": len(dev),
            "dev_no_tool": len(dev_oos),
            **evaluate(model, tok, tools, dev, dev_oos, dev_gold),
        }
    )
    t0 = time.monotonic()
    rng.shuffle(groups)
    rng.shuffle(oos_groups)
    per_oos = max(1, round(args.requests * len(oos_groups) / max(1, len(groups))))
    losses: list[float] = []
    best = -1.0
    step = 0
    while True:
        step += 1
        i = (step - 1) * args.requests
        batch = [groups[(i + j) % len(groups)] for j in range(args.requests)]
        batch += [oos_groups[((step - 1) * per_oos + j) % len(oos_groups)] for j in range(per_oos)]
        texts = [
            (
                q,
                tools[t]["text"]
                if j or rng.random() < 0.5
                else rng.choice([tools[t]["text"], *tools[t]["variants"]]),
            )
            for q, cands, _ in batch
            for j, t in enumerate(cands)
        ]
        z = model(
            **{k: torch.from_numpy(v) for k, v in encode_pairs(tok, texts).items()}
        ).logits.reshape(-1)
        y = torch.tensor([float(g == j) for _, cands, g in batch for j in range(len(cands))])
        bce = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
        k, ce = 0, []
        for _, cands, g in batch:
            if g >= 0:
                ce.append(
                    torch.nn.functional.cross_entropy(
                        z[k : k + len(cands)][None], torch.tensor([g])
                    )
                )
            k += len(cands)
        loss = bce + torch.stack(ce).mean()
        done = optimise(opt, params, loss, losses, step, args, args.warmup, t0, write)
        if step % args.eval_every == 0 or done:
            m = evaluate(model, tok, tools, dev, dev_oos, dev_gold)
            kept = m["dev_auc"] > best
            write(
                {
                    "step": step,
                    "elapsed_s": round(time.monotonic() - t0, 1),
                    "pairs_seen": step * (len(texts)),
                    **m,
                    "kept": kept,
                }
            )
            if kept:  # the best dev AUC so far is the checkpoint
                best = m["dev_auc"]
                model.save_pretrained(str(args.out))
                (args.out / "tokenizer.json").write_bytes(
                    (args.base / "tokenizer.json").read_bytes()
                )
                (args.out / "fit.json").write_text(
                    json.dumps(
                        {"threshold": m["threshold_2pct"], "max_tokens": MAX_TOKENS, "step": step}
                    )
                    + "\n"
                )
        if done:
            break
    write({"done": True, "steps": step, "elapsed_s": round(time.monotonic() - t_start, 1)})
    return 0


# ---------------------------------------------------------------- export

SAMPLE_PAIRS = [
    (
        "book a table for two at an italian place tonight",
        "restaurants: reserve restaurant: Reserve a table at a restaurant",
    ),
    ("merge the pull request once checks pass", "github: merge pull request: Merge a pull request"),
    (
        "merge the pull request once checks pass",
        "github: get pull request: Get details of a pull request",
    ),
    (
        "what is the capital of France",
        "weather: get forecast: Get the weather forecast for a location",
    ),
    (
        "Dim the bedroom lights to 20 percent",
        "image tools: apply picture effects: Apply effects to a picture",
    ),
    ("send a message to the team channel", "slack: post message: Post a message to a channel"),
]


def export(args: argparse.Namespace) -> int:
    import shutil

    import torch
    from transformers import BertForSequenceClassification

    from benchmarks.export_embedder import export_fp32, weight_only_int8

    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    model = BertForSequenceClassification.from_pretrained(str(args.model)).eval()

    fp32 = args.out / "model-fp32.onnx"
    export_fp32(model, fp32, "logits")
    out = args.out / "model.onnx"
    if args.activations_int8:  # int8 matmuls (MatMulInteger): faster on VNNI, less exact
        from onnxruntime.quantization import QuantType, quantize_dynamic

        quantize_dynamic(str(fp32), str(out), weight_type=QuantType.QInt8)
    else:
        weight_only_int8(fp32, out)
    fp32.unlink()
    for name in ("tokenizer.json", "fit.json"):
        shutil.copy(args.model / name, args.out / name)
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    (args.out / "model.onnx.sha256").write_text(digest + "\n")

    pairs = list(SAMPLE_PAIRS)
    if args.data is not None:
        tools, rows = _load(args.data)
        for r in random.Random(1).sample(rows["dev"], 200):
            pairs += [
                (r["query"], tools[r["tool"]]["text"]),
                (r["query"], tools[r["negative"]]["text"]),
            ]
    tok = load_tokenizer(args.model / "tokenizer.json", MAX_TOKENS)
    ref = torch_logits(model, tok, pairs)
    fit = CrossFit(args.out)
    got = np.concatenate(
        [
            fit.session.run(["logits"], encode_pairs(fit.tok, pairs[i : i + 64]))[0].reshape(-1)
            for i in range(0, len(pairs), 64)
        ]
    )
    theta = fit.theta
    report: dict[str, Any] = {
        "model": str(out),
        "bytes": out.stat().st_size,
        "sha256": digest,
        "pairs": len(pairs),
        "logit_max_abs_diff": round(float(np.abs(ref - got).max()), 4),
        "logit_mean_abs_diff": round(float(np.abs(ref - got).mean()), 4),
        "same_side_of_threshold": round(float(((ref >= theta) == (got >= theta)).mean()), 4),
        "threshold_from_training": theta,
    }
    if args.base is not None and args.data is not None:
        report["dev_calibration"] = calibrate(
            args.out, args.data, args.base, args.dev_rows, (48, MAX_TOKENS)
        )
        digest_after = hashlib.sha256(out.read_bytes()).hexdigest()
        assert digest_after == digest
    print(json.dumps(report))
    if args.log is not None:
        args.log.write_text(json.dumps(report, indent=1) + "\n")
    return 0


RANK_WEIGHTS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 100.0)  # 100: the embedder's order kept


def calibrate(folder: Path, data: Path, base: Path, n: int, tokens: tuple[int, ...]) -> dict:
    """On the dev split only (never trained on), with the exported model as routing runs it:
    per token limit, the threshold refusing 2 % of dev requests whose tool is in the embedder's
    top 5 (and the dev no-tool requests still answered at it); the weight ``w`` of the
    embedder's order in the rerank (``logit - w * position``) with the best dev R@1. Written
    into the folder's fit.json."""
    from benchmarks.train_embedder import Encoder

    tools, rows = _load(data)
    dev = random.Random(2).sample(rows["dev"], min(n, len(rows["dev"])))
    oos = random.Random(2).sample(rows["oos_dev"], min(n // 2, len(rows["oos_dev"])))
    nb = Neighbours(Encoder(base, max_query=48, max_tool=64), tools)
    every = dev + oos
    ranked = nb.ranked([r["query"] for r in every], [r["source"] for r in every])
    meta = json.loads((folder / "fit.json").read_text())
    out: dict[str, Any] = {"dev_requests": len(dev), "dev_no_tool": len(oos), "per_tokens": {}}
    for limit in tokens:
        fit = CrossFit(folder, max_tokens=limit)
        per, best_in, best_oos = [], [], []
        for r, near in zip(every, ranked, strict=True):
            z = fit.logits(r["query"], [tools[t]["text"] for t in near[:5]])
            if "tool" not in r:
                best_oos.append(z.max())
                continue
            keys, gold = [tools[t]["key"] for t in near[:5]], tools[r["tool"]]["key"]
            per.append((z, keys, gold))
            if gold in keys:
                best_in.append(z.max())
        theta = refusal_threshold(np.array(best_in))
        r1 = {
            w: float(
                np.mean(
                    [keys[int(np.argmax(z - w * np.arange(len(z))))] == g for z, keys, g in per]
                )
            )
            for w in RANK_WEIGHTS
        }
        out["per_tokens"][str(limit)] = {
            "threshold": round(theta, 4),
            "dev_servable_refused": round(float(np.mean([z.max() < theta for z, *_ in per])), 4),
            "dev_no_tool_answered": round(float(np.mean(np.array(best_oos) >= theta)), 4),
            "dev_r1_by_rank_weight": {str(w): round(v, 4) for w, v in r1.items()},
        }
    full = out["per_tokens"][str(max(tokens))]["dev_r1_by_rank_weight"]
    weight = max(RANK_WEIGHTS, key=lambda w: (full[str(w)], w))  # ties: nearer the order kept
    meta["thresholds"] = {k: v["threshold"] for k, v in out["per_tokens"].items()}
    meta["rank_weight"] = weight
    (folder / "fit.json").write_text(json.dumps(meta) + "\n")
    out["rank_weight"] = weight
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("--base", type=Path, required=True, help="the fine-tuned embedder (torch)")
    t.add_argument("--data", type=Path, default=Path(".toolroute/train-data"))
    t.add_argument("--out", type=Path, default=Path(".toolroute/cross"))
    t.add_argument("--rows", type=int, default=12000, help="training requests sampled")
    t.add_argument("--oos-rows", type=int, default=1747)
    t.add_argument("--dev-rows", type=int, default=400)
    t.add_argument("--requests", type=int, default=8, help="request groups per step")
    t.add_argument("--steps", type=int, default=3000)
    t.add_argument("--minutes", type=float, default=50.0)
    t.add_argument("--lr", type=float, default=4e-5)
    t.add_argument("--warmup", type=int, default=50)
    t.add_argument("--eval-every", type=int, default=150)
    t.add_argument("--threads", type=int, default=1)
    t.add_argument("--seed", type=int, default=17)
    t.add_argument("--log", type=Path, default=Path("benchmarks/results/train_cross.jsonl"))
    e = sub.add_parser("export")
    e.add_argument("--model", type=Path, default=Path(".toolroute/cross"))
    e.add_argument("--out", type=Path, default=Path(".toolroute/cross-onnx"))
    e.add_argument("--data", type=Path, default=None, help="train data: dev pairs for the check")
    e.add_argument("--base", type=Path, default=None, help="the embedder (torch): calibrate on dev")
    e.add_argument("--dev-rows", type=int, default=400)
    e.add_argument("--threads", type=int, default=1)
    e.add_argument("--log", type=Path, default=None)
    e.add_argument(
        "--activations-int8",
        action="store_true",
        help="dynamic quantisation (int8 activations too) instead of int8 weights only",
    )
    args = ap.parse_args()
    return train(args) if args.cmd == "train" else export(args)


if __name__ == "__main__":
    sys.exit(main())
