"""The built-in tasks, in registry order (`registry.py` registers them on first use).

The task modules only define their tasks (`TASKS`); none of them imports the registry,
so the registry can load them lazily without an import circle. `cot` wraps the Waiting
Line tasks, so it comes after them; the structured family (not the paper's) comes last.
"""

from parallelbench.tasks import cot, puzzles, structured, synthetic, text_writing, waiting_line

BUILTIN_TASKS = (*puzzles.TASKS, *synthetic.TASKS, *text_writing.TASKS, *waiting_line.TASKS, *cot.TASKS, *structured.TASKS)
