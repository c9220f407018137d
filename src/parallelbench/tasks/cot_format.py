"""How a chain-of-thought sample marks its answer: shared by its generator and its scorer.

`tasks/cot.py` writes the marker into prompts and worked examples, `scoring/cot.py` reads
the answer after it. Both import these names from here, a module that imports nothing
of the project, so neither side imports the other.
"""

ANSWER_MARKER = "The answer is:"  # the final answer follows its last occurrence
COT_SCORER = "cot_answer"  # the scorer name CoT samples carry
COT_SUFFIX = "-cot"  # `<task>-cot`: the chain-of-thought variant of a task
