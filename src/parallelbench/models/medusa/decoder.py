"""`MedusaTextModel`: a causal LM plus Medusa heads, decoded k tokens per forward call.

Rows decode one at a time with the backbone's KV cache, so a row's answer never depends
on its batch and the verified mode can roll the cache back to the accepted prefix.
Two modes, picked by the strategy:

- ``medusa`` (the paper's study): every forward call commits the backbone's next token plus
  the first k - 1 heads' guesses, unverified. k = 1 is plain greedy decoding.
- ``medusa-verified`` (Medusa's greedy acceptance, one candidate chain): the next forward
  feeds the committed token and the k - 1 guesses; guesses are kept while they equal the
  backbone's own greedy choice, plus one token the backbone decides. The answer is exactly
  greedy decoding; only the number of forward calls changes.
"""

from __future__ import annotations

import hashlib
import inspect
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import torch

from parallelbench.models.base import Generation
from parallelbench.models.medusa.heads import WEIGHTS_PT, WEIGHTS_ST, MedusaHeads

if TYPE_CHECKING:
    from parallelbench.tasks.base import Sample

MODES = {"medusa": False, "medusa-verified": True}  # strategy name -> verified


def heads_fingerprint(folder: str | Path) -> str:
    folder = Path(folder)
    digest = hashlib.sha256()
    for name in ("config.json", WEIGHTS_ST, WEIGHTS_PT):
        path = folder / name
        if path.is_file():
            with path.open("rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(chunk)
    return digest.hexdigest()[:16]


class MedusaTextModel:
    """`base` is the backbone's `HFCausalTextModel` (its model, chat tokenizer and stop ids)."""

    kind = "medusa"

    def __init__(self, base: Any, heads: MedusaHeads, heads_dir: str | Path):
        self.base = base
        self.heads = heads.to(next(base.model.parameters()).device).eval()
        self.heads_dir = str(heads_dir)
        self.name = base.name
        self._fingerprint = heads_fingerprint(heads_dir)

    @property
    def num_heads(self) -> int:
        return self.heads.num_heads

    def versions(self) -> dict[str, str]:
        return {**self.base.versions(), "medusa_heads": self._fingerprint, "medusa_num_heads": str(self.num_heads),
                "medusa_code": "1"}

    # ------------------------------------------------------------------ model calls
    def _hidden(self, ids: list[int], cache: Any) -> torch.Tensor:
        device = next(self.base.model.parameters()).device
        backbone = self.base.model.base_model
        # transformers >= 5.2x names the cache argument `cache`; earlier releases `past_key_values`
        key = "cache" if "cache" in inspect.signature(backbone.forward).parameters else "past_key_values"
        out = backbone(input_ids=torch.tensor([ids], device=device), use_cache=True, **{key: cache})
        return out.last_hidden_state[0]  # [T, D], after the final norm

    def _next(self, hidden: torch.Tensor) -> torch.Tensor:
        """Greedy backbone tokens for each position of hidden [T, D]."""
        return self.base.model.get_output_embeddings()(hidden).argmax(-1)

    def _guesses(self, last: torch.Tensor, count: int) -> list[int]:
        if count <= 0:
            return []
        logits = self.heads(last[None], self.base.model.get_output_embeddings(), count)  # [count, 1, V]
        return [int(t) for t in logits[:, 0].argmax(-1)]

    # ------------------------------------------------------------------ decoding
    def check_strategy(self, strategy: Any) -> tuple[int, bool]:
        name = getattr(strategy, "name", None)
        if strategy is None or name not in MODES:
            raise ValueError(
                f"model {self.name!r} has Medusa heads: decode it with --strategy medusa or medusa-verified "
                f"(got {name or 'no strategy'})"
            )
        k = int(strategy.options.k)
        if k > self.num_heads + 1:
            raise ValueError(
                f"k={k} needs {k - 1} Medusa heads but {self.heads_dir} has {self.num_heads}; "
                f"use k <= {self.num_heads + 1} or train more heads (--heads)"
            )
        return k, MODES[name]

    @torch.no_grad()
    def generate(self, samples: "Sequence[Sample]", strategy: Any = None, *, max_new_tokens: int,
                 seed: int = 0) -> list[Generation]:
        k, verified = self.check_strategy(strategy)
        out = []
        for sample in samples:
            prompt = self.base.chat.encode_chat(sample.messages)
            began = time.perf_counter()
            tokens, steps, accepted = self.decode_ids(prompt, k=k, verified=verified, max_new_tokens=max_new_tokens)
            out.append(self._generation(tokens, steps, accepted, k, time.perf_counter() - began))
        return out

    def decode_ids(self, prompt: list[int], *, k: int, verified: bool,
                   max_new_tokens: int) -> tuple[list[int], list[int], int]:
        """(tokens, tokens committed per forward call, head guesses accepted) for one prompt."""
        from transformers import DynamicCache

        stops = set(self.base.stop_ids)
        cache = DynamicCache()
        last = self._hidden(prompt, cache)[-1]
        tokens: list[int] = []
        steps: list[int] = []
        accepted_total = 0

        def commit(new: list[int]) -> bool:
            """Append up to the cap and the first stop; True when decoding is over."""
            room = max_new_tokens - len(tokens)
            taken: list[int] = []
            for t in new[:room]:
                taken.append(t)
                if t in stops:
                    break
            tokens.extend(taken)
            steps.append(len(taken))
            return bool(taken and taken[-1] in stops) or len(tokens) >= max_new_tokens

        if not verified:
            while True:
                guess = [int(self._next(last[None])[0])] + self._guesses(last, k - 1)
                if commit(guess):
                    break
                last = self._hidden(tokens[-len(guess):], cache)[-1]
            return tokens, steps, 0

        nxt = int(self._next(last[None])[0])
        drafts = self._guesses(last, k - 1)
        done = commit([nxt])
        while not done:
            hidden = self._hidden([nxt] + drafts, cache)
            greedy = self._next(hidden).tolist()
            a = 0
            while a < len(drafts) and drafts[a] == greedy[a] and drafts[a] not in stops:
                a += 1
            accepted_total += a
            extra = len(drafts) - a  # rejected guesses leave the cache (crop takes a negative count)
            if extra:
                cache.crop(-extra)
            nxt = int(greedy[a])
            last = hidden[a]
            done = commit(drafts[:a] + [nxt])
            drafts = self._guesses(last, k - 1)
        return tokens, steps, accepted_total

    def _generation(self, tokens: list[int], steps: list[int], accepted: int, k: int, wall: float) -> Generation:
        chat = self.base.chat
        kept = chat.cut(tokens)
        order = [i for i, n in enumerate(steps) for _ in range(n)][: len(kept)]
        return Generation(
            text=chat.decode(kept),
            nfe=len(steps),
            tokens_per_step=steps,
            order=order,
            token_texts=chat.token_texts(kept),
            num_tokens=sum(steps),
            wall_time=wall,
            extra={"stopped": len(kept) < len(tokens), "k": k, "heads_accepted": accepted},
        )
