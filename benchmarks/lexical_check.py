"""Tokenizer and stemmer choices of the lexical layer, checked on every query set.

    python benchmarks/lexical_check.py [--out benchmarks/results/lexical_check.md]

BM25 alone (no embedding, so it runs in seconds) over the router's tool document (server
profile, name, description, parameters), with the text tokenized five ways:

    ours            lower-cased alphanumeric runs, camelCase and snake_case split (the router's)
    ours+stem       the same, each token Snowball-stemmed (index/fields.py, a fusion feature)
    ours+stop       the same, English stopwords (bm25s' list) dropped
    ours+stem+stop  both
    bm25s default   ``bm25s.tokenize``: its regex (no camel/snake split), stopwords "en"

Per set: R@5 and MRR, and the paired bootstrap interval of each against ``ours``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from recall_suite import SETS  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    import bm25s
    from bm25s.stopwords import STOPWORDS_EN

    from toolroute.bench.paired import paired_bootstrap, per_query_metrics
    from toolroute.catalog import load_catalog, load_queries
    from toolroute.index.document import build_docs, tokenise
    from toolroute.index.fields import stem_text

    stop = frozenset(STOPWORDS_EN)
    variants: dict[str, Callable[[str], list[str]]] = {
        "ours": tokenise,
        "ours+stem": lambda t: stem_text(t).split(),
        "ours+stop": lambda t: [w for w in tokenise(t) if w not in stop],
        "ours+stem+stop": lambda t: [w for w in stem_text(t).split() if w not in stop],
        "bm25s default": lambda t: bm25s.tokenize(
            [t], stopwords="en", return_ids=False, show_progress=False
        )[0],
    }
    t0 = time.perf_counter()
    lines = [
        "| set | tokenizer | R@5 | MRR | ΔR@5 vs ours [95 % CI] | ΔMRR vs ours [95 % CI] |",
        "|---|---|---:|---:|---|---|",
    ]
    for name, (cat_path, qf) in SETS.items():
        catalog = load_catalog(cat_path)
        queries = load_queries(qf, catalog)
        docs = build_docs(catalog.servers, None)
        keys = [d.key for d in docs]
        cases = [(q.text, list(q.groups)) for q in queries]
        per: dict[str, dict[str, np.ndarray]] = {}
        for label, tok in variants.items():
            corpus = [tok(d.lexical_text()) or ["\x00"] for d in docs]
            bm = bm25s.BM25(k1=1.5, b=0.75, method="robertson")
            bm.index(corpus, show_progress=False)
            vocab = bm.vocab_dict

            def rank(text: str, tok=tok, bm=bm, vocab=vocab, keys=keys) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
                ids = [vocab[w] for w in tok(text) if w in vocab]
                if not ids:
                    return []
                s = np.asarray(bm.get_scores_from_ids(ids))
                return [keys[j] for j in np.argsort(-s, kind="stable")[:10] if s[j] > 0]

            per[label] = per_query_metrics(rank, cases)
        for label, pq in per.items():
            base = per["ours"]
            if label == "ours":
                d5 = dm = "—"
            else:
                d5 = str(paired_bootstrap(pq["recall@5"], base["recall@5"]))
                dm = str(paired_bootstrap(pq["mrr"], base["mrr"]))
            lines.append(
                f"| {name} ({len(cases)}) | {label} | {pq['recall@5'].mean():.3f} | "
                f"{pq['mrr'].mean():.3f} | {d5} | {dm} |"
            )
    head = f"`python benchmarks/lexical_check.py` ({time.perf_counter() - t0:.0f} s)\n\n"
    table = head + "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(table, encoding="utf-8")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
