"""Failure browser: samples one-by-one decoding solved and a parallel decode broke.

For every task, pairs a one-by-one decode (one token per forward pass) that scored as correct
with a parallel decode (more than one token per pass) of the same model and sample that did
not. Each token is coloured by the step that committed it (the `order` and `token_texts`
columns), which shows where parallel commits went wrong: tokens sharing a colour were
committed in the same forward pass.

One quantity throughout: a step is one forward call of the model. The card's step count is
the decode's NFE, the same denominator as its tokens per step (tokens / forward calls), and
the colour bar runs from forward call 1 to that NFE, so a token committed in the last call
has the bar's last colour. Calls that commit only tokens not shown (e.g. [EOS] padding) still
count; the card says how many calls committed a shown token.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

import pandas as pd

from parallelbench.analysis.curves import parse_json_list, with_curves
from parallelbench.display import display_name

PREFILLED = -1
SERIAL_TOLERANCE = 1e-9


@dataclass
class Decode:
    """One output: its configuration, speed, score and (token text, commit step) pairs."""

    config: str
    tps: float
    score: float
    output: str
    tokens: list[tuple[str, int]] = field(default_factory=list)
    nfe: int | None = None  # forward calls of the decode (None: not recorded)
    num_tokens: int | None = None  # generated tokens counted by tokens per step

    @property
    def steps(self) -> int:
        """Forward calls of the decode: the NFE when recorded, else the last commit step + 1."""
        if self.nfe is not None and self.nfe > 0:
            return int(self.nfe)
        return self.last_step + 1 if self.last_step >= 0 else 0

    @property
    def committing_steps(self) -> int:
        """Forward calls that committed at least one of the shown tokens."""
        return len({s for _, s in self.tokens if s >= 0})

    @property
    def last_step(self) -> int:
        return max((s for _, s in self.tokens), default=PREFILLED)


@dataclass
class FailurePair:
    task: str
    model: str
    sample_id: str
    serial: Decode
    parallel: Decode


def _decode(row) -> Decode:
    texts = [str(t) for t in parse_json_list(row.get("token_texts"))]
    order = [int(o) for o in parse_json_list(row.get("order"))]
    tokens = list(zip(texts, order)) + [(t, PREFILLED) for t in texts[len(order):]]
    return Decode(
        config=str(row.get("config", row.get("strategy", ""))),
        tps=float(row["tps"]),
        score=float(row["score"]),
        output=str(row.get("output", "") or ""),
        tokens=tokens,
        nfe=_count(row.get("nfe")),
        num_tokens=_count(row.get("num_tokens")),
    )


def _count(value) -> int | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(number) if number == number and number >= 0 else None


def find_failures(frame: pd.DataFrame, correct_at: float = 1.0, per_task: int = 3) -> dict[str, list[FailurePair]]:
    """{task: pairs}. A decode is correct when score >= `correct_at`; one-by-one means tps == 1.

    Per sample the parallel failure with the fewest tokens per step is kept (the mildest
    parallelism that already breaks it); samples breaking at the lowest tokens per step come
    first, at most `per_task` per task.
    """
    out: dict[str, list[FailurePair]] = {}
    if frame is None or len(frame) == 0:
        return out
    data = with_curves(frame)
    serial_mask = (data["tps"] - 1.0).abs() <= SERIAL_TOLERANCE
    good = data[serial_mask & (data["score"] >= correct_at - SERIAL_TOLERANCE)]
    bad = data[(data["tps"] > 1.0 + SERIAL_TOLERANCE) & (data["score"] < correct_at - SERIAL_TOLERANCE)]
    if good.empty or bad.empty:
        return out
    keys = ["model", "task", "sample_id"]
    good = good.sort_values(["score"], ascending=False, kind="stable").drop_duplicates(keys)
    bad = bad.sort_values(["tps", "score"], ascending=[True, False], kind="stable").drop_duplicates(keys)
    joined = bad.merge(good, on=keys, suffixes=("_par", "_ser"))
    for task, group in joined.groupby("task", sort=True):
        pairs = []
        for _, row in group.sort_values(["tps_par", "sample_id"], kind="stable").head(per_task).iterrows():
            ser = {c[: -len("_ser")]: row[c] for c in row.index if c.endswith("_ser")}
            par = {c[: -len("_par")]: row[c] for c in row.index if c.endswith("_par")}
            pairs.append(FailurePair(str(task), str(row["model"]), str(row["sample_id"]), _decode(ser), _decode(par)))
        out[str(task)] = pairs
    return out


def _colour(fraction: float) -> tuple[str, str]:
    """Background on the Viridis scale and a readable text colour for it."""
    from plotly.colors import sample_colorscale

    background = sample_colorscale("Viridis", [min(max(fraction, 0.0), 1.0)])[0]
    return background, ("#ffffff" if fraction < 0.55 else "#111111")


def _collapse_trailing(tokens: list[tuple[str, int]]) -> list[tuple[str, int, int]]:
    """Trailing repeats of one special token (``<eos>`` padding) shown once with a count."""
    items = [(t, s, 1) for t, s in tokens]
    while len(items) >= 2 and items[-1][0] == items[-2][0] and items[-1][0].startswith("<") and items[-1][0].endswith(">"):
        text, step, count = items.pop()
        prev_text, prev_step, prev_count = items.pop()
        items.append((prev_text, prev_step, prev_count + count))
    return items


def tokens_html(decode: Decode) -> str:
    """The output as coloured spans (hover shows the step) followed by its colour bar."""
    if not decode.tokens:
        return f'<pre class="plain">{html.escape(decode.output)}</pre><p class="note">no per-token order recorded</p>'
    last = max(decode.steps - 1, decode.last_step, 1)
    spans = []
    for text, step, count in _collapse_trailing(decode.tokens):
        # a line break (between grid rows) shows as a visible mark, coloured by its step, then breaks the line
        shown = html.escape(text).replace("\n", "\u21b5\n") + (f"<sub>×{count}</sub>" if count > 1 else "")
        if step < 0:
            spans.append(f'<span class="tok prefilled" title="pre-filled">{shown}</span>')
            continue
        background, foreground = _colour(step / last)
        title = f"forward call {step + 1} of {max(decode.steps, step + 1)}"
        spans.append(f'<span class="tok" style="background:{background};color:{foreground}" title="{title}">{shown}</span>')
    bar = _colour_bar(max(decode.steps, decode.last_step + 1))
    return f'<div class="tokens">{"".join(spans)}</div>{bar}'


def _colour_bar(calls: int) -> str:
    """Viridis from forward call 1 to forward call `calls` (the decode's NFE)."""
    from plotly.colors import sample_colorscale

    stops = sample_colorscale("Viridis", [i / 10 for i in range(11)])
    gradient = ", ".join(stops)
    return (
        '<div class="colourbar"><span>forward call 1</span>'
        f'<span class="ramp" style="background:linear-gradient(to right, {gradient})"></span>'
        f"<span>forward call {max(calls, 1)} (last)</span>"
        '<span class="tok prefilled">pre-filled</span></div>'
    )


def _speed(decode: Decode) -> str:
    """"2.00 tokens/step = 32 tokens / 16 forward calls (15 committed a shown token)": one
    step count, the one tokens per step divides by."""
    calls = decode.steps
    text = f"{decode.tps:.2f} tokens/step"
    if decode.num_tokens is not None and calls:
        text += f" = {decode.num_tokens} tokens / {calls} forward call{'s' if calls != 1 else ''}"
    else:
        text += f" · {calls} forward call{'s' if calls != 1 else ''}"
    if decode.committing_steps != calls:
        text += f" ({decode.committing_steps} committed a shown token)"
    return text


def _decode_html(title: str, decode: Decode) -> str:
    return (
        f'<div class="decode"><h4>{html.escape(title)}</h4>'
        f'<p class="meta"><code>{html.escape(display_name(decode.config))}</code> · score {decode.score:.2f} · '
        f"{_speed(decode)}</p>{tokens_html(decode)}</div>"
    )


def failures_html(failures: dict[str, list[FailurePair]]) -> str:
    """One block per task with one-by-one (left) and parallel (right) outputs side by side."""
    blocks = []
    for task, pairs in failures.items():
        items = []
        for pair in pairs:
            items.append(
                f'<div class="pair" data-task="{html.escape(display_name(task))}">'
                f'<p class="meta">model <code>{html.escape(display_name(pair.model))}</code> · '
                f'sample <code>{html.escape(display_name(pair.sample_id))}</code></p>'
                f'<div class="side-by-side">{_decode_html("one-by-one (correct)", pair.serial)}'
                f'{_decode_html("parallel (wrong)", pair.parallel)}</div></div>'
            )
        blocks.append(
            f'<details class="task-failures" open><summary>{html.escape(display_name(task))} '
            f"({len(pairs)} example{'s' if len(pairs) != 1 else ''})</summary>{''.join(items)}</details>"
        )
    return "".join(blocks)
