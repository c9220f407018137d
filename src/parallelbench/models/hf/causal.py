"""Autoregressive causal LMs (the paper's Qwen / Llama rows, SmolLM2 here): greedy, one token per step.

Each sample is its chat prompt, left-padded into a batch and decoded with
`model.generate` (greedy, no sampling). One token per forward call, so NFE equals the
tokens produced (the stop token included) and tokens per step is 1.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Sequence

import torch

from parallelbench.models.base import Generation

if TYPE_CHECKING:
    from parallelbench.tasks.base import Sample


class HFCausalTextModel:
    kind = "autoregressive"

    def __init__(self, model: Any, tokenizer: Any, name: str, *, stop_ids: Sequence[int], batch_size: int = 8,
                 versions: dict[str, str] | None = None):
        from parallelbench.models.hf.tokenizer import HFChatTokenizer

        self.model = model
        self.chat = HFChatTokenizer(tokenizer, stop_ids)
        self.name = name
        self.batch_size = batch_size
        self.stop_ids = list(stop_ids)
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.stop_ids[0]
        self._versions = dict(versions or {})

    # CausalModel protocol (APD's verifier): next-token logits at every position
    @property
    def eos_id(self) -> int:
        return self.stop_ids[0]

    @property
    def vocab_size(self) -> int:
        return int(self.model.get_output_embeddings().weight.shape[0])

    @torch.no_grad()
    def forward(self, tokens: torch.Tensor, *, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.model(input_ids=tokens, attention_mask=attention_mask).logits

    def versions(self) -> dict[str, str]:
        import transformers

        return {"transformers": transformers.__version__, "torch": torch.__version__, "hf_family": "causal",
                **self._versions}

    @torch.no_grad()
    def generate(self, samples: "Sequence[Sample]", strategy: Any = None, *, max_new_tokens: int,
                 seed: int = 0) -> list[Generation]:
        """Greedy decoding; `strategy` must be None (autoregressive models have no unmasking order)."""
        if strategy is not None:
            raise ValueError(f"model {self.name!r} is autoregressive: it decodes one token per step, give no strategy")
        out: list[Generation] = []
        device = next(self.model.parameters()).device
        for start in range(0, len(samples), self.batch_size):
            batch = samples[start : start + self.batch_size]
            prompts = [self.chat.encode_chat(s.messages) for s in batch]
            width = max(len(p) for p in prompts)
            ids = torch.full((len(prompts), width), self.pad_id, dtype=torch.long)
            mask = torch.zeros((len(prompts), width), dtype=torch.long)
            for i, p in enumerate(prompts):
                ids[i, width - len(p):] = torch.tensor(p)
                mask[i, width - len(p):] = 1
            began = time.perf_counter()
            generated = self.model.generate(
                input_ids=ids.to(device), attention_mask=mask.to(device), max_new_tokens=max_new_tokens,
                do_sample=False, eos_token_id=self.stop_ids, pad_token_id=self.pad_id,
            )[:, width:].tolist()
            elapsed = (time.perf_counter() - began) / max(1, len(prompts))
            out.extend(self._generation(tokens, elapsed) for tokens in generated)
        return out

    def _generation(self, tokens: list[int], wall_time: float) -> Generation:
        kept = self.chat.cut(tokens)
        stopped = len(kept) < len(tokens)
        steps = len(kept) + (1 if stopped else 0)
        return Generation(
            text=self.chat.decode(kept),
            nfe=steps,
            tokens_per_step=[1] * steps,
            order=list(range(len(kept))),
            token_texts=self.chat.token_texts(kept),
            num_tokens=steps,
            wall_time=wall_time,
            extra={"stopped": stopped},
        )


def build(ckpt, opts, *, device: str, dtype, name: str):
    from transformers import AutoModelForCausalLM

    from parallelbench.models.hf.loading import load_tokenizer, load_weights
    from parallelbench.models.hf.tokenizer import stop_ids_of

    trust = bool(opts.trust_remote_code)
    label = ckpt.label
    tokenizer = load_tokenizer(ckpt, trust_remote_code=trust, revision=opts.revision)
    model = load_weights(ckpt, AutoModelForCausalLM, device=device, dtype=dtype, trust_remote_code=trust,
                         revision=opts.revision)
    stops = stop_ids_of(tokenizer, ckpt.config)
    if not stops:
        raise ValueError(f"'hf:{ckpt.label}' has no EOS token in its tokenizer; cannot tell where answers end")
    versions = {"checkpoint": label}
    base = HFCausalTextModel(model, tokenizer, name, stop_ids=stops, batch_size=opts.batch_size, versions=versions)
    if opts.medusa:
        from parallelbench.models.medusa.decoder import MedusaTextModel
        from parallelbench.models.medusa.heads import load_heads

        heads, _ = load_heads(opts.medusa, hidden_size=int(model.config.hidden_size), vocab_size=base.vocab_size)
        return MedusaTextModel(base, heads.to(dtype=dtype), opts.medusa)
    return base
