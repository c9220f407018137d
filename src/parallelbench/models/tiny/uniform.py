"""Uniform-transition variant of the tiny model (appendix F.5, SEDD-style) and its sampler.

Noise: each answer position is replaced, with probability t, by a token drawn uniformly
from the vocabulary (every token but [PAD], [MASK] and [SEP]) instead of by [MASK]. The
network sees no marker of which positions are corrupted, so it predicts the clean token
at *every* answer position; the loss is the cross-entropy there, [EOS] padding down-weighted
as for the masked model (an x0-prediction simplification of SEDD's score entropy).

Sampler: the answer region starts as uniform random tokens. At step i of S the network
predicts x0 for every position; each position is then re-noised independently with
probability t_next = 1 - (i + 1) / S. So every position can still change until the last
step, which is the property the paper tests: refinement can undo errors that masked
diffusion commits to for good. A position's "order" is the step after which it never
changed, so tokens_per_step counts how many positions settled at each step.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any, Sequence

import torch
import torch.nn.functional as F

from parallelbench.models.base import Generation

if TYPE_CHECKING:
    from parallelbench.models.tiny.model import TinyDenoiser
    from parallelbench.models.tokenizer import WordTokenizer
    from parallelbench.tasks.base import Sample


def noise_ids(vocab_size: int, excluded: Sequence[int]) -> torch.Tensor:
    """The ids uniform noise draws from."""
    keep = torch.ones(vocab_size, dtype=torch.bool)
    keep[list(excluded)] = False
    return keep.nonzero(as_tuple=True)[0]


def _excluded(model: "TinyDenoiser") -> list[int]:
    return [model.cfg.pad_id, model.mask_id, model.sep_id]


def uniform_diffusion_loss(
    model: "TinyDenoiser", batch: dict[str, torch.Tensor], gen: torch.Generator
) -> torch.Tensor:
    canvas, maskable = batch["canvas"], batch["maskable"]
    b = canvas.shape[0]
    t = ((torch.rand((), generator=gen) + torch.arange(b) / b) % 1.0) * (1 - 1e-3) + 1e-3
    corrupt = (torch.rand(canvas.shape, generator=gen) < t[:, None]) & maskable
    pool = noise_ids(model.vocab_size, _excluded(model))
    random_tokens = pool[torch.randint(len(pool), canvas.shape, generator=gen)]
    inputs = torch.where(corrupt, random_tokens, canvas)
    logits = model(inputs, attention_mask=batch["attention"], positions=maskable)
    from parallelbench.models.tiny.data import EOS_WEIGHT

    ce = F.cross_entropy(logits, canvas[maskable], reduction="none")
    # As for the masked model: the [EOS] padding must not swamp the content tokens.
    w = torch.where(canvas[maskable] == model.eos_id, EOS_WEIGHT, 1.0)
    return (ce * w).sum() / w.sum()


@torch.no_grad()
def uniform_sample(
    model: "TinyDenoiser",
    prompts: Sequence[Sequence[int]],
    gen_length: int,
    steps: int,
    *,
    template: Sequence[Sequence[int]] | None = None,
    temperature: float = 0.0,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Decode with the re-noising sampler; one dict (tokens, order, nfe) per prompt.

    Row i draws its randomness from a generator seeded `seed + i`. Template positions
    that are not [MASK] stay fixed throughout.
    """
    n = len(prompts)
    width = max(len(p) for p in prompts)
    pad = model.cfg.pad_id
    prompt = torch.full((n, width), pad, dtype=torch.long)
    attn = torch.zeros((n, width + gen_length), dtype=torch.bool)
    for r, p in enumerate(prompts):
        prompt[r, width - len(p) :] = torch.tensor(list(p), dtype=torch.long)
        attn[r, width - len(p) :] = True
    fixed = torch.full((n, gen_length), model.mask_id, dtype=torch.long)
    if template is not None:
        fixed = torch.tensor([list(t) for t in template], dtype=torch.long)
    free = fixed == model.mask_id
    pool = noise_ids(model.vocab_size, _excluded(model))
    gens = [torch.Generator().manual_seed(seed + r) for r in range(n)]

    def noise_like() -> tuple[torch.Tensor, torch.Tensor]:
        out = torch.empty((n, gen_length), dtype=torch.long)
        draw = torch.empty((n, gen_length))
        for r, g in enumerate(gens):
            out[r] = pool[torch.randint(len(pool), (gen_length,), generator=g)]
            draw[r] = torch.rand(gen_length, generator=g)
        return out, draw

    noise, _ = noise_like()
    x = torch.where(free, noise, fixed)
    settled = torch.full((n, gen_length), -1, dtype=torch.long)
    settled[free] = 0
    for i in range(steps):
        logits = model(torch.cat([prompt, x], 1), attention_mask=attn).logits[:, width:]
        logits[..., model.mask_id] = float("-inf")
        if temperature > 0:
            probs = F.softmax(logits / temperature, -1)
            x0 = torch.stack([torch.multinomial(probs[r], 1, generator=gens[r]).squeeze(-1) for r in range(n)])
        else:
            x0 = logits.argmax(-1)
        t_next = 1.0 - (i + 1) / steps
        noise, draw = noise_like()
        new = torch.where(draw < t_next, noise, x0)
        new = torch.where(free, new, fixed)
        settled = torch.where(free & (new != x), i, settled)
        x = new
    return [{"tokens": x[r].tolist(), "order": settled[r].tolist(), "nfe": steps} for r in range(n)]


class UniformTextModel:
    """`BenchModel` of the uniform variant; reads k (or steps) and temperature from the strategy."""

    kind = "diffusion"

    def __init__(self, net: "TinyDenoiser", tokenizer: "WordTokenizer", name: str, *, batch_size: int = 64,
                 versions: dict[str, str] | None = None):
        self.net, self.tokenizer, self.name = net, tokenizer, name
        self.net.sep_id = tokenizer.sep_id  # folders exported before sep_id was in the config
        self.batch_size = batch_size
        self._versions = dict(versions or {})

    def versions(self) -> dict[str, str]:
        import parallelbench

        return {"parallelbench": getattr(parallelbench, "__version__", "unknown"),
                "torch": torch.__version__, "sampler": "uniform-renoise", **self._versions}

    def generate(self, samples: "Sequence[Sample]", strategy: Any, *, max_new_tokens: int, seed: int = 0) -> list[Generation]:
        from parallelbench.decoding.strategy import as_strategy

        if strategy is None:
            raise ValueError(f"model {self.name!r} is a diffusion model: give a decoding strategy (k or steps)")
        opts = as_strategy(strategy).options
        k = getattr(opts, "k", None)
        steps = getattr(opts, "steps", None) or math.ceil(max_new_tokens / (k or 1))
        out: list[Generation] = []
        for start in range(0, len(samples), self.batch_size):
            batch = samples[start : start + self.batch_size]
            prompts = [self.tokenizer.encode_chat(s.messages) for s in batch]
            templates = None
            if any(s.output_format for s in batch):
                templates = [self.tokenizer.encode_template(s.output_format, max_new_tokens) if s.output_format
                             else [self.net.mask_id] * max_new_tokens for s in batch]
            began = time.perf_counter()
            rows = uniform_sample(self.net, prompts, max_new_tokens, steps, template=templates,
                                  temperature=float(opts.temperature), seed=seed + start)
            share = (time.perf_counter() - began) / len(batch)
            for row in rows:
                tokens = row["tokens"]
                cut = tokens.index(self.tokenizer.eos_id) if self.tokenizer.eos_id in tokens else len(tokens)
                order = row["order"]
                generated = [o for o in order if o >= 0]
                per_step = [sum(1 for o in generated if o == s) for s in range(steps)]
                out.append(Generation(
                    text=self.tokenizer.decode(tokens[:cut]), nfe=row["nfe"], tokens_per_step=per_step,
                    order=order[:cut], token_texts=self.tokenizer.token_texts(tokens[:cut]),
                    num_tokens=len(generated), wall_time=share, extra={"eos_index": cut, "sampler": "uniform"},
                ))
        return out
