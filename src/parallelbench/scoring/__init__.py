"""Scorers: exact list and puzzle checks, grammar, ROUGE-L, BLEU, BERTScore, inclusion.

Importing the package registers the built-in scorers (`builtin.py`), so every way into
`parallelbench.scoring` (this package, `scoring.base`, a scorer module) finds them.
"""

from parallelbench.scoring import builtin  # noqa: F401  (registers the built-in scorers)
from parallelbench.scoring.base import (
    SCORING_MODES,
    Scorer,
    Scores,
    get_scorer,
    register_scorer,
    score,
    scorer_version,
)


def score_many(samples, outputs, **kwargs):
    """Score ``outputs[i]`` against ``samples[i]`` (``mode=`` one of `SCORING_MODES`), batching BERTScore."""
    from parallelbench.scoring.batch import score_many as _score_many  # noqa: PLC0415

    return _score_many(samples, outputs, **kwargs)


__all__ = ["SCORING_MODES", "Scorer", "Scores", "get_scorer", "register_scorer", "score", "score_many", "scorer_version"]
