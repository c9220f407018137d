"""`HFDiffusionTextModel`: the runner-facing side of an HF dLLM.

It is `DiffusionTextModel` with two additions: each batch decodes inside a net session
(so the KV cache knows where the prompt ends and how blocks are laid out), and the
answer is cut at the first of any stop id (EOS or end-of-turn), not only `eos_id`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parallelbench.models.base import Generation
from parallelbench.models.diffusion import DiffusionTextModel

if TYPE_CHECKING:
    from parallelbench.decoding.strategy import Strategy
    from parallelbench.tasks.base import Sample


class HFDiffusionTextModel(DiffusionTextModel):
    def _generate_batch(
        self, batch: "list[Sample]", strategy: "Strategy", *, max_new_tokens: int, seed: int
    ) -> list[Generation]:
        with self.net.session(max_new_tokens, strategy.options.block_length, seed):
            gens = super()._generate_batch(batch, strategy, max_new_tokens=max_new_tokens, seed=seed)
            refreshes = self.net.cache_refreshes()
        if refreshes:
            for i, g in enumerate(gens):
                g.extra["cache_refreshes"] = refreshes.get(i, 0)
        return gens

    def _stop_ids(self) -> set[int]:
        return set(getattr(self.tokenizer, "stop_ids", ())) | super()._stop_ids()
