"""``python -m hindsight_core.cli``: the same as the ``hindsight`` console script."""

from hindsight_core.cli import main

main()
