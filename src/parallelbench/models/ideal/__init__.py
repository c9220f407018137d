"""The ideal model of section 4: exact conditional marginals of a finite answer set.

- `model.py`: `IdealModel` and `AnswerSet`, the `MaskedDiffusionModel` itself;
- `bench.py`: the runner-level spec "ideal" (benchmark samples in, decodes out);
- `synthetic.py`: the four synthetic list operations at item level;
- `tokenizer.py`: the word-level tokenizer of the runner-level model's answers.
"""

from __future__ import annotations

from typing import Any

from parallelbench.models.ideal.model import IMPOSSIBLE, AnswerSet, IdealModel

__all__ = ["IMPOSSIBLE", "OPTIONS", "AnswerSet", "IdealModel", "load"]

# `--model-opt` options of the spec "ideal", each with whether it can change outputs (provenance).
OPTIONS = {"noise_std": True, "batch_size": False}


def load(arg: str = "", **options: Any):
    """Runner-level spec "ideal": see `parallelbench.models.ideal.bench.IdealBenchModel`."""
    from parallelbench.models.ideal.bench import load as _load

    return _load(arg, **options)
