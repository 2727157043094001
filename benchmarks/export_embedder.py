"""Export a fine-tuned embedder (benchmarks/train_embedder.py) to int8 ONNX, as routing loads it.

    python -m benchmarks.export_embedder --model .toolroute/embedder --out .toolroute/embedder-onnx

Writes ``model.onnx`` (dynamic int8 quantisation of the weights by onnxruntime's tools, the
recipe of the default model), ``tokenizer.json`` and ``model.onnx.sha256``: the folder that
``TOOLROUTE_EMBED_MODEL`` names (embed/onnx.py). Then checks the cosine of each exported vector to
the torch model's over a sample of requests and tool texts, and prints min / mean.
Needs the ``train`` extra (torch, transformers, onnx).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

SAMPLE = [
    "I am still waiting on my card?",
    "book a table for two at an italian place tonight",
    "merge the pull request once checks pass",
    "github: create issue: Create a new issue in a GitHub repository",
    "weather: get forecast: Get the weather forecast for a location",
    "what is the capital of France",
    "slack: post message: Post a message to a channel",
    "Find me a one-way flight from SFO to JFK next Friday",
]


def weight_only_int8(src: Path, dst: Path) -> int:
    """Every MatMul's constant weight (and the embedding tables) stored as int8 (symmetric, one
    scale per output column or table row), cast back to float at load, activations in float:
    the layout of the default model
    (onnxruntime folds the weights back to float32 at load), whose cosine to fp32 is ~0.9994.
    Dynamic activation quantisation (``quantize_dynamic``) lost far more (cosine ~0.96)."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    m = onnx.load(str(src))
    inits = {i.name: i for i in m.graph.initializer}
    done = 0
    new_nodes = []
    for node in m.graph.node:
        # MatMul weights: one scale per output column; embedding tables (Gather): one per row
        slot, axis = {"MatMul": (1, 1), "Gather": (0, 0)}.get(node.op_type, (-1, 0))
        if slot >= 0 and node.input[slot] in inits:
            w = numpy_helper.to_array(inits[node.input[slot]]).astype(np.float32)
            if w.ndim == 2 and w.size >= 4096:
                base = node.input[slot]
                scale = np.maximum(np.abs(w).max(axis=1 - axis), 1e-12) / 127.0
                shaped = scale[None, :] if axis == 1 else scale[:, None]
                q = np.clip(np.round(w / shaped), -127, 127).astype(np.int8)
                m.graph.initializer.remove(inits.pop(base))
                m.graph.initializer.extend(
                    [
                        numpy_helper.from_array(q, base + "_q"),
                        numpy_helper.from_array(shaped.astype(np.float32), base + "_scale"),
                    ]
                )
                # Cast and Mul, not DequantizeLinear: onnxruntime constant-folds these at load
                # (the weights become float32 once), while a DequantizeLinear is kept and re-run
                # on every call (the whole embedding table per query: 6x slower)
                new_nodes.append(
                    helper.make_node(
                        "Cast",
                        [base + "_q"],
                        [base + "_f"],
                        to=onnx.TensorProto.FLOAT,
                        name=base + "_cast",
                    )
                )
                new_nodes.append(
                    helper.make_node(
                        "Mul", [base + "_f", base + "_scale"], [base + "_deq"], name=base + "_mul"
                    )
                )
                node.input[slot] = base + "_deq"
                done += 1
        new_nodes.append(node)
    del m.graph.node[:]
    m.graph.node.extend(new_nodes)
    onnx.save(m, str(dst))
    return done


def export_fp32(model: Any, path: Path, output: str) -> None:
    """A BERT-style torch module's ``output`` (``last_hidden_state`` per token, or ``logits`` per
    row) as an fp32 ONNX graph with dynamic batch and sequence axes, the runtime's three inputs."""
    import torch

    class Wrapped(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = model

        def forward(self, input_ids, attention_mask, token_type_ids):  # type: ignore[no-untyped-def]
            out = self.m(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return getattr(out, output)

    inputs = ("input_ids", "attention_mask", "token_type_ids")
    axes = {n: {0: "batch", 1: "sequence"} for n in inputs}
    axes[output] = {0: "batch", 1: "sequence"} if output == "last_hidden_state" else {0: "batch"}
    ids = torch.ones((2, 8), dtype=torch.long)
    torch.onnx.export(
        Wrapped().eval(),
        (ids, torch.ones_like(ids), torch.zeros_like(ids)),
        str(path),
        input_names=list(inputs),
        output_names=[output],
        dynamic_axes=axes,
        opset_version=17,
        dynamo=False,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", type=Path, default=Path(".toolroute/embedder"))
    ap.add_argument("--out", type=Path, default=Path(".toolroute/embedder-onnx"))
    ap.add_argument(
        "--texts", type=Path, default=None, help="JSON lines with 'query' for the check"
    )
    args = ap.parse_args()

    import numpy as np
    import torch
    from transformers import AutoModel

    from toolroute.embed.onnx import OnnxEmbedder

    torch.set_num_threads(2)
    args.out.mkdir(parents=True, exist_ok=True)
    model = AutoModel.from_pretrained(str(args.model)).eval()

    fp32 = args.out / "model-fp32.onnx"
    export_fp32(model, fp32, "last_hidden_state")
    out = args.out / "model.onnx"
    weight_only_int8(fp32, out)
    fp32.unlink()
    shutil.copy(args.model / "tokenizer.json", args.out / "tokenizer.json")
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    (args.out / "model.onnx.sha256").write_text(digest + "\n")

    texts = list(SAMPLE)
    if args.texts is not None:
        texts += [json.loads(x)["query"] for x in args.texts.read_text().splitlines()[:200]]
    from benchmarks.train_embedder import Encoder

    enc = Encoder(args.model, max_query=256, max_tool=256)
    enc.model = model
    ref = enc.embed(texts, "query").numpy()
    got = OnnxEmbedder(out, args.out / "tokenizer.json").embed(texts)
    cos = (ref * got).sum(axis=1)
    print(
        json.dumps(
            {
                "model": str(out),
                "bytes": out.stat().st_size,
                "sha256": digest,
                "texts": len(texts),
                "cosine_min": round(float(cos.min()), 5),
                "cosine_mean": round(float(np.mean(cos)), 5),
            }
        )
    )


if __name__ == "__main__":
    main()
