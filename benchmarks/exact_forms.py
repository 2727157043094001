"""Exact-name R@1 per written form of a tool's name, on every catalog of the suite.

    python -m benchmarks.exact_forms [--sets a,b] [--forms a,b] [--sample 200] [--strategy default]
        [--store DIR] [--out benchmarks/results/exact_forms.md] [--json FILE]

For a sample of each catalog's tools (fixed seed), each tool is named in six forms: its
plain name, ``server__tool``, ``server.tool``, ``server/tool``, ``key__tool`` (the key is the
last ``/`` segment of the server id, as a gateway's config names the server:
``hackernews__getStory`` for ``livemcpbench/hackernews``) and its title (the name in words,
each word capitalised: ``Get Current Stock Price``), and each form is asked two ways:
as the whole query, and inside a sentence ("please run X for me"; the title quoted, as a
title in running text is English). R@1 counts the query when the router's first tool is
the named one; for the plain name and the title, a name several tools share (the same tool
mirrored on two servers) counts any tool of that name, and for ``key__tool`` any tool of that
name on a server of that key, since nothing in the text tells them apart. A query answered
"no tool fits" is a miss.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._report import missing, unknown, write_report

REPO = Path(__file__).resolve().parents[1]
# ../shared beside the repo; TOOLROUTE_SHARED names it from a checkout elsewhere
SHARED = Path(os.environ.get("TOOLROUTE_SHARED", REPO.parent / "shared")) / "benchmarks"
SETS = ("livemcpbench", "mcpbench", "tool_attention", "sealtools", "metatool", "union")
FORMS = ("plain", "server__tool", "server.tool", "server/tool", "key__tool", "title")
SENTENCE = {
    "title": 'please use "{form}" for this',
    "plain": "please run {form} for me",
}


def title(name: str) -> str:
    """A tool's title as an MCP server would write it: its name in words, capitalised."""
    from toolroute.index.document import humanise

    return " ".join(w[:1].upper() + w[1:] for w in humanise(name).split())


def written(form: str, server: str, name: str) -> str:
    if form == "plain":
        return name
    if form == "title":
        return title(name)
    if form == "key__tool":
        return f"{key(server)}__{name}"
    return f"{server}{form[len('server') : -len('tool')]}{name}"


def key(server: str) -> str:
    """The server's key in a gateway's config: the last ``/`` segment of its id."""
    return server.rsplit("/", 1)[-1]


def same(form: str, a: tuple[str, str], b: tuple[str, str]) -> bool:
    """``a`` answers a query naming ``b`` in ``form`` (a title names a tool by its name's words,
    camel and snake case split as the exact-name step reads them)."""
    from toolroute.index.document import humanise

    if form == "plain":
        return a[1].lower() == b[1].lower()
    if form == "title":
        return humanise(a[1]) == humanise(b[1]) or re.findall(r"[^\W_]+", a[1].lower()) == (
            re.findall(r"[^\W_]+", b[1].lower())
        )
    if form == "key__tool":
        return key(a[0]) == key(b[0]) and a[1] == b[1]
    return a == b


def run_set(
    router: Any, sample: int, strategy: str, forms: tuple[str, ...] = FORMS, seed: int = 0
) -> dict[str, Any]:
    from toolroute.router import top_k

    ix = router.built
    keys = list(ix.keys)
    rng = np.random.default_rng(seed)
    pick = sorted(rng.permutation(len(keys))[: sample if sample > 0 else len(keys)].tolist())
    out: dict[str, Any] = {}
    for form in forms:
        for framing in ("whole", "sentence"):
            hits, misses = 0, []
            for i in pick:
                server, name = keys[i]
                text = written(form, server, name)
                if framing == "sentence":
                    text = SENTENCE.get(form, SENTENCE["plain"]).format(form=text)
                top = top_k(router.scores(text, strategy), 1)
                if top and same(form, keys[top[0]], keys[i]):
                    hits += 1
                else:
                    misses.append({"query": text, "first": list(keys[top[0]]) if top else None})
            out[f"{form}/{framing}"] = {
                "n": len(pick),
                "r1": hits / len(pick) if pick else 0.0,
                "misses": misses[:10],
            }
    return out


def render(results: dict[str, dict[str, Any]], head: str, forms: tuple[str, ...] = FORMS) -> str:
    lines = [head, "", "| set | asked as | n | " + " | ".join(forms) + " |"]
    lines.append("|---|---|---:|" + "---:|" * len(forms))
    for name, res in results.items():
        for framing in ("whole", "sentence"):
            n = res[f"{forms[0]}/{framing}"]["n"]
            cells = " | ".join(f"{res[f'{f}/{framing}']['r1']:.3f}" for f in forms)
            lines.append(f"| {name} | {framing} | {n} | {cells} |")
    misses = [
        f"- {name} {key}: `{m['query']}` → {m['first']}"
        for name, res in results.items()
        for key, r in res.items()
        for m in r["misses"][:3]
    ]
    if misses:
        lines += ["", "Misses (up to three per set and form):", "", *misses]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--forms", default=",".join(FORMS))
    ap.add_argument("--sample", type=int, default=200, help="tools per set (0: every tool)")
    ap.add_argument("--strategy", default="default")
    ap.add_argument("--abstain", default="default", choices=("off", "default", "strict"))
    ap.add_argument("--store", type=Path, default=REPO / ".toolroute" / "bench-store")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    if missing(SHARED):
        return 2
    names = args.sets.split(",")
    if unknown(names, SETS, "set"):
        return 2
    forms = tuple(args.forms.split(","))
    if unknown(forms, FORMS, "form"):
        return 2

    from toolroute.embed.onnx import OnnxEmbedder
    from toolroute.route.strategy import RouteParams
    from toolroute.router import Router

    embedder = OnnxEmbedder()
    results: dict[str, dict[str, Any]] = {}
    t0 = time.perf_counter()
    for name in names:
        # (a tree from before abstention, run for its before-figures, has no such knob)
        knob = {"abstain": args.abstain} if "abstain" in RouteParams.__dataclass_fields__ else {}
        params = RouteParams(**knob)
        cat = SHARED / name / "catalog.json"
        with Router(cat, store=args.store, embedder=embedder, params=params) as r:
            r.index()
            results[name] = run_set(r, args.sample, args.strategy, forms)
        print(f"{name}: done at {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    head = (
        f"`python -m benchmarks.exact_forms {' '.join(sys.argv[1:])}` "
        f"({time.perf_counter() - t0:.0f} s, strategy {args.strategy}, abstention "
        f"{args.abstain}, MiniLM int8)"
    )
    text = render(results, head, forms)
    write_report(text, args.out, args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
