#!/usr/bin/env bash
# Issue 12: the marketplace world, the per-step agent and learning from real executions.
#   bash benchmarks/economics.sh          (run_all.sh calls it)
#   R=DIR SEEDS=2 bash benchmarks/economics.sh   (run_all.sh --quick: fewer seeds, elsewhere)
# Needs ../shared beside the repo. Embeddings are cached in .toolroute/bench-store (the
# market's in .toolroute/bench-store/market-3).
set -euo pipefail
cd "$(dirname "$0")/.."
TR=.venv/bin/toolroute
V="--plugin benchmarks/variants.py"  # the research variants (ehrr-*, adaptive-*, baselines)
PY=.venv/bin/python
B=../shared/benchmarks
R="${R:-benchmarks/results}"
SEEDS="${SEEDS:-10}"
LEARN_SEEDS=$(( SEEDS < 5 ? SEEDS : 5 ))
STORE=.toolroute/bench-store
L="--catalog $B/livemcpbench/catalog.json --queries $B/livemcpbench/queries.jsonl --store $STORE"
S="-s cascade -s ehrr -s ehrr-beta -s ehrr-ts -s ehrr-ucb"

# The issue's setting: 3 vendors per server, oracle planner, n 3, 2 attempts, 10 seeds; prices
# independent of hidden quality, then rising with it.
$TR simulate $V $L $S --providers 3 --planner oracle -n 3 --attempts 2 --prices independent \
    --seeds $SEEDS --out "$R/simulate-market"
$TR simulate $V $L $S --providers 3 --planner oracle -n 3 --attempts 2 --prices positive \
    --seeds $SEEDS --out "$R/simulate-market-positive"
# The estimators against ehrr, paired (same runs' setting as simulate-market).
$TR simulate $V $L -s ehrr -s ehrr-beta -s ehrr-ts -s ehrr-ucb --baseline ehrr --providers 3 \
    --planner oracle -n 3 --attempts 2 --seeds $SEEDS --out "$R/simulate-market-estimators"
# Where EHRR's success goes in the market: its ablations, same setting.
$TR simulate $V $L -s cascade -s ehrr -s ehrr-no-auction -s ehrr-no-exec -s ehrr-flat \
    --providers 3 --planner oracle -n 3 --attempts 2 --seeds $SEEDS --out "$R/simulate-market-ablations"
# Without a server shortlist: similarity (hybrid) vs EHRR's tool layer and auction (ehrr-flat).
$TR simulate $V $L -s hybrid -s ehrr-flat -s cascade --baseline hybrid \
    --providers 3 --planner oracle -n 3 --attempts 2 --seeds $SEEDS --out "$R/simulate-market-flat"

# Real executions: calls until the reliable provider ranks first (both workloads).
rm -f "$R/learning.md"
$PY -m benchmarks.learning --seeds $LEARN_SEEDS --workload alternate --out "$R/learning.md"
$PY -m benchmarks.learning --seeds $LEARN_SEEDS --workload follow --out "$R/learning.md"
