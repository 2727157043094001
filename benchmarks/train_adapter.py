"""A tool embedder that fits a busy 2-core machine: MiniLM with a trained linear output layer.

    python -m benchmarks.train_adapter [--data .toolroute/train-data] [--rows 6000]
        [--out .toolroute/adapter-onnx] [--log benchmarks/results/train_adapter.jsonl]

Why: a full fine-tune of MiniLM (benchmarks/train_embedder.py) ran at ~70 s a step on this
machine shared with other work (benchmarks/results/train_embedder.jsonl: step 10 at 699 s), far
from the ~3,000 steps an hour measured on an idle one. So the transformer stays frozen (today's
int8 file) and one linear map ``W`` (384 × 384, started at the identity) is trained on top of
it with the same contrastive loss and near-miss negatives: in-batch softmax over the batch's
tools plus one sibling of the same service per request, scale 20, same-operation tools masked,
and ``λ‖W − I‖²`` keeping it near the model it starts from.

Mean pooling is linear, so ``mean(W h) = W mean(h)``: the map goes into the ONNX graph as one
MatMul on ``last_hidden_state`` and the result loads exactly as today (``TOOLROUTE_EMBED_MODEL``,
sha256-pinned, embed/onnx.py), and its vectors are ``normalise(W v)`` of today's ``v``
(``adapter.npy`` is saved beside it, so benchmarks can derive them from cached vectors).
Base vectors are cached in ``--store`` (the benches' store), so a rerun embeds nothing twice.
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

from benchmarks.train_embedder import jsonl_log

REPO = Path(__file__).resolve().parents[1]


def base_embedder(store: Path) -> Any:
    """The plain MiniLM (the adapter's base) behind the store's vector cache."""
    from toolroute.embed.cache import CachedEmbedder
    from toolroute.embed.onnx import MINILM_MODEL_ID, OnnxEmbedder, minilm_model_files
    from toolroute.store import open_store

    return CachedEmbedder(
        OnnxEmbedder(*minilm_model_files(), model_id=MINILM_MODEL_ID), open_store(store)
    )


def export(w: np.ndarray, out: Path) -> str:
    """The plain MiniLM int8 model with ``last_hidden_state @ W.T`` appended; returns the
    sha256."""
    import onnx
    from onnx import helper, numpy_helper

    from toolroute.embed.onnx import minilm_model_files

    model_file, tokenizer = minilm_model_files()
    m = onnx.load(str(model_file))
    old = m.graph.output[0].name
    m.graph.initializer.append(numpy_helper.from_array(w.T.astype(np.float32), "tool_adapter"))
    for node in m.graph.node:  # the encoder's output now feeds the adapter
        for i, name in enumerate(node.output):
            if name == old:
                node.output[i] = old + "_base"
    m.graph.node.append(
        helper.make_node("MatMul", [old + "_base", "tool_adapter"], [old], name="tool_adapter")
    )
    out.mkdir(parents=True, exist_ok=True)
    onnx.save(m, str(out / "model.onnx"))
    (out / "tokenizer.json").write_bytes(tokenizer.read_bytes())
    np.save(out / "adapter.npy", w.astype(np.float32))
    digest = hashlib.sha256((out / "model.onnx").read_bytes()).hexdigest()
    (out / "model.onnx.sha256").write_text(digest + "\n")
    return digest


class AdaptedEmbedder:
    """The exported model's vectors, derived from today's cached ones: ``normalise(W v)``.

    What a bench runs instead of the exported file when the store already holds today's
    vectors of a catalog (re-embedding 4,000 tools costs half an hour on a busy machine).
    :func:`fast_model` checks it against the file before it is used."""

    def __init__(self, folder: Path, store: Path) -> None:
        from toolroute.embed.onnx import MINILM_MODEL_ID, OnnxEmbedder, minilm_model_files

        self.w = np.load(folder / "adapter.npy")
        self.base = base_embedder(store)
        self.spans = OnnxEmbedder(*minilm_model_files(), model_id=MINILM_MODEL_ID)
        pin = (folder / "model.onnx.sha256").read_text().split()[0]
        self._id = f"adapter:{pin[:12]}"

    @property
    def model_id(self) -> str:
        return self._id

    @property
    def dim(self) -> int:
        return int(self.w.shape[0])

    def embed(self, texts: Any) -> np.ndarray:
        return adapt(self.base.embed(list(texts)), self.w).astype(np.float32)

    def embed_spans(self, text: str, spans: Any) -> np.ndarray:
        return adapt(self.spans.embed_spans(text, spans), self.w).astype(np.float32)


def fast_model(folder: Path, store: Path) -> Any:
    """:class:`AdaptedEmbedder` for a folder this script exported (checked against its ONNX
    file on a few texts), else the file itself through ``OnnxEmbedder``."""
    from toolroute.embed.onnx import OnnxEmbedder, model_dir_files

    real = OnnxEmbedder(*model_dir_files(folder))
    if not (folder / "adapter.npy").is_file():
        return real
    fast = AdaptedEmbedder(folder, store)
    texts = ["merge the pull request", "weather: get forecast: Get the forecast", "hi there"]
    cos = (fast.embed(texts) * real.embed(texts)).sum(axis=1)
    if cos.min() < 0.9999:
        raise SystemExit(f"{folder}: adapter.npy does not match model.onnx (cosine {cos.min()})")
    return fast


def adapt(v: np.ndarray, w: np.ndarray) -> np.ndarray:
    x = v @ w.T
    return x / np.linalg.norm(x, axis=1, keepdims=True).clip(1e-9)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=Path(".toolroute/train-data"))
    ap.add_argument("--store", type=Path, default=REPO / ".toolroute" / "bench-store")
    ap.add_argument("--out", type=Path, default=Path(".toolroute/adapter-onnx"))
    ap.add_argument("--rows", type=int, default=6000)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--l2", type=float, default=1.0, help="λ of ‖W − I‖²")
    ap.add_argument("--scale", type=float, default=20.0)
    ap.add_argument("--log", type=Path, default=Path("benchmarks/results/train_adapter.jsonl"))
    args = ap.parse_args()

    import torch

    torch.set_num_threads(2)
    torch.manual_seed(3)
    rng = random.Random(3)
    t0 = time.monotonic()
    tools = {
        json.loads(x)["id"]: json.loads(x)
        for x in (args.data / "tools.jsonl").read_text().splitlines()
    }

    def rows(name: str, n: int) -> list[dict]:
        got = [json.loads(x) for x in (args.data / name).read_text().splitlines()]
        return random.Random(0).sample(got, min(n, len(got)))

    train, dev = rows("train.jsonl", args.rows), rows("dev.jsonl", 800)
    emb = base_embedder(args.store)
    ids = list(tools)
    col = {t: i for i, t in enumerate(ids)}
    key = [tools[t]["key"] for t in ids]
    texts = [tools[t]["text"] for t in ids]
    variants = [(col[t], v) for t in ids for v in tools[t]["variants"]]
    tv = emb.embed(texts)
    vv = emb.embed([v for _, v in variants]) if variants else np.zeros((0, tv.shape[1]))
    qtr = emb.embed([r["query"] for r in train])
    qdv = emb.embed([r["query"] for r in dev])
    embedded_s = time.monotonic() - t0
    alts: dict[int, list[np.ndarray]] = defaultdict(list)
    for (i, _), v in zip(variants, vv, strict=True):
        alts[i].append(v)

    def dev_metrics(w: np.ndarray) -> dict[str, float]:
        out: dict[str, float] = {}
        a_t, a_q = adapt(tv, w), adapt(qdv, w)
        by: dict[str, list[int]] = defaultdict(list)
        for i, r in enumerate(dev):
            by[r["source"]].append(i)
        for source, idx in sorted(by.items()):
            cols = [j for j, t in enumerate(ids) if tools[t]["source"] == source]
            sims = a_q[idx] @ a_t[cols].T
            top = np.argsort(-sims, axis=1)[:, :5]
            gold = [key[col[dev[i]["tool"]]] for i in idx]
            r1 = np.mean([key[cols[t[0]]] == g for t, g in zip(top, gold, strict=True)])
            r5 = np.mean([g in {key[cols[j]] for j in t} for t, g in zip(top, gold, strict=True)])
            out[f"{source}_r1"], out[f"{source}_r5"] = round(float(r1), 4), round(float(r5), 4)
        out["mean_r1"] = round(float(np.mean([v for k, v in out.items() if k.endswith("_r1")])), 4)
        return out

    write = jsonl_log(args.log)

    eye = torch.eye(tv.shape[1])
    w = torch.nn.Parameter(eye.clone())
    opt = torch.optim.Adam([w], lr=args.lr)
    write(
        {
            "epoch": 0,
            "embedded_s": round(embedded_s, 1),
            "train_rows": len(train),
            **dev_metrics(w.detach().numpy()),
        }
    )
    by_source: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(train):
        by_source[r["source"]].append(i)
    tvt, qt = torch.from_numpy(tv), torch.from_numpy(qtr)
    best = (-1.0, w.detach().numpy().copy(), 0)
    for epoch in range(1, args.epochs + 1):
        losses = []
        batches = []
        for idx in by_source.values():  # a batch draws from one source
            idx = idx[:]
            rng.shuffle(idx)
            batches += [idx[b : b + args.batch] for b in range(0, len(idx), args.batch)]
        rng.shuffle(batches)
        for bidx in batches:
            seen: set[str] = set()
            bidx = [i for i in bidx if not (train[i]["tool"] in seen or seen.add(train[i]["tool"]))]
            pos = [col[train[i]["tool"]] for i in bidx]
            neg = [col[train[i]["negative"]] for i in bidx]
            pv = torch.stack([torch.from_numpy(rng.choice([tv[p], *alts[p]])) for p in pos])
            dmat = torch.cat([pv, tvt[neg]])
            q = torch.nn.functional.normalize(qt[bidx] @ w.T, dim=-1)
            d = torch.nn.functional.normalize(dmat @ w.T, dim=-1)
            logits = args.scale * q @ d.T
            keys = [key[j] for j in pos + neg]
            mask = torch.tensor(
                [
                    [keys[j] == key[pos[i]] and j != i for j in range(len(keys))]
                    for i in range(len(bidx))
                ]
            )
            logits = logits.masked_fill(mask, -1e4)
            loss = torch.nn.functional.cross_entropy(logits, torch.arange(len(bidx)))
            loss = loss + args.l2 * ((w - eye) ** 2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        m = dev_metrics(w.detach().numpy())
        write(
            {
                "epoch": epoch,
                "loss": round(float(np.mean(losses)), 4),
                "drift": round(float(((w.detach() - eye) ** 2).sum().sqrt()), 4),
                **m,
            }
        )
        if m["mean_r1"] > best[0]:
            best = (m["mean_r1"], w.detach().numpy().copy(), epoch)
    digest = export(best[1], args.out)
    # the exported file must give what the adapter gives over today's vectors
    from toolroute.embed.onnx import OnnxEmbedder, model_dir_files

    check = [r["query"] for r in dev[:50]] + texts[:50]
    got = OnnxEmbedder(*model_dir_files(args.out)).embed(check)
    want = adapt(emb.embed(check), best[1])
    cos = (got * want).sum(axis=1)
    write(
        {
            "done": True,
            "best_epoch": best[2],
            "sha256": digest,
            "bytes": (args.out / "model.onnx").stat().st_size,
            "export_cosine_min": round(float(cos.min()), 6),
            "elapsed_s": round(time.monotonic() - t0, 1),
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
