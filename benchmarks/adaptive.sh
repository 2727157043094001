#!/usr/bin/env bash
# Issue 24: the learning router (adaptive) against hybrid, default and EHRR on the 3-vendor
# livemcpbench market; EHRR's failure modes as ablations.    bash benchmarks/adaptive.sh
# Needs ../shared beside the repo; embeddings cached in .toolroute/bench-store (the market's in
# .toolroute/bench-store/market-3). Every figure of benchmarks/results/adaptive comes from here.
set -euo pipefail
cd "$(dirname "$0")/.."
TR="nice -n 10 .venv/bin/toolroute"
V="--plugin benchmarks/variants.py"  # the research variants (ehrr-*, adaptive-*)
PY="nice -n 10 .venv/bin/python"
B=../shared/benchmarks
R=benchmarks/results/adaptive
STORE=.toolroute/bench-store
L="--catalog $B/livemcpbench/catalog.json --queries $B/livemcpbench/queries.jsonl --store $STORE"
M="--providers 3 -n 3 --attempts 2 --seeds 10 --baseline hybrid"

# Recurring work: 2,000 tasks of a Zipf stream, tasks 1,500-2,000 reported; curves over all.
$TR simulate $V $L $M --planner oracle --stream zipf --tasks 2000 --window 1500:2000 \
    -s hybrid -s default -s adaptive -s adaptive-2 -s adaptive-no-memory -s adaptive-budget \
    -s ehrr -s ehrr-fixed --out "$R/zipf"
# The same with the noisy agent (wrong tool or bad arguments 10 % of the time).
$TR simulate $V $L $M --planner oracle --stream zipf --tasks 2000 --window 1500:2000 --noise 0.1 \
    -s hybrid -s adaptive -s adaptive-2 --out "$R/noisy"
# Today's setting: each of the 95 tasks once.
$TR simulate $V $L $M --planner oracle --stream once \
    -s hybrid -s default -s adaptive -s adaptive-2 -s ehrr -s ehrr-fixed --out "$R/once"
# The offline clause planner (retrieval decides): Zipf stream.
$TR simulate $V $L $M --planner clauses --stream zipf --tasks 2000 --window 1500:2000 \
    -s hybrid -s default -s adaptive -s adaptive-2 --out "$R/clauses"
# adaptive-lean (show=2 and V = 0.01 at once) against hybrid alone: Zipf, once-through, clauses.
$TR simulate $V $L $M --planner oracle --stream zipf --tasks 2000 --window 1500:2000 \
    -s hybrid -s adaptive-lean --out "$R/lean"
$TR simulate $V $L $M --planner oracle --stream once -s hybrid -s adaptive-lean --out "$R/lean-once"
$TR simulate $V $L $M --planner clauses --stream zipf --tasks 2000 --window 1500:2000 \
    -s hybrid -s adaptive-lean --out "$R/lean-clauses"
# Its siblings in the same tree (lean-siblings/), and the exact-name pre-rank's share of the margin.
$TR simulate $V $L $M --planner oracle --stream zipf --tasks 2000 --window 1500:2000 \
    -s hybrid -s adaptive -s adaptive-2 -s adaptive-budget --out "$R/lean-siblings"
PYTHONPATH=src $PY -m benchmarks.adaptive_exact --store "$STORE" --stream once --out "$R/lean-exact-once.md"
PYTHONPATH=src $PY -m benchmarks.adaptive_exact --store "$STORE" --stream zipf --off-only \
    --out "$R/lean-exact-zipf.md"
PYTHONPATH=src $PY -m benchmarks.adaptive_exact --store "$STORE" --stream zipf --off-only \
    -s hybrid -s adaptive -s adaptive-2 --out "$R/lean-exact-zipf-siblings.md"
# The exact-name rule that lifts only a tool named as the need, against lifting every mention
# and no step (route/exact.py): on the market, and per step on every recall set.
PYTHONPATH=src $PY -m benchmarks.adaptive_exact --store "$STORE" --stream zipf -s hybrid -s adaptive \
    --out "$R/exact-intent-zipf.md"
PYTHONPATH=src $PY -m benchmarks.adaptive_exact --store "$STORE" --stream once -s hybrid -s adaptive \
    --out "$R/exact-intent-once.md"
PYTHONPATH=src $PY -m benchmarks.exact_intent --strategy default --strategy hybrid --store "$STORE" \
    --out benchmarks/results/recall_suite_exact_intent.md \
    --json benchmarks/results/recall_suite_exact_intent.json
# EHRR's failure modes on recurring work, at the paper's shortlist (5 servers of 210).
$TR simulate $V $L --providers 3 -n 3 --attempts 2 --seeds 5 --baseline ehrr --planner oracle \
    --stream zipf --tasks 2000 --window 1500:2000 --servers-k 5 \
    -s ehrr -s ehrr-cos -s ehrr-optimistic -s ehrr-flat -s ehrr-fixed -s cascade \
    --out "$R/ehrr-ablation"
# Cold retrieval: grouping must not cost coverage, and recall must not drop.
$PY -m benchmarks.capability_coverage --store "$STORE" --cosine 0.9 --cosine 0.8 \
    --cosine 1.5 -s hybrid -s default -s adaptive-hybrid -s adaptive --out "$R/coverage.md"
for set in livemcpbench mcpbench; do
    $TR bench $V --catalog "$B/$set/catalog.json" --queries "$B/$set/queries.jsonl" \
        --store "$STORE" -s default -s adaptive --json > "$R/bench-$set.json"
done
$TR bench $V --catalog "$B/union/catalog.json" --queries benchmarks/union_queries.jsonl \
    --store "$STORE" -s default -s adaptive --json > "$R/bench-union.json"
# The reproduction: today's table, figure for figure.
$TR simulate $V $L -s cascade -s ehrr -s ehrr-no-auction -s ehrr-no-exec -s ehrr-flat -s ehrr-cos \
    -s ehrr-beta -s ehrr-ts --providers 1 --planner whole --stream once -n 3 --seeds 10 \
    --out "$R/reproduce-simulate"
diff <(head -12 "$R/reproduce-simulate/simulate.md") <(head -12 benchmarks/results/simulate/simulate.md)
# Harder worlds: rho 0 and vendor-correlated quality (rho 0.5) alone, and with one vendor down for tasks
# 800-1,200 of a 2,000-task Zipf stream; adaptive, hybrid, ehrr, 5 seeds (hardened/).
PYTHONPATH=src $PY -m benchmarks.adaptive_outage --store "$STORE" --out "$R/hardened"
# The budget target (cost <= 1.05x ehrr at >= 3x its success) under both payment rules, V swept
# with the reservation cut (adaptive-2 + reserve) and without: once-through at the scaled and at
# the paper's shortlist, and the Zipf window (budget-*.md, budget-*.json).
PYTHONPATH=src $PY -m benchmarks.adaptive_budget --store "$STORE" --stream once \
    --value 0.002 --value 0.005 --value 0.01 --value 0.02 --value 0.05 \
    --plain 0.002 --plain 0.005 --plain 0.01 --plain 0.02 --out "$R/budget-once"
PYTHONPATH=src $PY -m benchmarks.adaptive_budget --store "$STORE" --stream once --servers-k 5 \
    --value 0.005 --value 0.01 --value 0.02 --plain 0.01 --fixed adaptive-lean \
    --sweep adaptive-2 --sweep adaptive --out "$R/budget-once-k5"
PYTHONPATH=src $PY -m benchmarks.adaptive_budget --store "$STORE" --stream zipf \
    --value 0.001 --value 0.002 --value 0.01 --value 0.02 --no-plain --fixed adaptive-lean \
    --out "$R/budget-zipf"
