"""The signals of the abstention check (route/abstain_signals.py) on the small catalog, with a
deterministic embedder."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.abstain import FAR, NEAR, small_router
from toolroute.route.abstain_signals import signals
from toolroute.route.operation import server_does, server_names
from toolroute.route.strategy import RouteParams


def test_coverage_signals_fall_when_the_request_holds_words_no_tool_has(tmp_path: Path) -> None:
    with small_router(tmp_path, abstain="off") as r:
        ix = r.built

        def sig(text: str) -> dict[str, float]:
            ctx = r.query_context(text)
            return signals(ix, ctx, r.scores(text, "default"))

        served, far = sig("read the contents of a file"), sig(FAR)
        assert served["lex_cov1"] == pytest.approx(1.0) and served["vocab_cov"] == 1.0
        assert far["lex_cov5"] == 0.0 and far["vocab_cov"] == 0.0
        assert served["cos1"] > far["cos1"]
        assert served["action_ok"] == 1.0  # "read" asked, read_file first
        # the leading verb against the top tools' names: "read" names read_file; no tool's
        # name buys; a question has no leading verb
        assert served["verb_named"] == 1.0 and served["verb_ok"] == 1.0
        assert sig("please buy the file from the directory")["verb_named"] == 0.0
        assert sig("what is in this directory")["verb_named"] == 0.5


def test_a_server_does_the_operations_its_tools_name_or_describe(tmp_path: Path) -> None:
    with small_router(tmp_path, abstain="off") as r:
        ix = r.built
        fs, time_server = ix.server_ids.index("fs"), ix.server_ids.index("time")
        assert server_does(ix, fs, "write") and server_does(ix, fs, "writes")
        assert server_does(ix, fs, "save")  # write_file's action class (create)
        assert not server_does(ix, fs, "push") and not server_does(ix, time_server, "write")
        assert server_does(ix, time_server, "converting")

        def sig(text: str) -> dict[str, float]:
            return signals(ix, r.query_context(text), r.scores(text, "default"))

        pushed = sig("push the file to the origin remote")
        assert pushed["op_server"] == 0.0 and pushed["op_top"] == 0.0
        assert sig("write a file with these notes")["op_server"] == 1.0
        assert sig("what is in this directory")["op_server"] == 0.5
        # names alone: write_file names "write", and "save" only by its action class
        assert server_names(ix, fs, "write") and not server_names(ix, fs, "save")
        assert sig("write a file with these notes")["op_named"] == 1.0
        assert pushed["op_named"] == 0.0 and pushed["op_named_top"] == 0.0

        def verb_sim(text: str) -> float:
            ctx = replace(r.query_context(text), embed=r.embedder.embed)
            return signals(ix, ctx, r.scores(text, "default"), features=("verb_sim",))["verb_sim"]

        # the request's verb against the verbs of the top servers' tool names
        assert verb_sim("write a file with these notes") == pytest.approx(1.0, abs=1e-5)
        assert verb_sim("push the file to the origin remote") < 0.9
        assert verb_sim("what is in this directory") == 1.0  # information: nothing to check


def test_oos_gap_is_how_much_closer_known_out_of_scope_requests_are_than_the_best_tool(
    tmp_path: Path,
) -> None:
    with small_router(tmp_path, abstain="off") as r:
        ix = r.built
        known = np.asarray(r.embedder.embed([FAR, "book a haircut", "order a pizza"]))

        def gap(text: str) -> float:
            ctx = r.query_context(text)
            return signals(ix, ctx, r.scores(text, "default"), known)["oos_gap"]

        assert gap(FAR) > gap("read the contents of a file")
        ctx = r.query_context(FAR)
        sig = signals(ix, ctx, r.scores(FAR, "default"), known)
        sims = np.sort(known @ ctx.vector)
        assert sig["oos_gap"] == pytest.approx(float(sims.mean()) - sig["cos1"], abs=1e-5)
        assert signals(ix, ctx, r.scores(FAR, "default"))["oos_gap"] == 0.0  # no requests


def test_the_check_reads_the_strategy_s_cosines_only_for_its_own_vector(tmp_path: Path) -> None:
    from toolroute.route.stage import multi

    with small_router(tmp_path, abstain="off") as r:
        ix = r.built
        ctx = r.query_context(NEAR)
        scores = r.scores(NEAR, "default")
        multi(ix, ctx, RouteParams())  # the stage keeps its cosines, keyed by the vector
        kept_vector, kept = ctx.memo["dense"]
        assert kept_vector is ctx.vector and np.allclose(kept, ix.tool_vectors @ ctx.vector)
        marked = np.zeros(ix.size, dtype=np.float32)
        marked[0] = 0.5
        ctx.memo["dense"] = (ctx.vector, marked)  # read, not recomputed
        assert signals(ix, ctx, scores, features=("cos1",))["cos1"] == pytest.approx(0.5)
        # a sub-query's cosines (another vector) are not taken for the request's
        ctx.memo["dense"] = (ctx.vector.copy(), marked)
        fresh = float((ix.tool_vectors @ ctx.vector).max())
        assert signals(ix, ctx, scores, features=("cos1",))["cos1"] == pytest.approx(fresh)


def test_posting_lists_are_ascending(tmp_path: Path) -> None:
    with small_router(tmp_path, abstain="off") as r:
        lex = r.built.tool_lexical
        for word in ("file", "time", "the", "weather", "a"):
            docs = lex.postings(word)
            assert docs.size and bool(np.all(np.diff(docs) > 0))


def test_log_tools_is_the_catalogs_size_whatever_the_request(tmp_path: Path) -> None:
    with small_router(tmp_path, abstain="off") as r:
        ix = r.built
        got = [
            signals(ix, r.query_context(t), r.scores(t, "default"), features=("log_tools",))[
                "log_tools"
            ]
            for t in ("read the contents of a file", FAR)
        ]
        assert got == pytest.approx([np.log10(ix.size)] * 2) and ix.size > 1
