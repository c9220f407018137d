"""The built-in scorers: importing this module registers them (the package does it on import).

A module of its own so that the registry in `base.py` never imports the scorers.
"""

from parallelbench.scoring import cot, lists, puzzles, structured, text  # noqa: F401
