"""Importing this module registers the built-in tasks (`base.registry` does it lazily).

A module of its own so that the registry in `base.py` and the package `__init__` never
import each other. `cot` wraps Waiting Line tasks, so it comes after `waiting_line`.
"""

from parallelbench.tasks import puzzles, synthetic, text_writing, waiting_line  # noqa: F401
from parallelbench.tasks import cot  # noqa: F401, E402  (after waiting_line: wraps its tasks)
