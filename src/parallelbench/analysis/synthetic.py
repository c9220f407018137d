"""A synthetic results frame shaped like contract 5, for tests, docs and trying the report.

Nothing here is a measurement. Each sample has a fixed "ease" u ~ U(0, 1) and is solved
at t tokens per step when u < base * exp(-decay * (t - 1)), so correctness only gets worse
with more parallelism, as the oracle assumes. Top-k runs commit k tokens per step in a
random (or left-to-right) order; threshold runs commit more tokens per step at lower
thresholds and on easier samples.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from parallelbench.analysis.curves import strategy_kind

#: task -> (category, accuracy at one token per step, decay per extra token per step,
#: accuracy change per halving of the semi-AR block at k = 2 in points)
TASKS = {
    "waiting_line/copy": ("waiting_line", 1.0, 0.01, 0.0),
    "waiting_line/shuffle": ("waiting_line", 0.95, 0.6, 8.0),
    "text_writing/w2s_easy": ("text_writing", 0.9, 0.25, -12.0),
    "puzzles/sudoku": ("puzzles", 0.6, 0.05, 4.0),
}
WORDS = ["Susan", "Fox", "Philip", "Gray", "Jack", "Burns", "Tyler", "Lopez", "Emma", "Stone", "Liam", "Reed", "Ava", "Hart", "Noah", "Cole"]
GEN_LENGTH = 16
#: how fast each top-k strategy loses accuracy relative to the task's decay
STRATEGY_DECAY = {"random": 1.0, "confidence-topk": 0.8, "l2r": 1.4}


def _config(strategy: str, params: dict) -> str:
    return strategy + ("[" + ",".join(f"{k}={v}" for k, v in sorted(params.items())) + "]" if params else "")


def _order(rng: np.random.Generator, tps_target: float, left_to_right: bool, block_length: int | None) -> list[int]:
    """Commit step per position for a decode committing ~tps_target tokens per step."""
    positions = list(range(GEN_LENGTH))
    if block_length:
        blocks = [positions[i : i + block_length] for i in range(0, GEN_LENGTH, block_length)]
        ordered = [p for block in blocks for p in (block if left_to_right else list(rng.permutation(block)))]
    else:
        ordered = positions if left_to_right else list(rng.permutation(positions))
    k = max(1, int(round(tps_target)))
    order = [0] * GEN_LENGTH
    for index, position in enumerate(ordered):
        order[position] = index // k
    return order


def result_row(strategy: str = "random", params: dict | None = None, **fields) -> dict:
    """One contract-5 row with harmless defaults; `fields` override any column."""
    params = dict(params or {})
    num_tokens = fields.get("num_tokens", GEN_LENGTH)
    nfe = fields.get("nfe", num_tokens)
    row = dict(
        model="m", model_kind="synthetic", strategy=strategy, strategy_kind=strategy_kind(strategy),
        params=json.dumps(params, sort_keys=True), config=_config(strategy, params), task="t", category="c",
        sample_id="s", seed=0, output="", score=0.0, scores="{}", nfe=nfe, num_tokens=num_tokens,
        tps=num_tokens / nfe if nfe else 0.0, tokens_per_step="[]", order="[]", token_texts="[]",
        wall_time=0.0, versions="{}", created_at="2026-01-01T00:00:00Z",
    )
    row.update(fields)
    if "tps" not in fields:
        row["tps"] = row["num_tokens"] / row["nfe"] if row["nfe"] else 0.0
    return row


#: edit-threshold rows (`editing=True`): chance that an answer wrong at unmasking is repaired by the
#: end, and that a right one is broken
REPAIR_CHANCE, BREAK_CHANCE = 0.35, 0.05


def synthetic_frame(seed: int = 0, samples: int = 8, model: str = "synthetic-dllm", editing: bool = False) -> pd.DataFrame:
    """A hand-made results frame: top-k, threshold and semi-AR sweeps over four tasks; with `editing`,
    also an edit-threshold sweep carrying the repair columns (score at unmasking, edits)."""
    rng = np.random.default_rng(seed)
    settings: list[tuple[str, dict]] = []
    for strategy in STRATEGY_DECAY:
        settings += [(strategy, {"k": k}) for k in (1, 2, 4, 8)]
    settings += [("confidence-threshold", {"threshold": t}) for t in (1.0, 0.9, 0.8, 0.7, 0.6, 0.5)]
    settings += [("random", {"k": 2, "block_length": b}) for b in (2, 4, 8, 16)]
    if editing:
        settings += [("edit-threshold", {"threshold": t}) for t in (0.9, 0.7, 0.5)]
    rows = []
    for task, (category, base, decay, per_halving) in TASKS.items():
        ease = rng.uniform(size=samples)
        for strategy, params in settings:
            for i in range(samples):
                if strategy in ("confidence-threshold", "edit-threshold"):
                    target = 1.0 + (1.0 - params["threshold"]) * 10.0 * (0.5 + ease[i])
                else:
                    target = float(params["k"])
                order = _order(rng, target, strategy == "l2r", params.get("block_length"))
                nfe = max(order) + 1
                tps = GEN_LENGTH / nfe
                p = base * math.exp(-decay * STRATEGY_DECAY.get(strategy, 0.7) * (tps - 1.0))
                if "block_length" in params:
                    p += per_halving / 100.0 * (4 - math.log2(params["block_length"]))
                solved = ease[i] < min(max(p, 0.0), 1.0)
                answer = [WORDS[(i + j) % len(WORDS)] for j in range(GEN_LENGTH)]
                texts = list(answer)
                if not solved:
                    texts[3], texts[10] = texts[10], texts[3]
                repair = {}
                if strategy == "edit-threshold":  # the answer at unmasking is the one drawn above; edits may change it
                    flip = rng.uniform() < (REPAIR_CHANCE if not solved else BREAK_CHANCE)
                    final = solved != flip
                    final_texts = list(answer) if final else [*answer[:3], answer[10], *answer[4:10], answer[3], *answer[11:]]
                    edits = int(rng.integers(2, 5)) if flip else int(rng.integers(0, 2))
                    repair = dict(unmask_score=1.0 if solved else 0.0, unmask_output=" ".join(texts) if flip else None,
                                  edits=edits, inserts=0, deletes=0, changed_tokens=2 if flip else 0)
                    solved, texts = final, final_texts
                elif editing:  # strategies that never edit: the answer at unmasking is the final one
                    repair = dict(unmask_score=1.0 if solved else 0.0, unmask_output=None, edits=0, inserts=0, deletes=0,
                                  changed_tokens=0)
                rows.append(
                    dict(
                        model=model, model_kind="synthetic", strategy=strategy, strategy_kind=strategy_kind(strategy),
                        params=json.dumps(params, sort_keys=True), config=_config(strategy, params), task=task,
                        category=category, sample_id=f"{task.split('/')[1]}-{i}", seed=0, output=" ".join(texts),
                        score=1.0 if solved else 0.0, scores=json.dumps({"accuracy": 1.0 if solved else 0.0}),
                        nfe=nfe, num_tokens=GEN_LENGTH, tps=tps,
                        tokens_per_step=json.dumps([order.count(s) for s in range(nfe)]), order=json.dumps(order),
                        token_texts=json.dumps([(" " if j else "") + t for j, t in enumerate(texts)]), wall_time=0.0,
                        versions=json.dumps({"synthetic": 1}), created_at="2026-01-01T00:00:00Z", **repair,
                    )
                )
    return pd.DataFrame(rows)
