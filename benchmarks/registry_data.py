"""Build the registry listing the registry tests and ``benchmarks.registry_suggest`` serve:
real ``server.json`` entries, in the current schema (``server.schema.json`` of 2025-12-11).

Sources (modelcontextprotocol/registry, MIT):

- ``data/seed.json`` (commit c71d4e8): entries already in the current schema, kept as they
  are, including one the schema refuses (``kbag``: no namespace), which a client must leave
  out;
- ``data/seed_2025_05_16.json`` (commit 81e5174): the registry's first seed, in its older
  snake_case form; each entry with an npm or PyPI package at a pinned version and a
  description the current schema accepts (at most 100 characters) is rewritten field by field
  into the current names (``registry_name`` → ``registryType``, ``name`` → ``identifier``,
  ``environment_variables`` → ``environmentVariables``); nothing else is changed;
- two entries an organization would publish in its own registry for the reference servers
  toolroute's tests run (PyPI ``mcp-server-time`` and npm ``@modelcontextprotocol/server-memory``,
  both pinned to the versions ``requirements.lock`` and ``.ci/run`` install), their
  descriptions the packages' own and their tools listed as publisher-provided ``_meta``; the
  organization requires the memory server's ``MEMORY_FILE_PATH`` (where its graph is kept).

    python -m benchmarks.registry_data /path/to/seed_2025_05_16.json /path/to/seed.json

writes ``benchmarks/registry/servers.json`` (a ``/v0.1/servers`` listing's ``servers``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).parent / "registry" / "servers.json"
SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
OFFICIAL = "io.modelcontextprotocol.registry/official"
PUBLISHER = "io.modelcontextprotocol.registry/publisher-provided"

REFERENCE = [
    {
        "$schema": SCHEMA,
        "name": "io.github.modelcontextprotocol/time",
        "title": "Time",
        "description": "A Model Context Protocol server providing tools for time queries and "
        "timezone conversions",
        "repository": {
            "url": "https://github.com/modelcontextprotocol/servers",
            "source": "github",
        },
        "version": "2026.10.19",
        "packages": [
            {
                "registryType": "pypi",
                "registryBaseUrl": "https://pypi.org",
                "identifier": "mcp-server-time",
                "version": "2026.10.19",
                "runtimeHint": "uvx",
                "transport": {"type": "stdio"},
                "packageArguments": [{"type": "named", "name": "--local-timezone", "value": "UTC"}],
            }
        ],
        "_meta": {
            PUBLISHER: {
                "tools": [
                    {
                        "name": "get_current_time",
                        "description": "Get current time in a specific timezone",
                    },
                    {"name": "convert_time", "description": "Convert time between timezones"},
                ]
            }
        },
    },
    {
        "$schema": SCHEMA,
        "name": "io.github.modelcontextprotocol/memory",
        "title": "Knowledge Graph Memory",
        "description": "MCP server for enabling memory for Claude through a knowledge graph",
        "repository": {
            "url": "https://github.com/modelcontextprotocol/servers",
            "source": "github",
        },
        "version": "2026.8.31",
        "packages": [
            {
                "registryType": "npm",
                "registryBaseUrl": "https://registry.npmjs.org",
                "identifier": "@modelcontextprotocol/server-memory",
                "version": "2026.8.31",
                "runtimeHint": "npx",
                "transport": {"type": "stdio"},
                "environmentVariables": [
                    {
                        "name": "MEMORY_FILE_PATH",
                        "description": "Path to the memory storage JSONL file",
                        "isRequired": True,
                    }
                ],
            }
        ],
        "_meta": {
            PUBLISHER: {
                "tools": [
                    {
                        "name": "create_entities",
                        "description": "Create multiple new entities in the knowledge graph",
                    },
                    {
                        "name": "create_relations",
                        "description": "Create multiple new relations between entities in "
                        "the knowledge graph",
                    },
                    {
                        "name": "add_observations",
                        "description": "Add new observations to existing entities in the "
                        "knowledge graph",
                    },
                    {
                        "name": "search_nodes",
                        "description": "Search for nodes in the knowledge graph based on a query",
                    },
                    {"name": "read_graph", "description": "Read the entire knowledge graph"},
                ]
            }
        },
    },
]


def _old(e: dict[str, Any]) -> dict[str, Any] | None:
    packages = [
        p
        for p in e.get("packages", [])
        if p["registry_name"] in ("npm", "pypi") and p.get("version")
    ]
    if not packages or not 1 <= len(e["description"]) <= 100:
        return None
    out: dict[str, Any] = {
        "$schema": SCHEMA,
        "name": e["name"],
        "description": e["description"],
        "version": e["version_detail"]["version"],
        "packages": [
            {
                "registryType": p["registry_name"],
                "identifier": p["name"],
                "version": p["version"],
                "transport": {"type": "stdio"},
                **(
                    {
                        "environmentVariables": [
                            {"name": v["name"], "description": v.get("description", "")}
                            for v in p["environment_variables"]
                        ]
                    }
                    if p.get("environment_variables")
                    else {}
                ),
            }
            for p in packages
        ],
    }
    if e.get("repository"):
        out["repository"] = {"url": e["repository"]["url"], "source": e["repository"]["source"]}
    return out


def build(old_seed: Path, new_seed: Path) -> list[dict[str, Any]]:
    servers = [s for e in json.loads(old_seed.read_text()) if (s := _old(e)) is not None]
    latest: dict[str, dict[str, Any]] = {}
    for e in json.loads(new_seed.read_text()):
        latest[e["name"]] = e  # the seed lists versions oldest first
    servers += list(latest.values()) + REFERENCE
    meta = {"status": "active", "publishedAt": "2025-12-11T00:00:00Z", "isLatest": True}
    return [{"server": s, "_meta": {OFFICIAL: meta}} for s in servers]


if __name__ == "__main__":
    listing = build(Path(sys.argv[1]), Path(sys.argv[2]))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(listing, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(listing)} entries written to {OUT}")
