"""Measure a strategy's accuracy on a synthetic list operation with the ideal model.

The ideal model predicts the exact conditionals, so the measured accuracy
estimates the strategy's own cost and should match `closed_forms.accuracy`
within sampling error. All N samples are one task instance (by symmetry every
input list is the same problem), decoded as batches of rows sharing one answer set.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

# Greedy decoding needs the paper's zero-mean noise to break exact ties at random;
# it is small enough never to flip a non-tied argmax (gaps here are >= log 2).
GREEDY_NOISE_STD = 1e-3


@dataclass
class SimulationResult:
    task: str
    n: int
    strategy: str
    params: dict[str, Any]
    samples: int
    correct: int
    measured: float
    stderr: float
    analytic: float | None
    noise_std: float
    formatting: bool
    mean_nfe: float
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def z_score(self) -> float | None:
        """(measured - analytic) / stderr; None without an analytic value.

        When every sample agreed (measured stderr 0) the binomial error of the analytic
        value is used instead, so 0 successes against a small analytic p is not "z = inf";
        an analytic 0 or 1 contradicted by the samples gives a signed infinity.
        """
        if self.analytic is None:
            return None
        diff = self.measured - self.analytic
        stderr = self.stderr
        if stderr <= 0 and self.samples > 0:
            stderr = math.sqrt(max(self.analytic * (1.0 - self.analytic), 0.0) / self.samples)
        if stderr > 0:
            return diff / stderr
        return 0.0 if abs(diff) < 1e-12 else math.copysign(math.inf, diff)


def simulate(
    task: str,
    n: int,
    strategy: str,
    *,
    samples: int = 20_000,
    seed: int = 0,
    noise_std: float | None = None,
    formatting: bool = True,
    batch_size: int = 8192,
    block_causal: bool | None = None,
    **params: Any,
) -> SimulationResult:
    """Decode `samples` instances of `task` with `strategy` (a preset name) and its `params`.

    noise_std None picks the paper's setup: a tiny tie-breaking noise under greedy
    decoding (temperature 0 or unset), none under sampling (so marginals stay exact).
    A strategy that can change a written token (`Strategy.rewrites`) gets the ideal model's
    answers to editing steps, and the result's `extra` says how much it repaired
    (`repair_stats`). `block_causal` decodes through the model's block-causal face (one
    block over the answer); None: only for strategies that run on block-causal nets alone.
    """
    import torch

    from parallelbench.decoding import build_strategy, decode
    from parallelbench.models.ideal.synthetic import BOS, synthetic_task
    from parallelbench.theory.closed_forms import accuracy, check_task

    check_task(task)
    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    temperature = float(params.get("temperature", 0.0) or 0.0)
    if noise_std is None:
        noise_std = GREEDY_NOISE_STD if temperature == 0 else 0.0
    spec = synthetic_task(task, n, formatting=formatting)
    strat = build_strategy(strategy, **params)
    edits = bool(getattr(strat, "rewrites", False))
    if block_causal is None:
        block_causal = _block_causal_only(strat, spec)
    length = spec.answers.shape[1]
    correct, nfe_total, done = 0, 0, 0
    repair = RepairCounts()
    while done < samples:
        rows = min(batch_size, samples - done)
        model = spec.model(rows, noise_std=noise_std, seed=seed + done, edits=edits, block_causal=block_causal)
        prompts = torch.full((rows, 1), BOS, dtype=torch.long)
        template = spec.template.repeat(rows, 1)
        results = decode(model, prompts, gen_length=length, strategy=strat, template=template, seed=seed + done)
        tokens = torch.tensor([r.tokens for r in results], dtype=torch.long)
        valid = spec.is_valid(tokens)
        correct += int(valid.sum())
        nfe_total += sum(r.nfe for r in results)
        if edits:
            repair.add(results, valid, spec.is_valid)
        done += rows
    p = correct / samples
    if _analysed(strategy, params):
        analytic = accuracy(task, n, strategy, k=params.get("k"), threshold=params.get("threshold"),
                            temperature=temperature)
    else:
        analytic = _edit_analytic(task, n, strategy, dict(getattr(strat, "params", params)))
    return SimulationResult(
        task=task,
        n=n,
        strategy=strategy,
        params=dict(getattr(strat, "params", params)),
        samples=samples,
        correct=correct,
        measured=p,
        stderr=math.sqrt(p * (1 - p) / samples),
        analytic=analytic,
        noise_std=noise_std,
        formatting=formatting,
        mean_nfe=nfe_total / samples,
        extra=repair.stats(samples) if edits else {},
    )


@dataclass
class RepairCounts:
    """Sums over decoded rows of the repair record: right at unmasking, repaired, broken, edits."""

    unmask_correct: int = 0
    repaired: int = 0
    broken: int = 0
    edits: int = 0
    recorded: int = 0

    def add(self, results: list, valid: Any, is_valid: Any) -> None:
        import torch

        kept = [i for i, r in enumerate(results) if "unmask_tokens" in r.extra]
        if not kept:
            return
        unmask = is_valid(torch.tensor([results[i].extra["unmask_tokens"] for i in kept], dtype=torch.long))
        final = valid[kept]
        self.unmask_correct += int(unmask.sum())
        self.repaired += int((~unmask & final).sum())
        self.broken += int((unmask & ~final).sum())
        self.edits += sum(int(results[i].extra.get("edits", 0)) for i in kept)
        self.recorded += len(kept)

    def stats(self, samples: int) -> dict[str, Any]:
        """`repair_stats`: unmask accuracy (± its standard error), repaired and broken shares, mean edits."""
        n = max(self.recorded, 1)
        p = self.unmask_correct / n
        return {"unmask_accuracy": p, "unmask_stderr": math.sqrt(p * (1 - p) / n), "repaired": self.repaired / n,
                "broken": self.broken / n, "mean_edits": self.edits / n, "recorded": self.recorded}


# Options that change the analysed process; with any of them set no closed form applies.
_UNANALYSED_OPTIONS = {"block_length", "steps", "remasking", "factor", "bound"}


def _block_causal_only(strategy: Any, spec: Any) -> bool:
    """Whether `strategy` refuses the ideal model's canvas face and accepts its block-causal one
    (indel-threshold runs on block-diffusion nets alone)."""
    try:
        strategy.check_model(spec.model(1))
        return False
    except ValueError:
        try:
            strategy.check_model(spec.model(1, block_causal=True))
        except ValueError:
            return False  # neither: decoding says why, in one line
        return True


def _edit_analytic(task: str, n: int, strategy: str, params: dict[str, Any]) -> float | None:
    """The closed form of top-2 drafts with edits (`closed_forms.shuffle_edit_top2`; copy: 1), for
    `edit-threshold threshold=1 min_k=2 edit_rule=gain` greedy without blocks; else None."""
    from parallelbench.theory.closed_forms import shuffle_edit_top2

    if strategy != "edit-threshold" or params.get("threshold") != 1.0 or params.get("min_k") != 2:
        return None
    if params.get("edit_rule") != "gain" or params.get("temperature") or params.get("block_length"):
        return None
    if task in ("copy", "replace_index"):
        return 1.0  # every slot's conditional is its one token: nothing to edit
    if task != "shuffle":
        return None
    form = shuffle_edit_top2(n, float(params.get("edit_threshold", 0.5)))
    return None if form is None else form["final"]


def _analysed(strategy: str, params: dict[str, Any]) -> bool:
    if strategy in ("random", "confidence-topk"):
        return params.get("k") is not None and not (_UNANALYSED_OPTIONS & params.keys())
    if strategy == "confidence-threshold":
        return params.get("threshold") is not None and not (_UNANALYSED_OPTIONS & params.keys())
    return False
