"""How many tools of the shared benchmark catalogs the poisoned-description heuristics flag
(gateway/calls/_poison.py): every flag on these real, benign catalogs is a false positive.

    PYTHONPATH=src python benchmarks/poison_flags.py [--shared ../shared/benchmarks] [--json]

Prints per catalog the tools checked, the tools flagged and, for each flagged tool, why.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from toolroute.catalog.loader import load_catalog
from toolroute.gateway.calls.quarantine import suspicious


def flags(shared: Path) -> dict[str, dict[str, object]]:
    """{catalog: {"tools": n, "flagged": {server__tool: [labels]}}} for each catalog.json."""
    out: dict[str, dict[str, object]] = {}
    for path in sorted(shared.glob("*/catalog.json")):
        catalog = load_catalog(path)
        flagged = {}
        n = 0
        for tool in catalog.tools():
            n += 1
            found = suspicious(tool)
            if found:
                flagged[f"{tool.server}__{tool.name}"] = found
        out[path.parent.name] = {"tools": n, "flagged": flagged}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks"
    parser.add_argument("--shared", type=Path, default=default)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = flags(args.shared)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return
    for name, r in result.items():
        flagged = r["flagged"]
        assert isinstance(flagged, dict)
        print(f"{name}: {len(flagged)} of {r['tools']} tools flagged")
        for tool, why in flagged.items():
            print(f"  {tool}: {', '.join(why)}")


if __name__ == "__main__":
    main()
