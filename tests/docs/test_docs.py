"""The README and the docs site say only what runs.

Every fenced code block in README.md and docs/*.md is either checked here or marked as not
run by an HTML comment on the line right above its fence, with the reason:
``<!-- not run: needs a PostgreSQL server -->`` (or ``<!-- run by .ci/newcomer … -->`` for a
block another script runs). Unmarked blocks are checked by their language:

- ``python``: run verbatim, each in a fresh interpreter, against a throwaway store;
- ``json``: parsed; an ``mcpServers`` file is loaded by toolroute's own config loader, a
  catalog (``{"servers": [...]}``) by its catalog loader;
- ``toml``: loaded as a ``toolroute.toml`` beside a servers file, by the config loader;
- anything else (``bash``, ``text``, …) must be marked.

The commands tables (a table whose first column is ``command``) are checked against
``toolroute --help`` and each command's ``--help``, both ways for the README's.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import REPO
from toolroute.catalog import catalog_from_dict
from toolroute.cli import main
from toolroute.config import load_config

README = REPO / "README.md"
PAGES = [README, *sorted((REPO / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(?P<info>[^`]*)$")
MARK = re.compile(r"^<!--\s*(not run:|run by )\s*\S.*-->$")
# Servers the toml and json examples of the docs name; never started by these tests.
EXAMPLE_SERVERS = ("time", "git", "memory", "search")
SNIPPET_TIMEOUT_S = 300


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    lang: str
    code: str
    marked: bool

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(path: Path, name: str | None = None) -> list[Block]:
    """Every fenced block of a Markdown file, with its language and whether it is marked."""
    lines = path.read_text(encoding="utf-8").splitlines()
    name = name or str(path.relative_to(REPO))
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start = i
        j = i + 1
        while j < len(lines) and lines[j] != "```":
            j += 1
        assert j < len(lines), f"{name}:{start + 1}: a code block is never closed"
        k = start - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        marked = k >= 0 and bool(MARK.match(lines[k].strip()))
        lang = m.group("info").strip().split(" ")[0]
        out.append(Block(name, start + 1, lang, "\n".join(lines[start + 1 : j]) + "\n", marked))
        i = j + 1
    return out


ALL_BLOCKS = [b for page in PAGES for b in blocks(page)]
PYTHON = [b for b in ALL_BLOCKS if b.lang == "python" and not b.marked]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One store for every snippet: the demo catalog is embedded once."""
    return tmp_path_factory.mktemp("store")


def run_python(code: str, store: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TOOLROUTE_STORE": str(store)}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=SNIPPET_TIMEOUT_S,
    )


def test_every_code_block_is_checked_here_or_marked_as_not_run() -> None:
    unchecked = [
        f"{b.id}: a ```{b.lang or '(no language)'} block with no <!-- not run: … --> marker"
        for b in ALL_BLOCKS
        if not b.marked and b.lang not in ("python", "json", "toml")
    ]
    assert unchecked == []


def test_the_block_reader_sees_markers_and_languages(tmp_path: Path) -> None:
    page = tmp_path / "probe.md"
    page.write_text(
        "<!-- not run: a probe -->\n```bash\nrm -rf /\n```\n\n```python\nprint(1)\n```\n",
        encoding="utf-8",
    )
    found = blocks(page, "probe.md")
    assert [(b.lang, b.marked, b.line) for b in found] == [("bash", True, 2), ("python", False, 6)]


def test_the_readme_has_one_python_snippet_and_it_uses_the_shipped_demo_catalog() -> None:
    readme_python = [b for b in PYTHON if b.page == "README.md"]
    assert len(readme_python) == 1
    assert "demo_catalog()" in readme_python[0].code


def test_the_readme_python_snippet_runs_as_written(store: Path, tmp_path: Path) -> None:
    (snippet,) = [b for b in PYTHON if b.page == "README.md"]
    done = run_python(snippet.code, store, tmp_path)
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0].split()
    assert first[:2] == ["time", "get_current_time"], done.stdout


@pytest.mark.parametrize("block", [b for b in PYTHON if b.page != "README.md"], ids=lambda b: b.id)
def test_every_python_block_of_the_docs_runs(block: Block, store: Path, tmp_path: Path) -> None:
    done = run_python(block.code, store, tmp_path)
    assert done.returncode == 0, f"{block.id}\n{done.stderr}"


def _servers_file(tmp_path: Path) -> Path:
    path = tmp_path / "servers.json"
    entries = {name: {"command": "true"} for name in EXAMPLE_SERVERS}
    path.write_text(json.dumps({"mcpServers": entries}), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "block", [b for b in ALL_BLOCKS if b.lang == "json" and not b.marked], ids=lambda b: b.id
)
def test_every_json_block_is_a_file_toolroute_loads(block: Block, tmp_path: Path) -> None:
    data = json.loads(block.code)
    path = tmp_path / "example.json"
    path.write_text(block.code, encoding="utf-8")
    if "mcpServers" in data:
        config = load_config(path)
        assert set(config.servers) == set(data["mcpServers"])
    elif isinstance(data.get("servers"), list):
        assert catalog_from_dict(data).tool_count >= 1
    else:  # another client's file format (VS Code): at least well-formed JSON with servers
        assert data.get("servers"), block.id


@pytest.mark.parametrize(
    "block", [b for b in ALL_BLOCKS if b.lang == "toml" and not b.marked], ids=lambda b: b.id
)
def test_every_toml_block_is_a_settings_file_toolroute_loads(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # tokens come from the environment: each variable the example names gets its own token
    for var in re.findall(r'_env\s*=\s*"([A-Z0-9_]+)"', block.code):
        monkeypatch.setenv(var, f"token-of-{var}".ljust(32, "x"))
    settings = tmp_path / "toolroute.toml"
    settings.write_text(block.code, encoding="utf-8")
    load_config(_servers_file(tmp_path), settings)


def _help(*args: str) -> str:
    result = CliRunner().invoke(main, [*args, "--help"])
    assert result.exit_code == 0, result.output
    return result.output


def _listed_commands() -> set[str]:
    text = _help()
    body = text.split("Commands:", 1)[1]
    return {line.split()[0] for line in body.splitlines() if line.startswith("  ")}


def command_rows(path: Path) -> list[tuple[str, str]]:
    """(command name, first cell) of every row of every commands table in a page."""
    rows, in_table = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if line.startswith("| command |"):
            in_table = True
        elif in_table and line.startswith("|") and not line.startswith("|---"):
            m = re.match(r"`toolroute (?P<cmd>[a-z-]+)(?P<rest>[^`]*)`", cells[0])
            assert m, f"{path.name}: {cells[0]!r} does not name a toolroute command"
            rows.append((m.group("cmd"), cells[0]))
        elif not line.startswith("|"):
            in_table = False
    return rows


def test_the_readme_commands_table_lists_exactly_the_commands_of_toolroute_help() -> None:
    assert {cmd for cmd, _ in command_rows(README)} == _listed_commands()


@pytest.mark.parametrize(
    "page", [p for p in PAGES if command_rows(p)], ids=lambda p: str(p.relative_to(REPO))
)
def test_every_option_a_commands_table_names_is_in_that_command_help(page: Path) -> None:
    listed = _listed_commands()
    for cmd, cell in command_rows(page):
        assert cmd in listed, f"{page.name}: toolroute {cmd} is not a command"
        text = _help(cmd)
        for option in re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", cell):
            assert re.search(rf"(?<![\w-]){re.escape(option)}\b", text), (
                f"{page.name}: `toolroute {cmd}` has no {option}"
            )


def test_the_readme_is_short_and_speaks_to_users_not_to_its_authors() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    assert re.findall(r"\b(?:seeds?|sessions?|issues?)\b", text, flags=re.IGNORECASE) == []
