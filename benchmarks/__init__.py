"""The benchmark suite: every script the docs quote, run from the repository's root as
``python -m benchmarks.<name>`` (``--help`` gives each one's options).

``bash benchmarks/run_all.sh`` runs them all and writes the results the README and docs/ quote
under benchmarks/results/ (``--quick`` runs each at small sizes into .toolroute/bench-quick/);
``benchmarks/adaptive.sh`` and ``benchmarks/economics.sh`` are its marketplace studies. The
research strategies (ablations, baselines, the first learned fusion) are in
:mod:`benchmarks.variants`, registered through ``register_strategy`` (``toolroute bench
--plugin benchmarks/variants.py``). Needs ../shared beside the repository for the query sets.
Nothing here is imported by ``toolroute`` itself, and this package's own ``__init__`` imports
nothing, so :mod:`benchmarks.interop_clients` also runs in the client libraries' own venvs.
"""
