"""The LLM client and stages against a loopback HTTP endpoint that replays recorded answers
(the real local model runs in test_local.py when installed)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from tests.conftest import HashingEmbedder, loopback_http, read_json, reply_json
from toolroute import Router
from toolroute.llm.client import PROMPT_CHARS, ChatLLM, LLMConfig
from toolroute.papers import atr, pa_rag
from toolroute.papers.atr import AtrParams
from toolroute.papers.pa_rag import PaRagParams
from toolroute.route import llm_stages
from toolroute.route.strategy import RouteParams, register_strategy

pytestmark = pytest.mark.usefixtures("research_variants")

ANSWERS: list[str] = []
SEEN: list[dict[str, object]] = []


class _Replay(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        SEEN.append(read_json(self))
        answer = ANSWERS.pop(0) if ANSWERS else "not json at all"
        if answer.startswith("HTTP "):
            reply_json(self, int(answer[5:]), {"error": "request exceeds the context size"})
            return
        reply_json(
            self,
            200,
            {
                "choices": [{"message": {"content": answer}}],
                "usage": {"prompt_tokens": 40, "completion_tokens": 9},
            },
        )

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[str]:
    SEEN.clear()
    ANSWERS.clear()
    with loopback_http(_Replay) as url:
        yield url


def test_valid_json_is_returned_cached_and_counted(endpoint: str) -> None:
    llm = ChatLLM(LLMConfig(endpoint, "m"))
    ANSWERS.append('Sure! {"sub_queries": ["get weather", "email Bob"]}')
    subs, used = llm_stages.decompose(llm, "get the weather and email Bob")
    assert used and subs == ["get weather", "email Bob"]
    again, _ = llm_stages.decompose(llm, "get the weather and email Bob")
    assert again == subs and len(SEEN) == 1 and llm.usage.cache_hits == 1
    assert llm.usage.prompt_tokens == 40 and llm.usage.completion_tokens == 9
    stage = llm.usage.by_stage["decompose"]
    assert (stage["requests"], stage["calls"], stage["prompt_tokens"]) == (1, 1, 40)
    assert SEEN[0]["response_format"]["type"] == "json_schema"  # type: ignore[index]


def test_invalid_answers_and_errors_fall_back_after_bounded_retries(endpoint: str) -> None:
    llm = ChatLLM(LLMConfig(endpoint, "m", retries=1))
    ANSWERS.extend(['{"sub_queries": []}', "HTTP 500"])  # schema violation, then an error
    subs, used = llm_stages.decompose(llm, "read notes.txt, then email the summary to Bob")
    assert not used and subs == ["read notes.txt", "email the summary to Bob"]
    assert len(SEEN) == 2 and llm.usage.fallbacks == 1
    assert llm.usage.by_stage["decompose"]["fallbacks"] == 1
    assert llm.usage.by_stage["decompose"]["calls"] == 2


def test_an_endpoint_without_structured_outputs_gets_plain_json_mode(endpoint: str) -> None:
    llm = ChatLLM(LLMConfig(endpoint, "m", retries=0))
    ANSWERS.extend(["HTTP 400", '{"complex": true}', '{"complex": false}'])
    assert llm_stages.classify(llm, "a and b", []) == (True, True)
    assert llm_stages.classify(llm, "c", []) == (False, True)
    kinds = [b["response_format"]["type"] for b in SEEN]  # type: ignore[index]
    assert kinds == ["json_schema", "json_object", "json_object"]


def test_a_400_for_another_reason_keeps_structured_outputs(endpoint: str) -> None:
    llm = ChatLLM(LLMConfig(endpoint, "m", retries=0))
    ANSWERS.extend(["HTTP 400", "HTTP 400", '{"complex": false}'])  # e.g. context overflow
    # fallback: two clauses
    assert llm_stages.classify(llm, "read notes.txt, then email the summary to Bob", []) == (
        True,
        False,
    )
    assert llm_stages.classify(llm, "c", []) == (False, True)
    kinds = [b["response_format"]["type"] for b in SEEN]  # type: ignore[index]
    assert kinds == ["json_schema", "json_object", "json_schema"]
    assert llm.usage.last_error and "exceeds the context size" in llm.usage.last_error


def test_pasted_blobs_and_long_requests_are_clipped_in_prompts(endpoint: str) -> None:
    llm = ChatLLM(LLMConfig(endpoint, "m"))
    ANSWERS.append('{"sub_queries": ["explain the image"]}')
    query = "What does this base64 image mean?\n" + "iVBORw0KGgo" * 2000 + " thanks " * 400
    llm_stages.decompose(llm, query)
    sent = str(SEEN[0]["messages"][1]["content"])  # type: ignore[index]
    assert "<data>" in sent and "iVBOR" not in sent
    assert len(sent) <= PROMPT_CHARS
    assert sent.startswith("What does this base64 image mean?")


def test_unreachable_endpoint_falls_back_quickly() -> None:
    llm = ChatLLM(LLMConfig("http://127.0.0.1:9/v1", "m", timeout_s=2, retries=0))
    complex_, used = llm_stages.classify(llm, "what time is it", ["time"])
    assert (complex_, used) == (False, False)


def test_selector_maps_numbers_drops_repeats_and_refuses_out_of_range(
    tmp_path: Path, catalog_file: Path, endpoint: str
) -> None:
    llm = ChatLLM(LLMConfig(endpoint, "m"))
    with Router(catalog_file, store=tmp_path, embedder=HashingEmbedder()) as r:
        ix = r.built
        cands = list(range(ix.size))[::-1]
        ANSWERS.append('{"tools": [2, 2, 1]}')
        chosen, used = llm_stages.select(llm, "read then write", ix, cands, max_tools=3)
        assert used and chosen == [cands[1], cands[0]]
        prompt = str(SEEN[-1]["messages"][1]["content"])  # type: ignore[index]
        first = ix.tools[cands[0]]
        assert f"1. {first.server}/{first.name}: " in prompt
        fmt = SEEN[-1]["response_format"]
        assert fmt["json_schema"]["schema"]["properties"]["tools"]["maxItems"] == 3  # type: ignore[index]
        # out of range, names, or too many: the schema refuses it (twice: one retry), and the
        # unfiltered list, capped, comes back
        ANSWERS.extend(['{"tools": [99]}', '{"tools": ["fs/read_file"]}'])
        chosen, used = llm_stages.select(llm, "x", ix, cands, max_tools=2)
        assert not used and chosen == cands[:2]


def test_answers_persist_across_processes_in_the_cache_file(tmp_path: Path, endpoint: str) -> None:
    cache = tmp_path / "llm-cache.sqlite"
    ANSWERS.append('{"sub_queries": ["get weather", "email Bob"]}')
    first = ChatLLM(LLMConfig(endpoint, "m"), cache_path=cache)
    assert llm_stages.decompose(first, "weather and email") == (["get weather", "email Bob"], True)
    second = ChatLLM(LLMConfig(endpoint, "m"), cache_path=cache)  # a new process
    assert llm_stages.decompose(second, "weather and email") == (["get weather", "email Bob"], True)
    assert len(SEEN) == 1 and second.usage.cache_hits == 1 and second.usage.calls == 0
    other_model = ChatLLM(LLMConfig(endpoint, "m2"), cache_path=cache)
    assert llm_stages.decompose(other_model, "weather and email")[1] is False  # not shared
    assert len(SEEN) == 3  # asked (and retried): the cache is keyed by model too


def test_atr_and_pa_rag_use_the_model_and_say_so(
    tmp_path: Path, catalog_file: Path, endpoint: str
) -> None:
    llm = ChatLLM(LLMConfig(endpoint, "m"))
    # each paper's method takes its own typed parameters where its strategy is built
    register_strategy("atr-1", lambda: atr.strategy(AtrParams(max_tools=1)), overwrite=True)
    register_strategy(
        "pa-rag-w0",
        lambda: pa_rag.strategy(PaRagParams(max_tools=1, whole_keep=0)),
        overwrite=True,
    )
    params = RouteParams(llm=llm)
    with Router(catalog_file, store=tmp_path, embedder=HashingEmbedder(), params=params) as r:
        ANSWERS.append('{"tools": [1]}')
        rows = r.explain("weather forecast for Rome", k=3, strategy="atr-1")
        assert rows[0][0].tool == "get_forecast" and rows[0][1]["selected"] is True
        assert rows[0][1]["llm"] is True and rows[1][1]["selected"] is False
        ANSWERS.extend(
            [
                '{"complex": true}',
                '{"sub_queries": ["read a file", "list a folder"]}',
                '{"tools": [1]}',
                '{"tools": [1]}',
            ]
        )
        rows = r.explain("read a file and list a folder", k=2, strategy="pa-rag-w0")
        assert {c.tool for c, _ in rows} == {"read_file", "list_directory"}
        assert rows[0][1]["path"] == "complex"


def test_without_a_model_every_llm_strategy_still_routes(
    tmp_path: Path, catalog_file: Path
) -> None:
    with Router(
        catalog_file, store=tmp_path, embedder=HashingEmbedder(), params=RouteParams()
    ) as r:
        for strategy in (
            "pa-rag",
            "pa-rag-simple",
            "pa-rag-complex",
            "pa-rag-flat",
            "atr",
            "ehrr-subtask",
        ):
            rows = r.explain("read a file and then write a file", k=3, strategy=strategy)
            assert rows and rows[0][1]["llm"] == "offline fallback"


def test_ehrr_routes_each_functional_subtask_the_model_writes(
    tmp_path: Path, catalog_file: Path, endpoint: str
) -> None:
    llm = ChatLLM(LLMConfig(endpoint, "m"))
    with Router(
        catalog_file, store=tmp_path, embedder=HashingEmbedder(), params=RouteParams(llm=llm)
    ) as r:
        ANSWERS.append(
            '{"subtasks": [{"domain": "files", "operation": "read file", "target": "notes"},'
            ' {"domain": "weather", "operation": "get forecast", "target": "Rome"}]}'
        )
        rows = r.explain("notes and the weather", k=4, strategy="ehrr-subtask")
    names = [c.tool for c, _ in rows]
    assert "read_file" in names and "get_forecast" in names
    assert rows[0][1]["llm"] is True


def test_functional_subtasks_fall_back_to_clauses() -> None:
    subtasks, used = llm_stages.functional_subtasks(None, "find the repo, then open an issue")
    assert not used
    assert [llm_stages.subtask_text(s) for s in subtasks] == ["find the repo", "open an issue"]


LIMA = ["what time is it in Lima", "time now in Oslo"]


def _index_with_llm_questions(store: Path, catalog_file: Path, endpoint: str) -> str:
    """Index ``catalog_file`` with an LLM's questions (7 tools, 7 answers queued); its name."""
    from toolroute.index.document import LLMQuestions

    ANSWERS.extend([json.dumps({"questions": LIMA})] * 7)
    with Router(catalog_file, store=store, embedder=HashingEmbedder()) as r:
        r.questions = LLMQuestions(ChatLLM(LLMConfig(endpoint, "m")), r.store)
        r.index()
        return r.questions.name


def test_llm_questions_are_asked_once_per_tool_hash(
    tmp_path: Path, catalog_file: Path, endpoint: str
) -> None:
    from toolroute.index.document import LLMQuestions

    _index_with_llm_questions(tmp_path, catalog_file, endpoint)
    assert len(SEEN) == 7  # one request per tool
    llm2 = ChatLLM(LLMConfig(endpoint, "m"))  # a new process: no in-memory cache
    with Router(catalog_file, store=tmp_path, embedder=HashingEmbedder()) as r:
        r.questions = LLMQuestions(llm2, r.store)
        report = r.index()
    assert len(SEEN) == 7 and report.embedded == 0


def test_a_later_router_with_no_llm_routes_with_the_questions_the_llm_wrote(
    tmp_path: Path, catalog_file: Path, endpoint: str
) -> None:
    from toolroute.index.document import TemplateQuestions

    asked = _index_with_llm_questions(tmp_path, catalog_file, endpoint)
    # `route` or `serve` later, with no LLM configured: the LLM's build is reused as it is
    with Router(catalog_file, store=tmp_path, embedder=HashingEmbedder()) as r:
        report = r.index()
        assert r.questions.name == asked
        tool = next(iter(r.catalog.tools()))
        server = next(s for s in r.catalog.servers if s.id == tool.server)
        assert r.questions.questions(server, tool) == LIMA
    assert report.embedded == 0 and len(SEEN) == 7
    # asked for templates, it gets them
    with Router(
        catalog_file, store=tmp_path, embedder=HashingEmbedder(), questions=TemplateQuestions()
    ) as r:
        assert r.index().embedded > 0
