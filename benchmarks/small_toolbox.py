"""Small toolboxes as sets: each request comes with the 1-20 tools its user offers, servable or not.

    python -m benchmarks.small_toolbox build --sources DIR    # writes benchmarks/small_toolbox/
    python -m benchmarks.small_toolbox run [--sets clinc,sgd] [--model DIR] [--fit FILE.npz]
        [--tuned-abstain FILE] [--cross DIR] [--store DIR]
        [--out benchmarks/results/small_toolbox.md]

Built from the sources' held-out splits only, which benchmarks/train_data.py never reads:
CLINC150's test split and its out-of-scope test rows, and SGD's test schema and dialogues (real
tool descriptions with slots as parameters; some services never appear in training). Each row is
a queries-file row plus ``toolbox`` (the (server, tool) pairs offered) and ``kind``:

- ``servable``: the needed tool is in the box, beside others (half of them from its own service
  or domain: near misses);
- ``removed``: the needed tool (and any tool with the same operation) was taken out of a box of
  its siblings: a near request no tool in the box serves;
- ``oos``: CLINC's out-of-scope test requests (no intent of its 150 serves them), any box.

``run`` routes each request over its own toolbox (a catalog of just those tools, vectors cached in
the store) with ``default`` (abstain default) on today's model, and with ``--model`` on a
fine-tuned one; with ``--fit``, the fit model (benchmarks/train_fit.py) decides "no tool fits"
over the ranking instead of the abstention check; with ``--tuned-abstain``, the fine-tuned model's
arm uses that abstention model (fitted on its vectors) instead of the shipped one; with
``--cross``, the cross-encoder (benchmarks/train_cross.py) over ``default``'s top 5 on the
first arm's model: reordering them with the abstention kept, and deciding (the order kept)
with the abstention off. Reported: servable requests refused, R@1 of the servable ones, and
the share of unservable ones (removed, oos) still answered with a tool, and with no doubtful-fit
caution; the out-of-scope ones also alone, paired (the pooled share can hide them).
``build-mcp`` makes two sets of small boxes of real MCP servers from ../shared
(:func:`build_mcp`; written under .toolroute, not committed): ``mcp`` (this repository's short
requests over their server, with and without their tools) and ``mcp_near`` (requests written by
hand for 40 servers, :data:`NEAR_SOURCE`: ones each serves, and ``near`` ones asking for an
operation none of its tools does). ``--abstain-model FILE`` (repeatable) adds an arm with that
abstention model over today's embedder.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.train_data import sgd_intent_turns

REPO = Path(__file__).resolve().parents[1]
HERE = REPO / "benchmarks" / "small_toolbox"
SIZES = (1, 2, 3, 5, 8, 12, 20)
MCP_FOLDER = REPO / ".toolroute" / "mcp-boxes"
MCP_SETS = ("mcp", "mcp_near")
"""The sets ``build-mcp`` writes into :data:`MCP_FOLDER`."""
NEAR_SOURCE = HERE / "mcp_near_source.jsonl"
"""Requests written by hand for 40 real MCP servers, blind to every query set and model output
(mcp_near_README.md): two each a server serves, two each on its topic that none of its tools
does (``near``). Nothing is fitted or chosen on them."""
KINDS = ("servable", "removed", "near", "oos")


def _git(root: Path, folder: str, path: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={root / folder / 'repo'}", "show", f"HEAD:{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _sgd_tools(root: Path, split: str = "test") -> tuple[list[dict], dict[str, list[str]]]:
    """SGD ``split``-schema services as MCP-style servers; and the user turns per (service,
    intent)."""
    folder = "google-research-datasets+dstc8-schema-guided-dialogue"
    schema = json.loads(_git(root, folder, f"{split}/schema.json"))
    servers = []
    for s in schema:
        slots = {x["name"]: x["description"] for x in s["slots"]}
        tools = []
        for i in s["intents"]:
            props = {
                n: {"type": "string", "description": slots.get(n, "")}
                for n in i["required_slots"] + list(i["optional_slots"])
            }
            tools.append(
                {
                    "name": i["name"],
                    "description": i["description"],
                    "input_schema": {
                        "type": "object",
                        "properties": props,
                        "required": i["required_slots"],
                    },
                }
            )
        servers.append(
            {
                "id": s["service_name"],
                "name": s["service_name"],
                "description": s["description"],
                "tools": tools,
            }
        )
    turns: dict[str, list[str]] = defaultdict(list)
    listing = subprocess.run(
        [
            "git",
            f"--git-dir={root / folder / 'repo'}",
            "ls-tree",
            "--name-only",
            "HEAD",
            f"{split}/",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    for path in listing:
        if not path.split("/")[-1].startswith("dialogues_"):
            continue
        try:
            dialogues = json.loads(_git(root, folder, path))
        except (subprocess.CalledProcessError, json.JSONDecodeError):
            continue
        for service, intent, utterance in sgd_intent_turns(dialogues):
            turns[f"{service}/{intent}"].append(utterance)
    return servers, turns


def _clinc_tools(
    root: Path, split: str = "test"
) -> tuple[list[dict], dict[str, list[str]], list[str]]:
    data = json.loads(_git(root, "clinc+oos-eval", "data/data_full.json"))
    domains = json.loads(_git(root, "clinc+oos-eval", "data/domains.json"))
    servers = [
        {
            "id": d,
            "name": d,
            "description": f"{d.replace('_', ' ')} assistant",
            "tools": [
                {
                    "name": i,
                    "description": f"{i.replace('_', ' ').capitalize()}.",
                    "input_schema": {"type": "object", "properties": {}},
                }
                for i in intents
            ],
        }
        for d, intents in domains.items()
    ]
    turns: dict[str, list[str]] = defaultdict(list)
    where = {i: d for d, intents in domains.items() for i in intents}
    for q, intent in data[split]:
        turns[f"{where[intent]}/{intent}"].append(q)
    return servers, turns, [q for q, _ in data[f"oos_{split}"]]


def _rows(
    name: str,
    servers: list[dict],
    turns: dict[str, list[str]],
    oos: list[str],
    rng: random.Random,
    per_kind: int,
) -> list[dict]:
    keys = [(s["id"], t["name"]) for s in servers for t in s["tools"]]
    op = {k: k[1] for k in keys}  # same operation under two service versions (SGD: Flights_1/_2)
    by_server: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for k in keys:
        by_server[k[0]].append(k)
    family = {k: k[0].split("_")[0] for k in keys}
    fam: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for k in keys:
        fam[family[k]].append(k)
    wanted = [k for k in keys if turns.get(f"{k[0]}/{k[1]}")]

    def fill(box: list, n: int, exclude_op: str | None) -> list:
        pool = [k for k in keys if k not in box and op[k] != exclude_op]
        rng.shuffle(pool)
        return box + pool[: max(0, n - len(box))]

    rows: list[dict] = []
    for kind in ("servable", "removed"):
        for i in range(per_kind):
            gold = rng.choice(wanted)
            query = rng.choice(turns[f"{gold[0]}/{gold[1]}"])
            n = rng.choice(SIZES)
            sib = [k for k in fam[family[gold]] if op[k] != op[gold]]
            rng.shuffle(sib)
            if kind == "servable":
                box = [gold] + sib[: (n - 1) // 2]
                box = fill(box, n, None)
                relevant = [k for k in box if op[k] == op[gold] and family[k] == family[gold]]
            else:
                if not sib:
                    continue
                box = fill(sib[:n], n, op[gold])
                relevant = []
            rng.shuffle(box)
            rows.append(
                {
                    "id": f"{name}-{kind}-{i}",
                    "query": query,
                    "kind": kind,
                    "relevant": [{"server": s, "tool": t} for s, t in relevant],
                    "toolbox": [{"server": s, "tool": t} for s, t in box],
                }
            )
    for i, q in enumerate(rng.sample(oos, min(per_kind, len(oos)))):
        box = fill([], rng.choice(SIZES), None)
        rows.append(
            {
                "id": f"{name}-oos-{i}",
                "query": q,
                "kind": "oos",
                "relevant": [],
                "toolbox": [{"server": s, "tool": t} for s, t in box],
            }
        )
    return rows


DEV_SEED = 8


def build(root: Path, per_kind: int = 150, seed: int = 7, split: str = "test") -> None:
    """The sets of ``split``: ``test`` (SGD test, CLINC test: the sets measured,
    ``NAME.jsonl``) or ``dev`` (SGD dev, CLINC val: ``NAME_dev.jsonl``, what the abstention
    may be fitted on; neither model trained on their requests)."""
    rng = random.Random(seed if split == "test" else DEV_SEED)
    clinc_servers, clinc_turns, oos = _clinc_tools(root, "test" if split == "test" else "val")
    sgd_servers, sgd_turns = _sgd_tools(root, split)
    HERE.mkdir(parents=True, exist_ok=True)
    tail = "" if split == "test" else f"_{split}"
    for name, servers, turns in (
        ("clinc", clinc_servers, clinc_turns),
        ("sgd", sgd_servers, sgd_turns),
    ):
        (HERE / f"{name}{tail}_catalog.json").write_text(json.dumps({"servers": servers}, indent=0))
        rows = _rows(name + tail, servers, turns, oos, rng, per_kind)
        (HERE / f"{name}{tail}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        print(name, {k: sum(r["kind"] == k for r in rows) for k in ("servable", "removed", "oos")})


MCP_MAX = 20


def build_mcp(shared: Path, out: Path, seed: int = 9) -> None:
    """Small boxes of real MCP servers, into ``out`` (derived from ../shared: not committed):
    each of this repository's short requests over the union's parts
    (benchmarks/in_scope/<part>.jsonl) whose tools lie in one server of at most 20 tools, over
    that server's tools (servable) and over the rest of them (removed); and union_test's
    out-of-scope requests (which no abstention model is fitted on) over a random such server."""
    from benchmarks.abstain_train import UNION_PARTS

    catalog = json.loads((shared / "union" / "catalog.json").read_text())
    small = {s["id"]: s for s in catalog["servers"] if len(s["tools"]) <= MCP_MAX}
    rng = random.Random(seed)
    rows: list[dict] = []
    for part in UNION_PARTS:
        path = REPO / "benchmarks" / "in_scope" / f"{part}.jsonl"
        for line in path.read_text().splitlines():
            q = json.loads(line)
            servers = {f"{part}/{r['server']}" for r in q["relevant"]}
            sid = servers.pop() if len(servers) == 1 else ""
            if sid not in small:
                continue
            need = list(dict.fromkeys(r["tool"] for r in q["relevant"]))  # in order: reproducible
            tools = [t["name"] for t in small[sid]["tools"]]
            for kind, box in (
                ("servable", tools),
                ("removed", [t for t in tools if t not in need]),
            ):
                if box:
                    rows.append(
                        {
                            "id": f"{q['id']}-{kind}",
                            "query": q["query"],
                            "kind": kind,
                            "relevant": [
                                {"server": sid, "tool": t} for t in need if kind == "servable"
                            ],
                            "toolbox": [{"server": sid, "tool": t} for t in box],
                        }
                    )
    test = REPO / "benchmarks" / "out_of_scope" / "union_test.jsonl"
    ids = sorted(small)
    for line in test.read_text().splitlines():
        q = json.loads(line)
        sid = rng.choice(ids)
        box = [{"server": sid, "tool": t["name"]} for t in small[sid]["tools"]]
        rows.append(
            {"id": q["id"], "query": q["query"], "kind": "oos", "relevant": [], "toolbox": box}
        )
    near = [_near_row(json.loads(x), small) for x in NEAR_SOURCE.read_text().splitlines()]
    out.mkdir(parents=True, exist_ok=True)
    for name, got in (("mcp", rows), ("mcp_near", near)):
        (out / f"{name}_catalog.json").write_text(json.dumps({"servers": list(small.values())}))
        (out / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in got))
        print(name, {k: sum(r["kind"] == k for r in got) for k in KINDS})


def _near_row(d: dict, small: dict) -> dict:
    """A row of ``mcp_near`` from its hand-written source line: the request over its whole
    server (a ``near`` request asks for an operation none of its tools does)."""
    server = small[d["server"]]
    names = {t["name"] for t in server["tools"]}
    if d["kind"] not in ("servable", "near") or not set(d["tools"]) <= names:
        raise ValueError(f"{NEAR_SOURCE.name}: {d['id']}: bad kind or a tool not in its server")
    return {
        "id": d["id"],
        "query": d["query"],
        "kind": d["kind"],
        "relevant": [{"server": d["server"], "tool": t} for t in d["tools"]],
        "toolbox": [{"server": d["server"], "tool": t["name"]} for t in server["tools"]],
    }


def _box_catalog(catalog: dict, box: list[dict]) -> Any:
    from toolroute.catalog.loader import catalog_from_dict

    want = {(b["server"], b["tool"]) for b in box}
    servers = []
    for s in catalog["servers"]:
        tools = [t for t in s["tools"] if (s["id"], t["name"]) in want]
        if tools:
            servers.append({**s, "tools": tools})
    return catalog_from_dict({"servers": servers})


def evaluate(
    name: str,
    embedder: Any,
    store: Path,
    fit: Any | None,
    abstain: str | None = None,
    abstain_model: Any = None,
    folder: Path = HERE,
) -> dict[str, Any]:
    """Per kind: requests, answered with a tool, R@1 (servable)."""
    from toolroute.route.strategy import RouteParams
    from toolroute.router import Router, top_k

    catalog = json.loads((folder / f"{name}_catalog.json").read_text())
    rows = [json.loads(x) for x in (folder / f"{name}.jsonl").read_text().splitlines()]
    stats: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    per: dict[str, list[float]] = defaultdict(list)  # per request, in the file's order: paired
    fails: list[str] = []
    lat: list[float] = []
    for r in rows:
        cat = _box_catalog(catalog, r["toolbox"])
        if abstain is None:
            abstain = "off" if fit is not None else "default"
        params = RouteParams(abstain=abstain, abstain_model=abstain_model)
        with Router(cat, store=store, embedder=embedder, params=params) as router:
            router.index()
            ix = router.built
            t0 = time.perf_counter()
            order = top_k(router.scores(r["query"], "default"), 5)
            if fit is not None and order:
                order = fit.keep(r["query"], [ix.tools[j] for j in order], order)
            lat.append((time.perf_counter() - t0) * 1000)
            ranked = [ix.keys[j] for j in order]
            notes: dict[str, Any] = {}
            if fit is None and abstain != "off" and ranked:  # the verdict: a caution or none
                router.route(r["query"], k=5, strategy="default", notes=notes)
        verdict = notes.get("abstain")
        cautioned = bool(ranked) and verdict is not None and verdict.doubtful
        s = stats[r["kind"]]
        s["requests"] += 1
        s["answered"] += bool(ranked)
        s["plainly"] += bool(ranked) and not cautioned
        rel = {(x["server"], x["tool"]) for x in r["relevant"]}
        if rel:
            s["r1"] += bool(ranked) and ranked[0] in rel
            per["servable R@1"].append(float(bool(ranked) and ranked[0] in rel))
            per["servable refused"].append(float(not ranked))
        else:
            per["unservable answered"].append(float(bool(ranked)))
            per["unservable answered plainly"].append(float(bool(ranked) and not cautioned))
            if r["kind"] == "oos":  # the issue's own measure, which the pooled one can hide
                per["out-of-scope answered"].append(float(bool(ranked)))
        if rel:
            if not ranked and len(fails) < 8:
                fails.append(f"refused: {r['query']!r} (box of {len(r['toolbox'])})")
        elif ranked and len(fails) < 16:
            fails.append(f"answered {ranked[0][1]!r}: {r['query']!r} ({r['kind']})")
    out: dict[str, Any] = {k: dict(v) for k, v in stats.items()}
    out["p50_ms"] = sorted(lat)[len(lat) // 2]
    if fit is not None and fit.head_ms:
        out["head_p50_ms"] = sorted(fit.head_ms)[len(fit.head_ms) // 2]
    out["examples"] = fails
    out["per"] = {k: np.array(v) for k, v in per.items()}
    return out


def paired_lines(name: str, label: str, got: dict, base: dict) -> list[str]:
    """Paired 95 % intervals of the arm's difference from the first arm, per measure."""
    from toolroute.bench.paired import paired_bootstrap

    out = []
    for measure, higher_is_better in (
        ("servable R@1", True),
        ("servable refused", False),
        ("unservable answered", False),
        ("unservable answered plainly", False),
        ("out-of-scope answered", False),
    ):
        if measure not in got["per"]:  # a set with no requests of the kind
            continue
        iv = paired_bootstrap(got["per"][measure], base["per"][measure])
        word = (
            {"gain": "better", "loss": "worse"}
            if higher_is_better
            else {
                "gain": "worse",
                "loss": "better",
            }
        )
        out.append(f"| {name} | {label} | {measure} | {iv} {word.get(iv.verdict, 'tie')} |")
    return out


def run(args: argparse.Namespace) -> int:
    from toolroute.embed.onnx import OnnxEmbedder
    from toolroute.route.abstain_model import load_model

    today = OnnxEmbedder()
    models: list[tuple[str, Any, Any, str | None, Any]] = [("default", today, None, None, None)]
    if args.model is not None:
        from benchmarks.train_adapter import fast_model

        tuned = fast_model(args.model, args.store)
        models.append(("default@tuned", tuned, None, None, None))
        if args.tuned_abstain is not None:
            own = load_model(args.tuned_abstain)
            models.append(("default@tuned+own abstention", tuned, None, None, own))
    models += [  # other abstention models over today's embedder
        (f"default, abstention {path.parent.name}", today, None, None, load_model(path))
        for path in args.abstain_model
    ]
    if args.fit is not None:
        from benchmarks.train_fit import FitModel

        emb = models[-1][1]
        models.append((f"{models[-1][0]}+fit", emb, FitModel.load(args.fit, emb), None, None))
    if args.cross is not None:
        from benchmarks.cross_fit import CrossFit

        cross = CrossFit(args.cross, top=5)
        rerank = cross.mode(True, False, args.cross_rank_weight)
        models += [
            (f"default + cross rerank, w {rerank.rank_weight:g}", today, rerank, "default", None),
            ("default + cross decides (abstain off)", today, cross.mode(False, True), "off", None),
        ]
    if args.arms:
        models = [m for m in models if m[0] in args.arms.split(",")]
    lines = [
        f"`python -m benchmarks.small_toolbox {' '.join(sys.argv[1:])}`",
        "",
        "| set | model | servable refused | servable R@1 | removed/near answered | oos answered "
        "| p50 ms | fit head p50 ms |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    examples = []
    plain: list[str] = []
    paired = [
        "",
        f"Paired 95 % intervals against `{models[0][0]}` (unservable: removed, near, oos; "
        "out-of-scope: oos alone; plainly: with no doubtful-fit caution):",
        "",
        "| set | arm | measure | Δ [95 % CI] |",
        "|---|---|---|---|",
    ]
    for name in args.sets.split(","):
        first: dict[str, Any] = {}
        for label, emb, fit, abstain, abstain_model in models:
            t0 = time.perf_counter()
            where = args.mcp_folder if name in MCP_SETS else HERE
            got = evaluate(name, emb, args.store, fit, abstain, abstain_model, where)
            if not first:
                first = got
            else:
                paired += paired_lines(name, label, got, first)
            sv, oo = got["servable"], got.get("oos", {})
            rm = got.get("removed") or got.get("near", {})

            def share(d: dict, k: str) -> str:
                if not d:
                    return "—"
                return (
                    f"{d.get(k, 0) / d['requests']:.3f} ({int(d.get(k, 0))}/{int(d['requests'])})"
                )

            refused = {
                "answered": sv["requests"] - sv.get("answered", 0),
                "requests": sv["requests"],
            }
            lines.append(
                f"| {name} | {label} | {share(refused, 'answered')} | {share(sv, 'r1')} "
                f"| {share(rm, 'answered')} | {share(oo, 'answered')} "
                f"| {got['p50_ms']:.1f} | {got.get('head_p50_ms', float('nan')):.3f} |"
            )
            plain.append(
                f"| {name} | {label} | {share(sv, 'plainly')} "
                f"| {share(rm, 'plainly')} | {share(oo, 'plainly')} |"
            )
            examples += [f"- {name}, {label}: {e}" for e in got["examples"]]
            print(f"{name} {label}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    text = "\n".join(lines + (paired if len(models) > 1 else [])) + "\n"
    text += (
        "\nAnswered without a doubtful-fit caution (a caution is not a refusal: the tools go "
        "out, flagged to be read before a call):\n\n"
        "| set | model | servable | removed/near | oos |\n|---|---|---:|---:|---:|\n"
        + "\n".join(plain)
        + "\n"
    )
    text += "\nExamples of misses:\n\n" + "\n".join(examples) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--sources", type=Path, required=True)
    b.add_argument("--per-kind", type=int, default=150)
    b.add_argument("--split", choices=("test", "dev"), default="test")
    m = sub.add_parser("build-mcp", help="small boxes of real MCP servers, from ../shared")
    m.add_argument("--shared", type=Path, default=None, help="../shared/benchmarks by default")
    m.add_argument("--out", type=Path, default=MCP_FOLDER)
    r = sub.add_parser("run")
    r.add_argument("--sets", default="clinc,sgd")
    r.add_argument("--model", type=Path, default=None)
    r.add_argument("--fit", type=Path, default=None)
    r.add_argument("--tuned-abstain", type=Path, default=None)
    r.add_argument(
        "--arms",
        default="",
        help="only these arms, comma-separated (default, default@tuned, ...): all when empty",
    )
    r.add_argument(
        "--abstain-model",
        type=Path,
        action="append",
        default=[],
        help="an arm with this abstention model (its JSON) over today's embedder; repeatable",
    )
    r.add_argument("--cross", type=Path, default=None, help="the cross-encoder's ONNX folder")
    r.add_argument("--cross-rank-weight", type=float, default=None, help="as fit_compare's")
    r.add_argument("--store", type=Path, default=REPO / ".toolroute" / "toolbox-store")
    r.add_argument("--out", type=Path, default=None)
    r.add_argument("--mcp-folder", type=Path, default=MCP_FOLDER, help="where build-mcp wrote")
    args = ap.parse_args()
    if args.cmd == "build-mcp":
        from benchmarks.abstain_train import SHARED

        build_mcp(args.shared or SHARED, args.out)
        return 0
    if args.cmd == "build":
        build(args.sources, args.per_kind, split=args.split)
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
