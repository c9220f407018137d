"""What one sample of an exported lm-eval task reports, and how our lm-eval model supplies it.

The metric names and meanings follow the ParallelBench rewrite's lm-eval layout, so one
results JSON reads the same from either tool:

- ``score`` (the headline) and, for list and puzzle tasks, ``score_strict``: 0..1 per
  sample, reported as 0..100 (`percent_mean`); text tasks also report their components
  under the rewrite's names (``grammar_score``, ``rougeL_score``, ``bertscore_score``,
  ``inv_bleu_score``, ``inclusion_score``);
- ``unmask_score`` (0..100 like ``score``: the score of the answer when its last original mask
  was filled, before any later edit; equal to ``score`` for strategies that never change a
  written token) and ``edits`` (token-to-token rewrites per sample, a plain mean): how much an
  editing strategy repaired (docs/report.md, "Does editing repair parallel decoding?");
- ``nfe``, ``tokens_per_step`` (generation length / NFE), ``input_length`` (prompt tokens),
  ``output_length`` (answer tokens, up to the first EOS) and the decoding-order
  correlations ``dec_order_kendall``, ``dec_order_spearman`` and their ``_ignore_pad``
  variants (`scoring/order.py`), plain means.

lm-eval hands a task's ``process_results`` only the document and the text, so the model
(`lm_eval.py`) records each request's decoding metadata here under the document's sample
id and the task takes it back. A model that records nothing (lm-eval's own ``hf``,
``vllm`` ...) gets zeros for the decoding metrics, as in the rewrite. This module does not
import lm-eval.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict, deque
from typing import Any, Sequence

DECODING_METRICS: tuple[str, ...] = (
    "nfe",
    "tokens_per_step",
    "input_length",
    "output_length",
    "dec_order_kendall",
    "dec_order_spearman",
    "dec_order_kendall_ignore_pad",
    "dec_order_spearman_ignore_pad",
)
# repair by editing: unmask_score aggregates like the scores (0..100), edits is a plain mean
REPAIR_METRICS: tuple[str, ...] = ("unmask_score", "edits")
# our component name -> the rewrite's metric name (text tasks)
COMPONENT_METRICS: dict[str, str] = {
    "grammar": "grammar_score",
    "rouge_l": "rougeL_score",
    "bertscore": "bertscore_score",
    "inv_bleu": "inv_bleu_score",
    "inclusion": "inclusion_score",
}
_TEXT_COMPONENTS = {"summarization": ("grammar", "rouge_l"), "paraphrase": ("grammar", "bertscore", "inv_bleu"),
                    "w2s": ("grammar", "inclusion")}
SCORING_ENV = "PARALLELBENCH_SCORING"  # default or paper, for the exported tasks' scores

_PENDING: dict[str, deque[dict[str, float]]] = defaultdict(deque)


def score_metrics(scorer: str) -> list[str]:
    """The score metrics a task with this scorer reports (0..100 once aggregated)."""
    base = _TEXT_COMPONENTS.get(scorer)
    if base is None:
        return ["score", "score_strict"]
    return ["score", *(COMPONENT_METRICS[c] for c in base)]


def percent_mean(items: Sequence[float]) -> float:
    """The mean of 0..1 per-sample scores on 0..100 (the rewrite's aggregation of task metrics)."""
    items = list(items)
    return 100.0 * sum(items) / len(items) if items else 0.0


def _nan_if_none(value: float | None) -> float:
    return float("nan") if value is None else float(value)


def decoding_metadata(order: Sequence[int], pad_order: Sequence[int] | None, *, nfe: int, gen_length: int,
                      input_length: int, output_length: int, edits: int = 0,
                      unmask_text: str | None = None) -> dict[str, Any]:
    """The decoding metrics of one generation (undefined correlations are NaN, as scipy's), its edits
    and, for a decode that kept a repair record, the text of its answer at unmasking (scored by the task)."""
    from parallelbench.scoring.order import order_metrics  # noqa: PLC0415

    corr = order_metrics(list(order), None if pad_order is None else list(pad_order))
    out: dict[str, Any] = {
        "nfe": float(nfe),
        "tokens_per_step": gen_length / nfe if nfe else 0.0,
        "input_length": float(input_length),
        "output_length": float(output_length),
        **{k: _nan_if_none(corr[k]) for k in DECODING_METRICS[4:]},
        "edits": float(edits),
    }
    if unmask_text is not None:
        out["unmask_text"] = str(unmask_text)
    return out


def record(sample_id: str, metadata: dict[str, Any]) -> None:
    """Keep a generation's metadata until the task scores that sample."""
    _PENDING[str(sample_id)].append(dict(metadata))


def forget_pending() -> None:
    """Drop records no task scored (a previous evaluation in this process that stopped part-way),
    so a new generation pass never hands a sample's metrics from an older decode."""
    _PENDING.clear()


def take(sample_id: str) -> dict[str, Any]:
    """The oldest metadata recorded for this sample (the decoding metrics, `edits` and, when the
    decode kept a repair record, `unmask_text`), or zeros when the model recorded none."""
    queue = _PENDING.get(str(sample_id))
    if not queue:
        return {**dict.fromkeys(DECODING_METRICS, 0.0), "edits": 0.0}
    meta = queue.popleft()
    if not queue:
        del _PENDING[str(sample_id)]
    out: dict[str, Any] = {k: float(meta.get(k, 0.0)) for k in (*DECODING_METRICS, "edits")}
    if meta.get("unmask_text") is not None:
        out["unmask_text"] = str(meta["unmask_text"])
    return out


def scoring_mode() -> str:
    """The scoring mode the exported tasks use: $PARALLELBENCH_SCORING, default "default"."""
    from parallelbench.scoring.base import check_mode  # noqa: PLC0415

    mode = os.environ.get(SCORING_ENV, "default") or "default"
    try:
        return check_mode(mode)
    except ValueError as err:
        raise ValueError(f"{SCORING_ENV}={mode!r}: {err}") from None


def sample_metrics(doc: dict[str, Any], output: str) -> dict[str, float]:
    """Every metric of one exported sample: its scores (0..1), its repair metrics and its decoding metadata."""
    from parallelbench.scoring import score  # noqa: PLC0415
    from parallelbench.tasks.base import Sample  # noqa: PLC0415

    sample = Sample.from_dict(json.loads(doc["parallelbench_sample"]))
    result = score(sample, output if isinstance(output, str) else "", mode=scoring_mode())
    out: dict[str, float] = {}
    for name in score_metrics(sample.scorer):
        if name == "score":
            out[name] = float(result.score)
        elif name == "score_strict":
            out[name] = float(result.components.get("strict", result.score))
        else:
            ours = next(k for k, v in COMPONENT_METRICS.items() if v == name)
            out[name] = float(result.components.get(ours, 0.0))
    meta = take(doc.get("id", sample.id))
    unmask = meta.pop("unmask_text", None)
    same = unmask is None or unmask == (output if isinstance(output, str) else "")
    out["unmask_score"] = float(result.score) if same else float(score(sample, unmask, mode=scoring_mode()).score)
    out["edits"] = float(meta.pop("edits", 0.0))
    out.update(meta)
    return out
