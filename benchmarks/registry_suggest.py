"""How often the registry server that would serve a need is among find_tools' suggestions.

The listing is ``benchmarks/registry/servers.json`` (real server.json entries,
``benchmarks.registry_data`` says where from), served in process through the client's
transport seam; the requests are ``benchmarks/registry/requests.jsonl``: needs no configured
server serves, each with the registry servers that would (``relevant``), and needs no registry
server serves either (``relevant`` empty), where the right answer is no suggestion. The
suggester routes with the gateway's default strategy and its abstention check (``default``),
and with ``off`` beside it (always rank: what abstaining costs and saves).

    python -m benchmarks.registry_suggest [--out benchmarks/results/registry_suggest.md]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import httpx2

from toolroute.embed.onnx import OnnxEmbedder
from toolroute.registry.client import RegistryClient
from toolroute.registry.suggest import Suggester
from toolroute.settings import RegistrySettings

HERE = Path(__file__).parent / "registry"
URL = "http://registry.internal"


def _transport(listing: list[Any]) -> httpx2.MockTransport:
    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json={"servers": listing, "metadata": {}})

    return httpx2.MockTransport(answer)


def run(modes: tuple[str, ...] = ("default", "off")) -> dict[str, Any]:
    listing = json.loads((HERE / "servers.json").read_text())
    requests = [json.loads(x) for x in (HERE / "requests.jsonl").read_text().splitlines() if x]
    embedder = OnnxEmbedder()
    out: dict[str, Any] = {"servers": len(listing), "requests": len(requests), "modes": {}}
    for mode in modes:
        with tempfile.TemporaryDirectory() as d:
            settings = RegistrySettings(url=URL, page_size=500)
            client = RegistryClient(settings, Path(d), transport=_transport(listing))
            s = Suggester(settings, Path(d), embedder, abstain=mode, client=client)  # type: ignore[arg-type]
            by_phrasing: dict[str, list[int]] = {}
            served = hit1 = hit3 = none_served = 0
            unserved = refused = 0
            misses: list[dict[str, Any]] = []
            wrong: list[dict[str, Any]] = []
            for r in requests:
                names = [x.name for x in s.suggest(r["query"])]
                if r["relevant"]:
                    served += 1
                    hit1 += bool(names) and names[0] in r["relevant"]
                    hit = any(n in r["relevant"] for n in names)
                    hit3 += hit
                    tally = by_phrasing.setdefault(r.get("phrasing", "named"), [0, 0])
                    tally[0] += hit
                    tally[1] += 1
                    none_served += not names
                    if not any(n in r["relevant"] for n in names):
                        misses.append({"query": r["query"], "suggested": names})
                else:
                    unserved += 1
                    refused += not names
                    if names:
                        wrong.append({"query": r["query"], "suggested": names})
            s.close()
        out["modes"][mode] = {
            "hit@1": round(hit1 / served, 3),
            "hit@3": round(hit3 / served, 3),
            "no_suggestion_when_one_serves": round(none_served / served, 3),
            "no_suggestion_when_none_serves": round(refused / unserved, 3),
            "hit@3_by_phrasing": {k: [h, n] for k, (h, n) in by_phrasing.items()},
            "served": served,
            "unserved": unserved,
            "misses": misses,
            "suggested_where_none_serves": wrong,
        }
    return out


def report(result: dict[str, Any]) -> str:
    lines = [
        "# Registry suggestions: is the right server among them?",
        "",
        f"{result['requests']} requests no configured server serves, against a registry of "
        f"{result['servers']} real server.json entries (`python -m benchmarks.registry_suggest`).",
        "",
        "| abstain | hit@1 | hit@3 | none suggested, one serves | none suggested, none serves |",
        "|---|---|---|---|---|",
    ]
    for mode, m in result["modes"].items():
        lines.append(
            f"| `{mode}` | {m['hit@1']:.3f} | {m['hit@3']:.3f} | "
            f"{m['no_suggestion_when_one_serves']:.3f} ({m['served']}) | "
            f"{m['no_suggestion_when_none_serves']:.3f} ({m['unserved']}) |"
        )
    lines += [
        "",
        "hit@3 by how a request is worded (`named`: it names the product, Spotify or Xero; "
        "`plain`: it does not):",
        "",
        "| abstain | phrasing | hit@3 | requests |",
        "|---|---|---|---|",
    ]
    for mode, m in result["modes"].items():
        for phrasing, (h, n) in m["hit@3_by_phrasing"].items():
            lines.append(f"| `{mode}` | {phrasing} | {h / n:.3f} | {n} |")
    lines += ["", "Misses at `default` (request → what was suggested):", ""]
    for miss in result["modes"].get("default", {}).get("misses", []):
        lines.append(f"- {miss['query']} → {', '.join(miss['suggested']) or 'nothing'}")
    lines += ["", "Suggested at `default` though no registry server serves it:", ""]
    for w in result["modes"].get("default", {}).get("suggested_where_none_serves", []):
        lines.append(f"- {w['query']} → {', '.join(w['suggested'])}")
    lines += [
        "",
        "The requests were written for this listing by reading its descriptions; the `named` "
        "ones are the easier set. The figures say how the routing and the abstention check "
        "carry over to registry servers, not how an unseen registry will fare.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="Write the markdown report here.")
    args = parser.parse_args()
    result = run()
    text = report(result)
    print(text)
    if args.out is not None:
        args.out.write_text(text)
        args.out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
