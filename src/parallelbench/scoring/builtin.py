"""Importing this module registers the built-in scorers (`base.get_scorer` does it lazily).

A module of its own so that the registry in `base.py` and the package `__init__` never
import each other.
"""

from parallelbench.scoring import cot, lists, puzzles, text  # noqa: F401
