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
    **params: Any,
) -> SimulationResult:
    """Decode `samples` instances of `task` with `strategy` (a preset name) and its `params`.

    noise_std None picks the paper's setup: a tiny tie-breaking noise under greedy
    decoding (temperature 0 or unset), none under sampling (so marginals stay exact).
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
    length = spec.answers.shape[1]
    correct, nfe_total, done = 0, 0, 0
    while done < samples:
        rows = min(batch_size, samples - done)
        model = spec.model(rows, noise_std=noise_std, seed=seed + done)
        prompts = torch.full((rows, 1), BOS, dtype=torch.long)
        template = spec.template.repeat(rows, 1)
        results = decode(model, prompts, gen_length=length, strategy=strat, template=template, seed=seed + done)
        tokens = torch.tensor([r.tokens for r in results], dtype=torch.long)
        correct += int(spec.is_valid(tokens).sum())
        nfe_total += sum(r.nfe for r in results)
        done += rows
    p = correct / samples
    analytic = accuracy(
        task,
        n,
        strategy,
        k=params.get("k"),
        threshold=params.get("threshold"),
        temperature=temperature,
    ) if _analysed(strategy, params) else None
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
    )


# Options that change the analysed process; with any of them set no closed form applies.
_UNANALYSED_OPTIONS = {"block_length", "steps", "remasking", "factor", "bound"}


def _analysed(strategy: str, params: dict[str, Any]) -> bool:
    if strategy in ("random", "confidence-topk"):
        return params.get("k") is not None and not (_UNANALYSED_OPTIONS & params.keys())
    if strategy == "confidence-threshold":
        return params.get("threshold") is not None and not (_UNANALYSED_OPTIONS & params.keys())
    return False
