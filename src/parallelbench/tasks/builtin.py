"""Importing this module registers the built-in tasks (`base.registry` does it lazily).

A module of its own so that the registry in `base.py` and the package `__init__` never
import each other.
"""

from parallelbench.tasks import puzzles, synthetic, text_writing, waiting_line  # noqa: F401
