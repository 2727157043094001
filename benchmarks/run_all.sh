#!/usr/bin/env bash
# Reproduces every figure quoted in the README and in closing notes.
#   bash benchmarks/run_all.sh            # all benchmarks, tdwa study, scale (10k, 100k)
#   SKIP_SCALE=1 bash benchmarks/run_all.sh
# Needs ../shared beside the repo. Embeddings are cached in .toolroute/bench-store.
set -euo pipefail
cd "$(dirname "$0")/.."
TR=.venv/bin/toolroute
PY=.venv/bin/python
B=../shared/benchmarks
R=benchmarks/results
STORE=.toolroute/bench-store
mkdir -p "$R"

for name in livemcpbench mcpbench tool_attention; do
    $TR bench --catalog "$B/$name/catalog.json" --queries "$B/$name/queries.jsonl" \
        --store "$STORE" -s all --out "$R/$name"
done
$TR bench --catalog "$B/union/catalog.json" --queries benchmarks/union_queries.jsonl \
    --store "$STORE" -s all --out "$R/union"

$PY benchmarks/tdwa.py --store "$STORE" --out "$R/tdwa.md"
# Issue 14: retrieval ideas one at a time (kept and rejected) against the old default.
$PY benchmarks/recall_ideas.py --store "$STORE" --out "$R/recall_ideas.md"

# Tool Attention (seed 002): tokens per turn next to recall, and the 120 / 527 / 10k table.
for name in livemcpbench tool_attention; do
    $TR bench --catalog "$B/$name/catalog.json" --queries "$B/$name/queries.jsonl" \
        --store "$STORE" -s default -s hybrid -s top-k-full -s full-schema --tokens \
        --out "$R/$name-tokens"
done
$PY benchmarks/tokens.py --store "$STORE" --scale-store .toolroute/scale-store --out "$R/tokens.md"

# What a new user waits for: a cold `toolroute index` of livemcpbench (empty store), then warm.
$PY benchmarks/cold_index.py --out "$R/cold_index.md"

# Gateway overhead per call_tool against calling the server directly (stdio and HTTP).
$PY benchmarks/gateway_latency.py --http --breakdown --out "$R/gateway_latency.md"

# Memory: cold indexing against a bare onnxruntime session; serve's idle RSS and import time.
$PY benchmarks/index_memory.py --out "$R/index_memory.md"
$PY benchmarks/idle_memory.py --out "$R/idle_memory.md"

# EHRR economics simulation (seed 000 §V): all variants vs cascade, then estimators vs ehrr.
L="--catalog $B/livemcpbench/catalog.json --queries $B/livemcpbench/queries.jsonl --store $STORE"
# Today's world and whole-request agent (--providers 1 --planner whole, issue 11's table).
$TR simulate $L -s cascade -s ehrr -s ehrr-no-auction -s ehrr-no-exec -s ehrr-flat -s ehrr-cos \
    -s ehrr-beta -s ehrr-ts --providers 1 --planner whole --seeds 10 --out "$R/simulate"
$TR simulate $L -s ehrr -s ehrr-beta -s ehrr-ts --baseline ehrr --providers 1 --planner whole \
    --seeds 10 --out "$R/simulate-estimators"
# Issue 12: marketplace world, per-step agent, learning from real executions.
bash benchmarks/economics.sh

if [ -z "${SKIP_SCALE:-}" ]; then
    $PY benchmarks/scale.py --sizes 10000 100000 --store .toolroute/scale-store --out "$R/scale.md"
fi
