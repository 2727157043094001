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

if [ -z "${SKIP_SCALE:-}" ]; then
    $PY benchmarks/scale.py --sizes 10000 100000 --store .toolroute/scale-store > "$R/scale.md"
    cat "$R/scale.md"
fi
