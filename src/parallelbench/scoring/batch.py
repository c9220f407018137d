"""Scoring many answers at once: batch the model-based metric, then score one by one.

BERTScore is the only metric that gains from batching (one forward pass per batch
instead of per answer), so its pairs are computed up front into the similarity
cache; the per-sample scorers then read the cache and stay pure functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

from parallelbench.scoring.base import Scores, check_mode, score

if TYPE_CHECKING:
    from parallelbench.tasks.base import Sample


def score_many(
    samples: Sequence["Sample"],
    outputs: Sequence[str],
    *,
    on_progress: Callable[[int], None] | None = None,
    mode: str = "default",
) -> list[Scores]:
    """Score ``outputs[i]`` against ``samples[i]`` for every i in `mode`, batching BERTScore."""
    check_mode(mode)
    if len(samples) != len(outputs):
        raise ValueError(f"{len(samples)} samples but {len(outputs)} outputs; give one output per sample")
    pairs = []
    for sample, output in zip(samples, outputs):
        if sample.scorer == "paraphrase":
            from parallelbench.scoring.text import paraphrase_pairs  # noqa: PLC0415

            pairs += paraphrase_pairs(sample, output)
    if pairs:
        from parallelbench.scoring.similarity import prefetch_bertscore  # noqa: PLC0415

        prefetch_bertscore(pairs)
    results = []
    for i, (sample, output) in enumerate(zip(samples, outputs)):
        results.append(score(sample, output, mode=mode))
        if on_progress is not None:
            on_progress(i + 1)
    return results
