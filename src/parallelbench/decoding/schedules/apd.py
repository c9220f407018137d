"""APD, adaptive parallel decoding: left to right, with an autoregressive verifier.

Each step drafts the next `max_lookahead` masked positions from the dLLM's
marginals (Gumbel-max with per-row noise), runs the verifier (a `CausalModel`)
once on prompt + prefix + draft, and draws from the mixture
`R * dLLM logits + (1 - R) * verifier logits` with the *same* noise. The longest
prefix where the two draws agree is committed (the first drafted token always is),
so the number of tokens per step adapts to how much the two models agree.

The verifier comes from `decode(..., verifier=...)`, or from the `verifier`
option: a "package.module:factory" path called with no arguments.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from parallelbench.decoding.strategy import DecodeOptions, Strategy, option_error, register_strategy
from parallelbench.decoding.view import Decision, StepView, row_max, rows_of


@dataclass
class ApdOptions(DecodeOptions):
    mixture_weight: float = 0.7  # R: weight of the dLLM in the mixture (1 = accept every draft)
    max_lookahead: int = 16  # drafted positions per step
    verifier: str | None = None  # "module:factory" returning a CausalModel, when decode() gets none


def load_verifier(path: str) -> Any:
    from parallelbench.userimport import UserCodeError, load_named

    if ":" not in path.strip(":") :
        raise ValueError(f"APD verifier {path!r} is not of the form module:factory (e.g. my_models:verifier)")
    try:
        factory = load_named(path, f"cannot load APD verifier {path!r}", "functions", callable)
    except UserCodeError as exc:
        raise ValueError(str(exc)) from None
    return factory()


@register_strategy("apd")
class AdaptiveParallelDecoding(Strategy):
    description = "APD: left to right, the longest draft prefix on which the dLLM and a causal verifier agree"
    Options = ApdOptions
    supports_block_causal = False  # drafts left to right across blocks with a causal verifier
    focus = "candidates"

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._verifier = None

    def check_options(self) -> None:
        super().check_options()
        o = self.options
        if not 0.0 <= o.mixture_weight <= 1.0:
            raise option_error("mixture_weight", o.mixture_weight, "[0, 1]")
        if o.max_lookahead < 1:
            raise option_error("max_lookahead", o.max_lookahead, "an integer >= 1")
        if o.verifier is not None and ":" not in o.verifier:
            raise option_error("verifier", o.verifier, "'package.module:factory' or None")

    def verifier(self, given: Any) -> Any:
        if given is not None:
            return given
        if self.options.verifier is None:
            raise ValueError(
                "strategy 'apd' needs an autoregressive verifier: pass decode(..., verifier=model) "
                "or the option verifier='package.module:factory'"
            )
        if self._verifier is None:
            self._verifier = load_verifier(self.options.verifier)
        return self._verifier

    def begin(self, context: dict[str, Any]) -> None:
        context["verifier"] = self.verifier(context.get("verifier"))

    def init_state(self, batch_size: int, gen_length: int, device: torch.device) -> dict[str, torch.Tensor]:
        return {"extra_verifier_calls": torch.zeros(batch_size, dtype=torch.long, device=device)}

    def step(self, view: StepView) -> Decision:
        o = self.options
        verifier = self.verifier(view.aux.get("verifier"))
        cand = view.candidates
        rank = torch.cumsum(cand.long(), dim=1) - 1
        window = cand & (rank < o.max_lookahead)  # the next masked positions, left to right

        # only the drafted window is scored: [N, V] rows instead of the whole [b, G, V] region
        r, pos = window.nonzero(as_tuple=True)
        diff = torch.log_softmax(rows_of(view.logits, r, pos).float(), dim=-1)
        if 0 <= view.mask_id < diff.shape[-1]:
            diff[:, view.mask_id] = float("-inf")
        vocab = min(diff.shape[-1], int(verifier.vocab_size))
        noise = None
        if view.temperature > 0:  # the Gumbel noise of view.gumbel((G, vocab)) at the window's positions
            index = pos.unsqueeze(1) * vocab + torch.arange(vocab, device=view.device).unsqueeze(0)
            noise = -torch.log(-torch.log(view.uniform_at(r, index)))

        def draw(logits: torch.Tensor) -> torch.Tensor:
            z = logits[..., :vocab]
            if noise is not None:
                z = z / view.temperature + noise
            return row_max(z)[1]  # argmax (first index on a tie), faster on the CPU

        draft = view.canvas.clone()
        draft[r, pos] = draw(diff)
        p_len = view.aux["prompt_length"]
        tokens = view.aux["canvas"].clone()
        tokens[:, p_len:] = torch.where(window, draft, tokens[:, p_len:])
        ver_logits = verifier.forward(tokens, attention_mask=view.aux["attention_mask"])
        view.state["extra_verifier_calls"] += 1
        # position p_len + j - 1 predicts generation position j
        ver = torch.log_softmax(ver_logits[r, p_len - 1 + pos, :vocab].float(), dim=-1)
        floor = -1e4  # keeps 0 * (-inf) out of the mixture
        mix = diff[:, :vocab].clamp_min(floor).mul_(o.mixture_weight)  # R a + (1 - R) b, in place
        mix.add_(ver.clamp_min_(floor).mul_(1.0 - o.mixture_weight))
        target = view.canvas.clone()
        target[r, pos] = draw(mix)

        first = window & (rank == 0)
        agree = (draft == target) | first | ~window
        accepted = window & (torch.cumprod(agree.long(), dim=1) > 0)
        return Decision(commit=accepted, tokens=draft)
