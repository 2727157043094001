# ruff: noqa: E501  (the plans are scripts as an agent writes them, one statement a line)
"""Code mode's workflow benchmark: multi-step tasks over the reference servers, each run as
round trips (find_tools, then one call_tool per step, every result entering the model's
context) and as find_tools plus one ``execute`` (only the script and its value entering it).

    python -m benchmarks.codemode_workflows [--tasks a,b] [--out FILE] [--json FILE]

Two real `toolroute serve` processes over stdio (official client), each over its own copy of
the same world: a directory of files (server-filesystem), a git repository with a history
(mcp-server-git), a knowledge graph (server-memory), mcp-server-time and server-everything.
The round-trip gateway has code mode off (find_tools answers with JSON schemas, as without code
mode); the code-mode gateway has it on (find_tools answers with Python signatures).

Each task is one plan, written once as the body of an async function that calls
``await call_tool(name, arguments)``: in round trips the harness runs it on the client side,
each call a ``call_tool`` request whose result the model would read; in code mode the same text
is the ``execute`` script, run in the gateway's sandbox. Both must give the same answer.

Tokens entering the context (cl100k, the project's :class:`TokenCounter`): the find_tools
request and answer, then each call_tool request (name and arguments) and result text (round
trips), or the execute request (the script) and its result text (code mode). The same
find_tools query and k serve both ways. Gateway time is the sum of the requests' latencies as
the client saw them.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from mcp import Client, StdioServerParameters

from toolroute.codemode.execute import tool_value
from toolroute.present.tokens import TokenCounter

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable
NPM = REPO / ".toolroute" / "npm" / "node_modules" / "@modelcontextprotocol"
TOOLROUTE = str(Path(PY).with_name("toolroute"))


# -- the world: files, a repository, a knowledge graph (the same in both runs) ---------------


def build_world(root: Path) -> dict[str, str]:
    """Files under ``root/files``, a git repository at ``root/repo``, a memory graph file;
    deterministic (seeded), so both runs see the same world."""
    rng = random.Random(37)
    files = root / "files"
    for d in ("notes", "data", "logs", "src", "docs", "config", "old"):
        (files / d).mkdir(parents=True, exist_ok=True)
    for i, topic in enumerate(("release", "hiring", "infra", "budget")):
        lines = [f"# {topic}"]
        for j in range(6 + i):
            mark = "x" if rng.random() < 0.4 else " "
            lines.append(f"- [{mark}] {topic} item {j}")
        (files / "notes" / f"{topic}.md").write_text("\n".join(lines) + "\n")
    regions = ["north", "south", "east", "west", "central"]
    rows = ["region,product,amount"]
    rows += [
        f"{rng.choice(regions)},p{rng.randint(1, 12)},{rng.randint(5, 500)}" for _ in range(400)
    ]
    (files / "data" / "sales.csv").write_text("\n".join(rows) + "\n")
    codes = ["E101", "E202", "E303", "E404", "E505"]
    weights = [5, 3, 8, 1, 2]
    log = []
    for i in range(3000):
        if rng.random() < 0.08:
            code = rng.choices(codes, weights)[0]
            log.append(f"2026-11-01T10:{i // 60 % 60:02d}:{i % 60:02d} ERROR {code} request failed")
        else:
            log.append(f"2026-11-01T10:{i // 60 % 60:02d}:{i % 60:02d} INFO handled request {i}")
    (files / "logs" / "app.log").write_text("\n".join(log) + "\n")
    for name in ("alpha", "beta", "gamma", "delta"):
        body = [f'"""The {name} module."""', ""]
        for k in range(rng.randint(3, 7)):
            body += [
                f"def {name}_{k}(x):",
                f"    # TODO: check {name} {k}" if k % 2 else "    pass",
                "",
            ]
        for k in range(rng.randint(1, 4)):
            body += [f"def test_{name}_{k}():", f"    assert {name}_{k}(1) is None", ""]
        (files / "src" / f"{name}.py").write_text("\n".join(body))
    words = [
        "the",
        "gateway",
        "routes",
        "each",
        "need",
        "to",
        "a",
        "few",
        "tools",
        "and",
        "keeps",
        "the",
        "context",
        "small",
    ]
    for c in range(1, 6):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(800, 2400)))
        (files / "docs" / f"chapter{c}.md").write_text(f"# Chapter {c}\n\n{text}\n")
    settings = {"db": {"host": "db.internal", "port": 5433}, "workers": 6, "features": ["a", "b"]}
    (files / "config" / "settings.json").write_text(json.dumps(settings, indent=2))
    for i in range(5):
        (files / "old" / f"report-{2019 + i}.txt").write_text(f"report {2019 + i}\n" * (10 + i))

    repo = root / "repo"
    repo.mkdir()
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_SYSTEM": "/dev/null",
    }
    git = ["git", "-C", str(repo)]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True, env=env)
    authors = [
        ("Ada", "ada@example.org"),
        ("Grace", "grace@example.org"),
        ("Linus", "linus@example.org"),
    ]
    for n in range(14):
        name, mail = authors[rng.choice([0, 0, 1, 1, 1, 2])]
        path = repo / f"module{n % 4}.py"
        path.write_text(
            path.read_text() + f"value_{n} = {n}\n" if path.exists() else f"value_{n} = {n}\n"
        )
        (repo / "CHANGES.md").write_text(f"change {n}\n" * (n + 1))
        kind = "fix" if n % 3 == 0 else "feat"
        stamp = f"2026-10-{n + 1:02d}T12:00:00+00:00"
        e = {
            **env,
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": mail,
            "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": mail,
            "GIT_AUTHOR_DATE": stamp,
            "GIT_COMMITTER_DATE": stamp,
        }
        subprocess.run([*git, "add", "-A"], check=True, env=e)
        subprocess.run(
            [*git, "commit", "-q", "-m", f"{kind}: change {n} in module{n % 4}"], check=True, env=e
        )
    subprocess.run([*git, "branch", "release"], check=True, env=env)
    (repo / "module0.py").write_text((repo / "module0.py").read_text() + "pending = True\n")

    graph = []
    people = [
        ("Alice", "engineer", "Acme"),
        ("Bob", "designer", "Acme"),
        ("Carol", "manager", "Acme"),
        ("Dan", "engineer", "Globex"),
        ("Eve", "analyst", "Globex"),
        ("Frank", "engineer", "Initech"),
    ]
    for person, role, company in people:
        graph.append(
            {
                "type": "entity",
                "name": person,
                "entityType": "person",
                "observations": [f"role: {role}", f"joined {2015 + len(person)}"],
            }
        )
        graph.append(
            {"type": "relation", "from": person, "to": company, "relationType": "works_at"}
        )
    for company, city in (("Acme", "Berlin"), ("Globex", "Lisbon"), ("Initech", "Austin")):
        graph.append(
            {
                "type": "entity",
                "name": company,
                "entityType": "company",
                "observations": [f"based in {city}"],
            }
        )
    graph.append({"type": "relation", "from": "Carol", "to": "Alice", "relationType": "manages"})
    graph.append({"type": "relation", "from": "Carol", "to": "Bob", "relationType": "manages"})
    memory = root / "memory.jsonl"
    memory.write_text("\n".join(json.dumps(g) for g in graph) + "\n")
    return {"FILES": str(files), "REPO": str(repo), "MEMORY": str(memory)}  # fmt: skip


def servers(world: dict[str, str]) -> dict[str, Any]:
    return {
        "filesystem": {"command": "node", "args": [str(NPM / "server-filesystem/dist/index.js"), world["FILES"], world["REPO"]]},
        "git": {"command": PY, "args": ["-m", "mcp_server_git", "--repository", world["REPO"]]},
        "memory": {"command": "node", "args": [str(NPM / "server-memory/dist/index.js")], "env": {"MEMORY_FILE_PATH": world["MEMORY"]}},
        "time": {"command": PY, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
        "everything": {"command": "node", "args": [str(NPM / "server-everything/dist/index.js")]},
    }  # fmt: skip


# -- the tasks: one plan each, run both ways --------------------------------------------------


@dataclass(frozen=True, slots=True)
class Task:
    id: str
    query: str
    """What the agent asks find_tools (once, the same both ways)."""
    k: int
    plan: str
    """The body of ``async def plan(call_tool)``; its last expression is the answer.
    ``%FILES%`` and ``%REPO%`` stand for the world's directories."""


def _t(id: str, query: str, k: int, plan: str) -> Task:
    return Task(id, query, k, plan.strip() + "\n")


TASKS = [
    _t("sales_top_region", "read a text file", 3, """
csv = (await call_tool("filesystem__read_text_file", {"path": "%FILES%/data/sales.csv"}))["content"]
totals = {}
for line in csv.splitlines()[1:]:
    region, product, amount = line.split(",")
    totals[region] = totals.get(region, 0) + int(amount)
best = max(totals, key=lambda r: totals[r])
[best, totals[best]]
"""),
    _t("open_todos_per_note", "list a directory and read the text files in it", 5, """
listing = (await call_tool("filesystem__list_directory", {"path": "%FILES%/notes"}))["content"]
names = [line[7:] for line in listing.splitlines() if line.startswith("[FILE] ")]
open_items = {}
for name in names:
    body = (await call_tool("filesystem__read_text_file", {"path": "%FILES%/notes/" + name}))["content"]
    open_items[name] = sum(1 for line in body.splitlines() if line.startswith("- [ ]"))
open_items
"""),
    _t("todo_comments", "search files by name pattern and read each file", 6, """
found = (await call_tool("filesystem__search_files", {"path": "%FILES%/src", "pattern": "**/*.py"}))["content"]
todos = {}
for path in found.splitlines():
    src = (await call_tool("filesystem__read_text_file", {"path": path}))["content"]
    todos[path.split("/")[-1]] = sum(1 for line in src.splitlines() if "TODO" in line)
todos
"""),
    _t("test_function_count", "search files by pattern and read multiple files at once", 6, """
found = (await call_tool("filesystem__search_files", {"path": "%FILES%/src", "pattern": "**/*.py"}))["content"]
both = (await call_tool("filesystem__read_multiple_files", {"paths": found.splitlines()}))["content"]
both.count("def test_")
"""),
    _t("top_error_codes", "read a log file", 3, """
import re
log = (await call_tool("filesystem__read_text_file", {"path": "%FILES%/logs/app.log"}))["content"]
counts = {}
for code in re.findall(r"ERROR (E\\d+)", log):
    counts[code] = counts.get(code, 0) + 1
sorted(counts.items(), key=lambda kv: -kv[1])[:3]
"""),
    _t("worst_error_into_memory", "read a log file and store an entity in the knowledge graph memory", 8, """
import re
log = (await call_tool("filesystem__read_text_file", {"path": "%FILES%/logs/app.log"}))["content"]
counts = {}
for code in re.findall(r"ERROR (E\\d+)", log):
    counts[code] = counts.get(code, 0) + 1
worst = max(counts, key=lambda c: counts[c])
await call_tool("memory__create_entities", {"entities": [
    {"name": worst, "entityType": "error_code", "observations": [f"seen {counts[worst]} times"]}]})
opened = await call_tool("memory__open_nodes", {"names": [worst]})
[e["observations"] for e in opened["entities"]]
"""),
    _t("longest_chapter", "list a directory and read the text files in it", 5, """
listing = (await call_tool("filesystem__list_directory", {"path": "%FILES%/docs"}))["content"]
words = {}
for line in listing.splitlines():
    name = line[7:]
    text = (await call_tool("filesystem__read_text_file", {"path": "%FILES%/docs/" + name}))["content"]
    words[name] = len(text.split())
best = max(words, key=lambda n: words[n])
[best, words[best]]
"""),
    _t("db_port_to_file", "read a text file and write a file", 5, """
import json
settings = json.loads((await call_tool("filesystem__read_text_file", {"path": "%FILES%/config/settings.json"}))["content"])
port = settings["db"]["port"]
await call_tool("filesystem__write_file", {"path": "%FILES%/config/port.txt", "content": str(port)})
back = (await call_tool("filesystem__read_text_file", {"path": "%FILES%/config/port.txt"}))["content"]
[port, back]
"""),
    _t("archive_old_reports", "create a directory, move files into it and list a directory", 6, """
await call_tool("filesystem__create_directory", {"path": "%FILES%/old/archive"})
listing = (await call_tool("filesystem__list_directory", {"path": "%FILES%/old"}))["content"]
moved = []
for line in listing.splitlines():
    if line.startswith("[FILE] report-"):
        name = line[7:]
        await call_tool("filesystem__move_file", {"source": "%FILES%/old/" + name, "destination": "%FILES%/old/archive/" + name})
        moved.append(name)
after = (await call_tool("filesystem__list_directory", {"path": "%FILES%/old/archive"}))["content"]
[len(moved), len(after.splitlines())]
"""),
    _t("largest_archived_report", "list a directory and get file info such as size", 5, """
listing = (await call_tool("filesystem__list_directory", {"path": "%FILES%/old/archive"}))["content"]
sizes = {}
for line in listing.splitlines():
    name = line[7:]
    info = (await call_tool("filesystem__get_file_info", {"path": "%FILES%/old/archive/" + name}))["content"]
    sizes[name] = int(info.splitlines()[0].split(": ")[1])
best = max(sizes, key=lambda n: sizes[n])
[best, sizes[best]]
"""),
    _t("top_git_author", "show the git commit log", 3, """
log = await call_tool("git__git_log", {"repo_path": "%REPO%", "max_count": 50})
authors = {}
for line in log.splitlines():
    if line.startswith("Author: "):
        authors[line[8:]] = authors.get(line[8:], 0) + 1
sorted(authors.items(), key=lambda kv: (-kv[1], kv[0]))
"""),
    _t("files_touched_by_fixes", "git commit log and show the changes of a commit", 5, """
log = await call_tool("git__git_log", {"repo_path": "%REPO%", "max_count": 50})
commits, current = [], None
for line in log.splitlines():
    if line.startswith("Commit: "):
        current = line[8:]
    if line.startswith("Message: fix"):
        commits.append(current)
files = set()
for sha in commits:
    shown = await call_tool("git__git_show", {"repo_path": "%REPO%", "revision": sha})
    files.update(line[6:] for line in shown.splitlines() if line.startswith("+++ b/"))
[len(commits), sorted(files)]
"""),
    _t("lines_added_last_three", "git commit log and show the changes of a commit", 5, """
log = await call_tool("git__git_log", {"repo_path": "%REPO%", "max_count": 3})
shas = [line[8:] for line in log.splitlines() if line.startswith("Commit: ")]
added = 0
for sha in shas:
    shown = await call_tool("git__git_show", {"repo_path": "%REPO%", "revision": sha})
    added += sum(1 for line in shown.splitlines() if line.startswith("+") and not line.startswith("+++"))
added
"""),
    _t("branches_and_changes", "git branches, working tree status and unstaged changes", 6, """
branches = await call_tool("git__git_branch", {"repo_path": "%REPO%", "branch_type": "local"})
status = await call_tool("git__git_status", {"repo_path": "%REPO%"})
diff = await call_tool("git__git_diff_unstaged", {"repo_path": "%REPO%"})
[sorted(b.strip(" *") for b in branches.splitlines()), [l.split()[-1] for l in status.splitlines() if "modified:" in l],
 [l for l in diff.splitlines() if l.startswith("+") and not l.startswith("+++")]]
"""),
    _t("acme_roles", "search the knowledge graph and open nodes", 4, """
found = await call_tool("memory__search_nodes", {"query": "Acme"})
people = sorted(r["from"] for r in found["relations"] if r["to"] == "Acme" and r["relationType"] == "works_at")
opened = await call_tool("memory__open_nodes", {"names": people})
{e["name"]: [o for o in e["observations"] if o.startswith("role")][0][6:] for e in opened["entities"]}
"""),
    _t("carols_reports", "open nodes in the knowledge graph memory", 4, """
carol = await call_tool("memory__open_nodes", {"names": ["Carol"]})
graph = await call_tool("memory__read_graph", {})
reports = sorted(r["to"] for r in graph["relations"] if r["from"] == "Carol" and r["relationType"] == "manages")
opened = await call_tool("memory__open_nodes", {"names": reports})
[carol["entities"][0]["observations"][0], {e["name"]: e["observations"][1] for e in opened["entities"]}]
"""),
    _t("new_team_at_initech", "create entities and relations in the knowledge graph and search it", 6, """
team = ["Xia", "Yan", "Zed"]
await call_tool("memory__create_entities", {"entities": [{"name": n, "entityType": "person", "observations": ["role: engineer"]} for n in team]})
await call_tool("memory__create_relations", {"relations": [{"from": n, "to": "Initech", "relationType": "works_at"} for n in team]})
found = await call_tool("memory__search_nodes", {"query": "Initech"})
sorted(r["from"] for r in found["relations"] if r["to"] == "Initech")
"""),
    _t("meeting_times", "convert a time between timezones", 3, """
times = {}
for zone in ["America/New_York", "Asia/Tokyo", "Australia/Sydney", "Asia/Kolkata", "America/Los_Angeles"]:
    r = await call_tool("time__convert_time", {"source_timezone": "Europe/London", "time": "14:00", "target_timezone": zone})
    times[zone] = r["target"]["datetime"][11:16]
times
"""),
    _t("sum_of_squares", "add two numbers get the sum", 3, """
total = 0
for n in range(1, 7):
    said = await call_tool("everything__get-sum", {"a": total, "b": n * n})
    total = int(said.rstrip(".").split()[-1])
total
"""),
    _t("echo_three", "echo a message back", 3, """
out = []
for word in ["alpha", "beta", "gamma"]:
    out.append(await call_tool("everything__echo", {"message": word}))
out
"""),
    _t("git_authors_into_memory", "git commit log and create entities in the knowledge graph memory", 8, """
log = await call_tool("git__git_log", {"repo_path": "%REPO%", "max_count": 50})
authors = sorted({line[8:] for line in log.splitlines() if line.startswith("Author: ")})
await call_tool("memory__create_entities", {"entities": [{"name": a + " (git)", "entityType": "author", "observations": ["commits in repo"]} for a in authors]})
graph = await call_tool("memory__read_graph", {})
sorted(e["name"] for e in graph["entities"] if e["entityType"] == "author")
"""),
    _t("largest_module_and_its_history", "list a directory with file sizes and show the git commit log", 8, """
listing = (await call_tool("filesystem__list_directory_with_sizes", {"path": "%REPO%", "sortBy": "size"}))["content"]
modules = [line.split()[1] for line in listing.splitlines() if line.startswith("[FILE]") and line.split()[1].startswith("module")]
log = await call_tool("git__git_log", {"repo_path": "%REPO%", "max_count": 50})
touching = sum(1 for line in log.splitlines() if line.startswith("Message: ") and line.endswith(modules[0][:-3]))
[modules[0], touching]
"""),
]  # fmt: skip


# -- running a task both ways ------------------------------------------------------------------


def _text(result: types.CallToolResult) -> str:
    """What the model reads of a result (its text content)."""
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


def host_plan(body: str) -> Callable[[Any], Awaitable[Any]]:
    """``body`` as ``async def plan(call_tool)`` on the client side (the round-trip agent):
    its last expression is returned."""
    tree = ast.parse(body)
    last = tree.body[-1]
    if isinstance(last, ast.Expr):
        tree.body[-1] = ast.Return(value=last.value)
    fn = ast.AsyncFunctionDef(
        name="plan",
        args=ast.arguments(
            posonlyargs=[], args=[ast.arg(arg="call_tool")], kwonlyargs=[], kw_defaults=[],
            defaults=[],
        ),
        body=tree.body, decorator_list=[], returns=None, type_params=[],
    )  # fmt: skip
    module = ast.fix_missing_locations(ast.Module(body=[fn], type_ignores=[]))
    scope: dict[str, Any] = {}
    exec(compile(module, "<plan>", "exec"), scope)  # the benchmark's own plans, not input
    return scope["plan"]  # type: ignore[no-any-return]


@dataclass
class Row:
    task: str
    mode: str
    calls: int = 0
    tokens: int = 0
    find_tokens: int = 0
    """Of ``tokens``, find_tools' request and answer."""
    gateway_ms: float = 0.0
    answer: Any = None
    error: str | None = None


async def run_mode(
    world: dict[str, str], root: Path, code_mode: bool, tasks: list[Task]
) -> list[Row]:
    """Every task through one `toolroute serve` (stdio) over ``world``."""
    cfg = root / "servers.json"
    cfg.write_text(json.dumps({"mcpServers": servers(world)}))
    toml = [f'[toolroute]\nstore = "{root / "store"}"', f"code_mode = {str(code_mode).lower()}"]
    (root / "toolroute.toml").write_text("\n".join(toml) + "\n[code_mode]\nwall_s = 60\n")
    params = StdioServerParameters(
        command=TOOLROUTE, args=["serve", "--config", str(cfg)], env=dict(os.environ)
    )
    tokens = TokenCounter()
    rows = []
    async with Client(params) as c:  # type: ignore[arg-type]
        for task in tasks:
            row = Row(task.id, "code" if code_mode else "round trips")
            body = task.plan.replace("%FILES%", world["FILES"]).replace("%REPO%", world["REPO"])

            async def request(
                tool: str, arguments: dict[str, Any], row: Row = row
            ) -> types.CallToolResult:
                t = time.perf_counter()
                r = await c.call_tool(tool, arguments)
                row.gateway_ms += (time.perf_counter() - t) * 1000
                row.tokens += tokens(
                    json.dumps({"name": tool, "arguments": arguments}, ensure_ascii=False)
                )
                row.tokens += tokens(_text(r))
                return r

            found = await request("find_tools", {"query": task.query, "k": task.k})
            row.find_tokens = row.tokens
            try:
                if code_mode:
                    r = await request("execute", {"code": body})
                    out = r.structured_content or {}
                    if r.is_error:
                        raise RuntimeError(_text(r)[:300])
                    row.calls, row.answer = out["calls"], out["result"]
                else:

                    async def call_tool(
                        name: str, arguments: dict[str, Any], row: Row = row
                    ) -> Any:
                        row.calls += 1
                        r = await request("call_tool", {"name": name, "arguments": arguments})
                        if r.is_error:
                            raise RuntimeError(f"{name}: {_text(r)[:300]}")
                        return tool_value(r)

                    row.answer = json.loads(json.dumps(await host_plan(body)(call_tool)))
            except Exception as e:  # a failed task is a row of the report, not the end of it
                names = [x["name"] for x in (found.structured_content or {}).get("candidates", [])]
                row.error = f"{e} (find_tools gave {names})"
            rows.append(row)
    return rows


def report(rows: list[Row], tasks: list[Task]) -> tuple[str, dict[str, Any]]:
    by = {(r.task, r.mode): r for r in rows}
    lines = [
        "# Code mode: the workflow benchmark",
        "",
        "`python -m benchmarks.codemode_workflows`: each task once as round trips (find_tools, "
        "then call_tool per step) and once as find_tools + one execute, through real "
        "`toolroute serve` processes (stdio) over server-filesystem, mcp-server-git, "
        "server-memory, mcp-server-time and server-everything. Tokens: cl100k of every request "
        "the model writes and every result text it reads (find_tools included); gateway ms: "
        "the requests' latencies as the client saw them.",
        "",
        "| task | calls | tokens, round trips | tokens, code mode | saved | of which find_tools "
        "(round trips / code mode) | same answer | gateway ms, round trips | gateway ms, code mode |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    summary: dict[str, Any] = {"tasks": []}
    saved3 = []
    for t in tasks:
        rt, cm = by[(t.id, "round trips")], by[(t.id, "code")]
        same = rt.error is None and cm.error is None and rt.answer == cm.answer
        saved = 1 - cm.tokens / rt.tokens if rt.tokens else 0.0
        if rt.calls >= 3:
            saved3.append(saved)
        lines.append(
            f"| {t.id} | {rt.calls} | {rt.tokens} | {cm.tokens} | {saved:.0%} | "
            f"{rt.find_tokens} / {cm.find_tokens} | "
            f"{'yes' if same else 'NO'} | {rt.gateway_ms:.0f} | {cm.gateway_ms:.0f} |"
        )
        summary["tasks"].append({
            "task": t.id, "calls": rt.calls, "tokens_round_trips": rt.tokens,
            "tokens_code_mode": cm.tokens, "saved": round(saved, 4), "same_answer": same,
            "find_tools_tokens_round_trips": rt.find_tokens,
            "find_tools_tokens_code_mode": cm.find_tokens,
            "gateway_ms_round_trips": round(rt.gateway_ms, 1),
            "gateway_ms_code_mode": round(cm.gateway_ms, 1), "answer": cm.answer,
            "errors": [e for e in (rt.error, cm.error) if e],
        })  # fmt: skip
    total_rt = sum(by[(t.id, "round trips")].tokens for t in tasks)
    total_cm = sum(by[(t.id, "code")].tokens for t in tasks)
    same_all = all(x["same_answer"] for x in summary["tasks"])
    summary.update(
        tokens_round_trips=total_rt,
        tokens_code_mode=total_cm,
        saved_total=round(1 - total_cm / total_rt, 4),
        tasks_with_3_calls=len(saved3),
        saved_min_3_calls=round(min(saved3), 4) if saved3 else None,
        saved_median_3_calls=round(statistics.median(saved3), 4) if saved3 else None,
        all_same=same_all,
    )
    lines += [
        f"| **all {len(tasks)}** | | **{total_rt}** | **{total_cm}** | "
        f"**{summary['saved_total']:.0%}** | | {'all' if same_all else 'NOT all'} | | |",
        "",
        f"Tasks of three or more calls: {len(saved3)}; tokens saved per task: minimum "
        f"{summary['saved_min_3_calls']:.0%}, median {summary['saved_median_3_calls']:.0%}.",
    ]
    errors = [(x["task"], e) for x in summary["tasks"] for e in x["errors"]]
    if errors:
        lines += ["", "Errors:", *(f"- {t}: {e}" for t, e in errors)]
    return "\n".join(lines) + "\n", summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", help="comma-separated task ids (default: all)")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks/results/codemode_workflows.md")
    ap.add_argument(
        "--json", type=Path, default=REPO / "benchmarks/results/codemode_workflows.json"
    )
    a = ap.parse_args()
    tasks = [t for t in TASKS if not a.tasks or t.id in a.tasks.split(",")]

    async def both() -> list[Row]:
        rows = []
        for code_mode in (False, True):
            root = Path(tempfile.mkdtemp(prefix="cmw-"))
            world = build_world(root)
            with anyio.fail_after(900):
                rows += await run_mode(world, root, code_mode, tasks)
        return rows

    text, summary = report(anyio.run(both), tasks)
    a.out.write_text(text)
    a.json.write_text(json.dumps(summary, indent=1, ensure_ascii=False))
    print(text)


if __name__ == "__main__":
    main()
