"""``python -m toolroute.cli``: the same as the ``toolroute`` command."""

from toolroute.cli import main

main()
