"""The model-training scripts' pure parts: near misses, the tool-style sources and the check
that leaves the evaluation sets out, small toolboxes, the fit head's maths, the cross-encoder's
pairs, groups, metrics and decision.

None of them needs torch (the CI installs no training extra) nor ../shared; the builds read
tiny snapshots made here with git.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from benchmarks import _tool_sources as ts
from benchmarks import cross_fit as cf
from benchmarks import small_toolbox as stb
from benchmarks import train_cross as tc
from benchmarks import train_data
from benchmarks.train_fit import FitModel, features

from toolroute.catalog.models import Tool
from toolroute.embed.onnx import default_tokenizer_file


def _build() -> train_data.Build:
    b = train_data.Build()
    for svc in ("Flights_1", "Flights_2"):  # the same operations under two service versions
        for op in ("SearchOnewayFlight", "ReserveOnewayFlight"):
            b.tool(
                f"sgd/{svc}/{op}",
                "flights",
                op,
                "d",
                group=f"sgd/{svc}",
                key=f"sgd/Flights/{op}",
                source="sgd",
            )
    b.tool(
        "sgd/Alarm_1/AddAlarm",
        "alarm",
        "AddAlarm",
        "d",
        group="sgd/Alarm_1",
        key="sgd/Alarm/AddAlarm",
        source="sgd",
    )
    for tid in list(b.tools):
        b.rows["train"].append({"query": "q", "tool": tid, "source": "sgd"})
    return b


def test_a_near_miss_is_never_the_same_operation_under_another_service_version() -> None:
    b = _build()
    for seed in range(20):
        train_data._near_misses(b, random.Random(seed))
        for row in b.rows["train"]:
            assert b.tools[row["negative"]]["key"] != b.tools[row["tool"]]["key"]
            if row["tool"].startswith("sgd/Flights_1"):
                assert row["negative"].startswith("sgd/Flights_1")  # a sibling, same service


def test_a_one_intent_service_draws_its_near_miss_from_its_source() -> None:
    b = _build()
    train_data._near_misses(b, random.Random(0))
    row = next(r for r in b.rows["train"] if r["tool"] == "sgd/Alarm_1/AddAlarm")
    assert row["negative"] != "sgd/Alarm_1/AddAlarm"


_TS = """
const server = new Server({ name: "demo-server", version: "1.0" });
export const RepoSchema = z.object({ owner: z.string(), repo: z.string() });
export const MergeSchema = RepoSchema.extend({
  pull_number: z.number(),
  ...OptionsSchema.shape,
});
export const OptionsSchema = z.object({ merge_method: z.enum(["merge", "squash"]).optional() });
export const GetSchema = MergeSchema;
const TOOLS = [
  {
    name: "merge_pull_request",
    description: "Merge a pull request",
    inputSchema: zodToJsonSchema(pulls.MergeSchema),
  },
  {
    name: ToolName.GET,
    description:
      "Get a pull request " +
      "by its number",
    inputSchema: zodToJsonSchema(GetSchema) as ToolInput,
  },
  {
    name: "add_reaction",
    description: `Add an emoji reaction`,
    inputSchema: {
      type: "object",
      properties: {
        channel: { type: "string", description: "name: the channel" },
        "reaction": { type: "string" },
      },
    },
  },
];
enum ToolName { GET = "get_pull_request" }
"""

_PY = '''
class GitTools(str, Enum):
    STATUS = "git_status"

class GitStatus(BaseModel):
    repo_path: str
    verbose: bool = False

Tool(
    name=GitTools.STATUS,
    description="""Shows the working tree status.

    Says what is staged.""",
    inputSchema=GitStatus.schema(),
)
Prompt(name="summary", description="A prompt, not a tool", arguments=[])
'''


def test_mcp_tool_definitions_are_read_from_typescript_and_python_sources() -> None:
    tools = ts.mcp_tools("demo", {"index.ts": _TS, "server.py": _PY})
    got = {t.name: (t.description, t.params) for t in tools}
    assert got == {
        "merge_pull_request": (
            "Merge a pull request",
            ("owner", "repo", "merge_method", "pull_number"),
        ),
        "get_pull_request": (
            "Get a pull request by its number",
            ("owner", "repo", "merge_method", "pull_number"),
        ),
        "add_reaction": ("Add an emoji reaction", ("channel", "reaction")),
        "git_status": (
            "Shows the working tree status.\n\n    Says what is staged.",
            ("repo_path", "verbose"),
        ),
    }


def test_a_tool_with_no_request_gets_its_first_sentence_and_a_templated_request() -> None:
    params = ("owner", "repo", "pull_number", "merge_method")
    assert ts._mcp_requests("slack", "slack_post_message", "Post it. Then stop.", ()) == [
        "Post it.",
        "Post message",
    ]
    assert ts._mcp_requests("github", "merge_pull_request", "Merge a PR", params)[1] == (
        "Merge pull request with owner, repo and pull number"
    )


def _tool_build() -> train_data.Build:
    b = train_data.Build()
    for name, desc in (
        ("merge_pull_request", "Merge a pull request"),
        ("get_pull_request", "Get a pull request"),
        ("list_issues", "List issues"),
        ("create_issue", "Create an issue"),
    ):
        b.tool(f"gh/{name}", "github", name, desc, "gh", f"gh/{name}", "mcp_servers")
    b.tool("pg/query", "postgres", "query", "Run a query", "pg", "pg/query", "mcp_servers")
    b.rows["train"] += [
        {"query": "merge it", "tool": "gh/merge_pull_request", "source": "mcp_servers"},
        {"query": "file and list", "tool": "gh/create_issue", "source": "mcp_servers"},
        {"query": "file and list", "tool": "gh/list_issues", "source": "mcp_servers"},
        {"query": "sql", "tool": "pg/query", "source": "mcp_servers"},
    ]
    return b


def test_a_tool_sources_near_miss_is_a_sibling_on_the_same_object_never_a_needed_tool() -> None:
    for seed in range(10):
        b = _tool_build()
        ts.sibling_near_misses(b, random.Random(seed))
        neg = {(r["query"], r["tool"]): r["negative"] for r in b.rows["train"]}
        assert neg[("merge it", "gh/merge_pull_request")] == "gh/get_pull_request"
        assert neg[("file and list", "gh/create_issue")] != "gh/list_issues"  # both needed
        assert neg[("sql", "pg/query")].startswith("gh/")  # alone on its server


def test_a_request_naming_its_siblings_draws_its_near_miss_from_them() -> None:
    b = _tool_build()
    b.siblings["merge it"] = {"gh/list_issues"}
    ts.sibling_near_misses(b, random.Random(0))
    assert b.rows["train"][0]["negative"] == "gh/list_issues"


def test_what_the_evaluation_sets_hold_is_left_out_and_counted() -> None:
    evals = train_data.EvalSets()
    evals.add_tool("other", "Get_Pull_Request", "Get a pull request.")  # a copy, renamed case
    for name in ("create_issue", "list_issues", "merge_pull_request"):
        evals.add_tool("GitHub", name, "reworded")  # the same server, reworded
    evals.add_tool("postgres", "query", "Run one read-only SQL query on the database")
    evals.queries.add("sql")
    b = _tool_build()
    copied = "Run one read only SQL query on the database. More."  # the same first sentence
    b.tool("pg/q2", "postgres", "q2", copied, "pg", "pg/q2", "mcp_servers")
    b.tool("pg/list", "postgres", "list_tables", "List tables", "pg", "pg/list", "mcp_servers")
    b.rows["train"].append({"query": "tables", "tool": "pg/list", "source": "mcp_servers"})
    gone = {"query": "x", "tool": "pg/list", "negative": "gh/create_issue"}  # its near miss goes
    b.rows["train"].append({**gone, "source": "mcp_servers"})
    evals.drop(b, ("mcp_servers",))
    assert sorted(b.tools) == ["pg/list", "pg/query"]  # same name, another description: kept
    assert b.left_out["gh/get_pull_request"] == "copy"
    assert b.left_out["pg/q2"] == "description"
    assert b.dropped["mcp_servers"] == {"copy": 1, "server": 3, "description": 1, "request": 1}
    assert [r["query"] for r in b.rows["train"]] == ["tables"]


_FOUND = "{'name': 'HospitalFinder', 'description': 'Finds hospitals.', 'input_parameters': {}}"


def test_api_bank_gives_each_request_and_search_query_the_api_it_led_to() -> None:
    head = "User: Find a hospital near me.TIME: 2034-04-15 10:00:00\n"
    search = f"API-Request: [ToolSearcher(keywords='hospital finder')]->{_FOUND}\n"
    rows = [
        {"input": head + "Generate API Request: ", "output": "API-Request: [ToolSearcher(k='h')]"},
        {"input": head + search, "output": "API-Request: [HospitalFinder(location='here')]"},
    ]
    got = [(d, q, rec["name"]) for d, q, rec in ts.apibank_lv3(rows)]
    request = "Find a hospital near me."
    assert got == [
        (request, "hospital finder", "HospitalFinder"),
        (request, request, "HospitalFinder"),
    ]
    lines = [
        {"role": "User", "text": "Add a meeting, please"},
        {"role": "API", "api_name": "GetUserToken"},
        {"role": "API", "api_name": "AddAgenda"},
        {"role": "API", "api_name": "AddAlarm"},
    ]
    one = "level-1-given-desc/AddAgenda-GetUserToken-level-1-1.jsonl"
    assert ts.apibank_dialogue(one, lines) == (
        "Add a meeting, please",
        "AddAgenda",
        ["GetUserToken", "AddAlarm"],
    )
    assert ts.apibank_dialogue("x/AddAgenda-AddAlarm-level-2-1.jsonl", lines) is None
    module = (
        'class AddAgenda(API):\n    description = "Adds."\n    input_parameters = {"time": {}}\n'
    )
    assert ts.apibank_module_api(module) == {
        "name": "AddAgenda",
        "description": "Adds.",
        "input_parameters": {"time": {}},
    }


def _snapshot(root: Path, folder: str, files: dict[str, str]) -> None:
    """A bare snapshot ``root/folder/repo`` whose HEAD holds ``files``."""
    git = root / folder / "repo"
    work = root / folder / "work"
    who = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t"}
    env = {**os.environ, **who, "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for path, text in files.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text, encoding="utf-8")
    run = ["git", f"--git-dir={git}", f"--work-tree={work}", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q", "--bare", str(git)], check=True, env=env)
    subprocess.run([*run, "add", "-A"], check=True, env=env)
    subprocess.run([*run, "commit", "-q", "-m", "snapshot"], check=True, env=env)


def _clinc() -> dict[str, str]:
    ops = [(op, obj) for op in ("book", "cancel") for obj in ("flight", "hotel")]
    rows = [[f"please {op} {obj} {i}", f"{op}_{obj}"] for op, obj in ops for i in range(3)]
    data = {"train": rows, "val": rows[:4], "oos_train": [["hello", "oos"]], "oos_val": []}
    domains = {"travel": ["book_flight", "cancel_flight"], "hotels": ["book_hotel", "cancel_hotel"]}
    return {"data/data_full.json": json.dumps(data), "data/domains.json": json.dumps(domains)}


def test_adding_a_tool_source_changes_no_row_of_the_intent_sources(tmp_path: Path) -> None:
    _snapshot(tmp_path, "clinc+oos-eval", _clinc())
    _snapshot(tmp_path, "modelcontextprotocol+servers", {"src/github/index.ts": _TS})
    evals, pins = train_data.EvalSets(), {"mcp_servers": "HEAD"}
    alone = train_data.build(tmp_path, evals, only=("clinc",))
    both = train_data.build(tmp_path, evals, only=("clinc", "mcp_servers"), pins=pins)
    for split, rows in alone.rows.items():
        assert [r for r in both.rows[split] if r["source"] == "clinc"] == rows
    mcp = [r for r in both.rows["train"] if r["source"] == "mcp_servers"]
    assert {r["query"] for r in mcp} >= {
        "Merge a pull request",
        "Add reaction with channel and reaction",
    }
    assert all(r["negative"].startswith("mcp_servers/github/") for r in mcp)
    assert both.commits["mcp_servers@pinned"] == both.commits["mcp_servers"]


def _servers() -> list[dict]:
    return [
        {
            "id": f"Svc_{s}",
            "name": f"Svc_{s}",
            "description": "",
            "tools": [{"name": f"Op{t}", "description": "", "input_schema": {}} for t in range(4)],
        }
        for s in range(6)
    ]


def test_small_toolboxes_hold_the_tool_when_servable_and_no_same_operation_when_removed() -> None:
    servers = _servers()
    turns = {f"Svc_{s}/Op{t}": [f"please op{t}"] for s in range(6) for t in range(4)}
    rows = stb._rows("t", servers, turns, ["hello there"], random.Random(1), 60)
    kinds = {r["kind"] for r in rows}
    assert kinds == {"servable", "removed", "oos"}
    for r in rows:
        box = {(b["server"], b["tool"]) for b in r["toolbox"]}
        assert 1 <= len(box) <= 20
        rel = {(x["server"], x["tool"]) for x in r["relevant"]}
        if r["kind"] == "servable":
            assert rel and rel <= box
        else:
            assert not rel
        if r["kind"] == "removed":
            op = r["query"].split("op")[1]
            assert all(t != f"Op{op}" for _, t in box)


def test_features_are_the_cosine_the_product_and_the_distance() -> None:
    q = np.array([[0.6, 0.8]])
    t = np.array([[1.0, 0.0]])
    assert np.allclose(features(q, t), [[0.6, 0.6, 0.0, 0.4, 0.8]])


@dataclass
class _Tool:
    key: tuple[str, str]
    name: str
    description: str


class _Embedder:
    """Query along x; a tool about 'fit' along x, any other along y."""

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.array(
            [[1.0, 0.0] if i == 0 or "fit" in t else [0.0, 1.0] for i, t in enumerate(texts)]
        )


def _head(theta: float, rerank: bool = False) -> FitModel:
    # one hidden unit reading the cosine: p = sigmoid(10 * cos - 5)
    w1 = np.zeros((5, 1))
    w1[0, 0] = 10.0
    weights = {
        "w1": w1,
        "b1": np.array([0.0]),
        "w2": np.array([[1.0]]),
        "b2": np.array([-5.0]),
        "theta": np.array(theta),
    }
    return FitModel(weights, _Embedder(), rerank=rerank)


def test_the_fit_model_keeps_the_order_or_reorders_by_its_probability() -> None:
    tools = [_Tool(("s", "other"), "other", "x"), _Tool(("s", "fit"), "fit", "x")]
    assert _head(0.5).keep("q", tools, [7, 9]) == [7, 9]
    assert _head(0.5, rerank=True).keep("q", tools, [7, 9]) == [9, 7]


def test_the_fit_model_refuses_when_no_candidate_reaches_its_threshold() -> None:
    tools = [_Tool(("s", "other"), "other", "x"), _Tool(("s", "fit"), "fit", "x")]
    assert _head(0.999).keep("q", tools, [7, 9]) == []
    assert _head(0.5).keep("q", tools[:1], [7]) == []


def test_the_auc_counts_pairs_a_positive_wins_and_ties_half() -> None:
    assert tc.auc(np.array([2.0, 3.0]), np.array([1.0, 0.0])) == 1.0
    assert tc.auc(np.array([0.0]), np.array([1.0])) == 0.0
    assert tc.auc(np.array([1.0, 3.0]), np.array([1.0, 2.0])) == 0.625  # (0.5 + 0 + 1 + 1) / 4


def test_the_refusal_threshold_refuses_at_most_its_share_of_in_scope_requests() -> None:
    best = np.arange(100, dtype=float)  # 0..99
    theta = tc.refusal_threshold(best, 0.02)
    assert (best < theta).sum() == 2
    assert tc.refusal_threshold(best, 0.0) == 0.0


def test_the_cross_fit_stage_refuses_keeps_or_reorders_only_its_top() -> None:
    order = [7, 9, 4, 1]
    z = np.array([-1.0, 2.0, 0.5])  # the logits of the first three
    assert cf.fit_order(z, order, 3.0, rerank=True, decide=True) == []
    assert cf.fit_order(z, order, 3.0, rerank=True, decide=False) == [9, 4, 7, 1]
    assert cf.fit_order(z, order, 1.0, rerank=False, decide=True) == order
    assert cf.fit_order(z, order, 1.0, rerank=True, decide=True) == [9, 4, 7, 1]


def test_the_rank_weight_lets_the_routers_order_outweigh_a_small_logit_margin() -> None:
    z = np.array([1.0, 1.5, -3.0])
    assert cf.fit_order(z, [7, 9, 4], 0.0, rerank=True, decide=False, weight=0.0) == [9, 7, 4]
    assert cf.fit_order(z, [7, 9, 4], 0.0, rerank=True, decide=False, weight=1.0) == [7, 9, 4]


def test_a_pair_is_request_then_tool_document_cut_to_the_token_limit() -> None:
    tok = cf.load_tokenizer(default_tokenizer_file(), max_tokens=12)
    enc = cf.encode_pairs(tok, [("merge it", "github: merge pull request: " + "word " * 40)])
    ids, types, mask = enc["input_ids"][0], enc["token_type_ids"][0], enc["attention_mask"][0]
    assert len(ids) == 12 and mask.all()
    assert list(types[:4]) == [0, 0, 0, 0] and types[4:].all()  # [CLS] merge it [SEP] | doc


def test_a_catalog_tool_document_names_its_server_words_and_parameters() -> None:
    tool = Tool(
        "git-hub",
        "mergePullRequest",
        "Merge a  pull request.",
        {"properties": {"pull_number": {}, "owner": {}}},
    )
    assert (
        cf.tool_doc(tool)
        == "git hub: merge pull request: Merge a pull request.: pull number, owner"
    )


def test_a_training_group_is_the_tool_its_near_miss_and_other_keys_never_the_same_operation() -> (
    None
):
    tools = {
        t: {"key": k}
        for t, k in [("a1", "A"), ("a2", "A"), ("b", "B"), ("c", "C"), ("d", "D"), ("n", "N")]
    }
    rows = [{"query": "q", "tool": "a1", "negative": "n"}, {"query": "chit-chat"}]
    near = [["a2", "n", "a1", "b", "c", "d"], ["c", "d", "b"]]
    groups = tc._groups(rows, near, tools)
    assert groups[0] == ("q", ["a1", "n", "b", "c"], 0)
    assert groups[1] == ("chit-chat", ["c", "d"], -1)
