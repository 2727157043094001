"""A fit model: a small head on the embedder scoring (request, tool) — does this tool serve it?

    python -m benchmarks.train_fit [--model DIR] [--data .toolroute/train-data] \
        [--out .toolroute/fit.npz] [--rows 3000]

Features of a pair, from the embedder's two unit vectors q and t: the cosine, q ⊙ t and |q − t|
(769 numbers); the head is one hidden layer of 64 (trained with torch, the ``train`` extra) and
runs in numpy at routing time: a constant cost per candidate (a bounded number of them).
Pairs (benchmarks/train_data.py's train split only): a request and its tool (fits); the same
request and a near miss (a sibling of its service doing another operation), its most similar
other tool by cosine, and a random tool (does not fit); out-of-scope requests (CLINC, HWU64
chit-chat) against their most similar tool and a random one (does not fit). The threshold is
chosen on the dev split: the highest that keeps at most 1.5 % of dev (request, its tool) pairs
below it. ``FitModel.keep`` turns a ranking into "no tool fits" (empty) when no candidate
reaches it, and otherwise keeps it (``rerank=True``: reorders it by the head's probability).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np


def features(q: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Rows of [cos, q ⊙ t, |q − t|] for paired unit vectors."""
    prod = q * t
    return np.concatenate([prod.sum(axis=1, keepdims=True), prod, np.abs(q - t)], axis=1)


def tool_text(server: str, name: str, description: str) -> str:
    from toolroute.index.document import humanise

    return f"{humanise(server)}: {humanise(name)}: {description}"


class FitModel:
    """The head in numpy: p(fits | request, tool)."""

    def __init__(self, weights: dict[str, np.ndarray], embedder: Any, rerank: bool = False) -> None:
        self.w = weights
        self.theta = float(weights["theta"])
        self.embedder = embedder
        # reordering by the head lowered small-toolbox R@1 (sgd 0.880 -> 0.807): off by default
        self.rerank = rerank
        self.head_ms: list[float] = []  # the head alone, per call (the vectors are inputs)

    @classmethod
    def load(cls, path: Path, embedder: Any) -> FitModel:
        with np.load(path) as z:
            return cls({k: z[k] for k in z.files}, embedder)

    def prob(self, q: np.ndarray, t: np.ndarray) -> np.ndarray:
        x = features(np.broadcast_to(q, t.shape), t)
        h = np.maximum(x @ self.w["w1"] + self.w["b1"], 0.0)
        z = (h @ self.w["w2"] + self.w["b2"]).ravel()
        return 1.0 / (1.0 + np.exp(-z))

    def keep(self, query: str, tools: list[Any], order: list[int]) -> list[int]:
        vecs = self.embedder.embed(
            [query] + [tool_text(t.key[0], t.name, t.description) for t in tools]
        )
        t0 = time.perf_counter()
        p = self.prob(vecs[0:1], vecs[1:])
        self.head_ms.append((time.perf_counter() - t0) * 1000)
        if p.max() < self.theta:
            return []
        if not self.rerank:  # the decision alone: the router's order is kept
            return order
        return [order[i] for i in np.argsort(-p, kind="stable")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", type=Path, default=None, help="TOOLROUTE_EMBED_MODEL folder")
    ap.add_argument("--data", type=Path, default=Path(".toolroute/train-data"))
    ap.add_argument("--out", type=Path, default=Path(".toolroute/fit.npz"))
    ap.add_argument("--rows", type=int, default=6000)
    ap.add_argument("--store", type=Path, default=Path(".toolroute/bench-store"))
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--log", type=Path, default=Path("benchmarks/results/train_fit.json"))
    args = ap.parse_args()

    import torch

    from benchmarks.train_adapter import base_embedder, fast_model

    torch.set_num_threads(2)
    torch.manual_seed(5)
    rng = random.Random(5)
    # vectors of the texts come from the store's cache when they were embedded before
    emb = fast_model(args.model, args.store) if args.model else base_embedder(args.store)
    tools = {
        json.loads(x)["id"]: json.loads(x)
        for x in (args.data / "tools.jsonl").read_text().splitlines()
    }
    ids = list(tools)
    key = [tools[t]["key"] for t in ids]
    col = {t: i for i, t in enumerate(ids)}
    tv = emb.embed([tools[t]["text"] for t in ids])

    def load(name: str, n: int) -> list[dict]:
        # the rows benchmarks/train_adapter.py sampled (same seed): their vectors are cached
        rows = [json.loads(x) for x in (args.data / name).read_text().splitlines()]
        return random.Random(0).sample(rows, min(n, len(rows)))

    def pairs(rows: list[dict], oos: list[dict]) -> tuple[np.ndarray, np.ndarray]:
        qv = emb.embed([r["query"] for r in rows])
        ov = emb.embed([r["query"] for r in oos]) if oos else np.zeros((0, tv.shape[1]))
        qi, ti, y = [], [], []
        sims = qv @ tv.T
        for i, r in enumerate(rows):
            g = col[r["tool"]]
            others = [j for j in np.argsort(-sims[i]) if key[j] != key[g]]
            for j, label in (
                (g, 1),
                (col[r["negative"]], 0),
                (others[0], 0),
                (rng.choice(others[5:]), 0),
            ):
                qi.append(("q", i))
                ti.append(j)
                y.append(label)
        osims = ov @ tv.T if len(ov) else np.zeros((0, len(ids)))
        for i in range(len(oos)):
            for j in (int(np.argmax(osims[i])), rng.randrange(len(ids))):
                qi.append(("o", i))
                ti.append(j)
                y.append(0)
        qmat = np.stack([qv[i] if k == "q" else ov[i] for k, i in qi])
        return features(qmat, tv[ti]).astype(np.float32), np.array(y, dtype=np.float32)

    xtr, ytr = pairs(load("train.jsonl", args.rows), load("oos_train.jsonl", 4000))
    xdv, ydv = pairs(load("dev.jsonl", 800), load("oos_dev.jsonl", 1000))
    head = torch.nn.Sequential(
        torch.nn.Linear(xtr.shape[1], 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)
    )
    opt = torch.optim.AdamW(head.parameters(), lr=1e-3, weight_decay=1e-3)
    pos_w = torch.tensor([(ytr == 0).sum() / max(1, (ytr == 1).sum())])
    lossf = torch.nn.BCEWithLogitsLoss(pos_weight=pos_w)
    xt, yt = torch.from_numpy(xtr), torch.from_numpy(ytr)
    curve = []
    for epoch in range(args.epochs):
        perm = torch.randperm(len(xt))
        for b in range(0, len(xt), 256):
            idx = perm[b : b + 256]
            loss = lossf(head(xt[idx]).squeeze(1), yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            pd = torch.sigmoid(head(torch.from_numpy(xdv)).squeeze(1)).numpy()
        acc = float(((pd > 0.5) == (ydv == 1)).mean())
        curve.append(
            {"epoch": epoch + 1, "train_loss": round(loss.item(), 4), "dev_acc": round(acc, 4)}
        )
    theta = float(np.quantile(pd[ydv == 1], 0.015))
    neg = pd[ydv == 0]
    w = {
        n: p.detach().numpy()
        for n, p in zip(("w1", "b1", "w2", "b2"), head.parameters(), strict=True)
    }
    w = {
        "w1": w["w1"].T.copy(),
        "b1": w["b1"],
        "w2": w["w2"].T.copy(),
        "b2": w["b2"],
        "theta": np.array(theta),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez(args.out, **w)
    report = {
        "embedder": emb.model_id,
        "train_pairs": len(ytr),
        "dev_pairs": len(ydv),
        "theta": round(theta, 4),
        "dev_negatives_above_theta": round(float((neg >= theta).mean()), 4),
        "curve": curve,
    }
    args.log.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "curve"}), curve[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
