"""Two ways to count tokens per step: the whole window, or the answer only.

- **window** (`tps` = num_tokens / nfe): every position committed on the task's canvas,
  EOS padding included. This is the authors' metric and the default everywhere.
- **answer** (`answer_tps` = answer_tokens / nfe): only the tokens committed before the
  first stop token, the ones the answer shows. A strategy that commits the certain EOS
  padding in a few steps scores a high window rate while the answer itself came slowly.

`answer_tokens` is computed from what every row stores: its `order` list holds one entry
per position before the first stop token (the step that committed it; -1 for a position a
template pre-filled), so the answer tokens are its entries >= 0. API rows store no order;
their `num_tokens` already counts only the returned text (there is no canvas). A row with
neither (a failed row, a hand-built frame without `order`) has no answer count.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

#: Valid values of `--tps`, the default first.
TPS_MEASURES = ("window", "answer")
ANSWER_COLUMNS = ("answer_tokens", "answer_tps")
TPS_NAME = {"window": "tokens per step", "answer": "answer tokens per step"}
TPS_TEXT = {
    "window": "every position committed on the task's canvas (EOS padding included) / model calls",
    "answer": "tokens committed before the first stop token / model calls",
}


def measure_line(measure: str) -> str:
    """Which tokens per step a table uses, and the other one, in one line."""
    other = TPS_MEASURES[1 - TPS_MEASURES.index(check_measure(measure))]
    return f"{TPS_NAME[measure]} (--tps {measure}): {TPS_TEXT[measure]}; --tps {other}: {TPS_TEXT[other]}"


class TpsMeasureError(ValueError):
    """An unknown --tps value."""


def check_measure(measure: str) -> str:
    if measure not in TPS_MEASURES:
        raise TpsMeasureError(f"unknown tokens-per-step measure {measure!r}; use one of: {', '.join(TPS_MEASURES)} "
                              "(window: every committed position, the authors' metric; answer: tokens before the "
                              "first stop token)")
    return measure


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def answer_tokens(order: Any, model_kind: Any = None, num_tokens: Any = None) -> int | None:
    """Tokens committed before the first stop token, from a row's stored `order` (JSON text or list)."""
    if isinstance(order, str):
        try:
            order = json.loads(order)
        except ValueError:
            order = None
    if str(model_kind) == "api" and not order:  # no canvas: the API counted the returned text's tokens
        count = _number(num_tokens)
        return int(count) if count is not None else None
    if not isinstance(order, list):
        return None
    if _number(num_tokens) is None and not order:  # a failed row: nothing was decoded
        return None
    return sum(1 for step in order if isinstance(step, (int, float)) and step >= 0)


def answer_columns(row: dict[str, Any]) -> dict[str, Any]:
    """`answer_tokens` and `answer_tps` of one results row (None where they cannot be known)."""
    count = answer_tokens(row.get("order"), row.get("model_kind"), row.get("num_tokens"))
    nfe = _number(row.get("nfe"))
    rate = count / nfe if count is not None and nfe else (0.0 if count is not None and nfe == 0 else None)
    return {"answer_tokens": count, "answer_tps": rate}


def with_answer_columns(frame: "pd.DataFrame") -> "pd.DataFrame":
    """`frame` with `answer_tokens` / `answer_tps` filled in where they are absent or empty
    (hand-built frames, rows read from files written before these columns)."""
    import pandas as pd

    if all(c in frame for c in ANSWER_COLUMNS) and frame["answer_tokens"].notna().all():
        return frame
    out = frame.copy()
    fields = ("order", "model_kind", "num_tokens", "nfe")
    records = out.reindex(columns=list(fields)).to_dict("records")
    computed = pd.DataFrame([answer_columns(r) for r in records], index=out.index, columns=list(ANSWER_COLUMNS))
    for column in ANSWER_COLUMNS:
        given = pd.to_numeric(out[column], errors="coerce") if column in out else None
        values = pd.to_numeric(computed[column], errors="coerce")
        out[column] = values if given is None else given.fillna(values)
    return out


def measured(frame: "pd.DataFrame", measure: str) -> "pd.DataFrame":
    """The frame on which `measure`'s tokens per step is what every analysis reads: for "answer",
    `num_tokens` and `tps` become the answer's (rows without an answer count are left out)."""
    if check_measure(measure) == "window" or len(frame) == 0:
        return frame
    out = with_answer_columns(frame)
    out = out[out["answer_tokens"].notna()].copy()
    out["num_tokens"] = out["answer_tokens"].astype(float)
    out["tps"] = out["answer_tps"].astype(float)
    return out
