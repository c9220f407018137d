"""`DiffusionTextModel`: any `MaskedDiffusionModel` plus a tokenizer becomes a `BenchModel`.

Samples are encoded with the tokenizer's chat template, decoded in batches by the
engine, cut at the first EOS (LLaDA behaviour) and returned as `Generation`
records with the decoding statistics the runner stores.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, Collection, Sequence

from parallelbench.models.base import Generation, ModelKind

if TYPE_CHECKING:
    from parallelbench.decoding.strategy import Strategy
    from parallelbench.models.base import CausalModel, MaskedDiffusionModel, TextTokenizer
    from parallelbench.tasks.base import Sample


def cut_at_eos(tokens: Sequence[int], eos_id: "int | Collection[int]") -> int:
    """Index of the first EOS, or of the first of several stop ids (the text ends there),
    or len(tokens)."""
    stops = {int(eos_id)} if isinstance(eos_id, int) else {int(i) for i in eos_id}
    for i, tok in enumerate(tokens):
        if int(tok) in stops:
            return i
    return len(tokens)


def repair_text(extra: dict[str, Any], tokens: Sequence[int], cut: int, stops: "int | Collection[int]",
                decode: Callable[[Sequence[int]], str]) -> dict[str, Any]:
    """The text side of a decode's repair record (decoding/repair.py): `unmask_text`, the answer
    when its last original mask was filled (cut at its own first stop token), and `changed_tokens`,
    the shown positions (before the final text's stop token, `cut`) whose final token differs from
    the first one committed there. {} for a decode without the record (a strategy that never edits)."""
    unmask, first = extra.get("unmask_tokens"), extra.get("first_tokens")
    if unmask is None or first is None:
        return {}
    changed = sum(1 for j in range(min(cut, len(first))) if first[j] >= 0 and int(tokens[j]) != int(first[j]))
    return {"unmask_text": decode(list(unmask)[: cut_at_eos(unmask, stops)]), "changed_tokens": changed}


class DiffusionTextModel:
    """Wraps a masked-diffusion network and its tokenizer for the runner."""

    def __init__(
        self,
        net: "MaskedDiffusionModel",
        tokenizer: "TextTokenizer",
        name: str,
        kind: ModelKind = "diffusion",
        *,
        batch_size: int = 32,
        verifier: "CausalModel | None" = None,
        versions: dict[str, str] | None = None,
    ):
        if batch_size < 1:
            raise ValueError(f"batch_size={batch_size} is invalid: use an integer >= 1")
        self.net = net
        self.tokenizer = tokenizer
        self.name = name
        self.kind = kind
        self.batch_size = batch_size
        self.verifier = verifier
        self._versions = dict(versions or {})

    def versions(self) -> dict[str, str]:
        import torch

        import parallelbench

        out = {"parallelbench": getattr(parallelbench, "__version__", "unknown"), "torch": torch.__version__}
        net_versions = getattr(self.net, "versions", None)
        if callable(net_versions):
            out.update({str(k): str(v) for k, v in net_versions().items()})
        out.update(self._versions)
        return out

    def supports(self, sample: "Sample") -> bool:
        """False when the tokenizer cannot encode the sample's prompt (the tiny model's closed
        vocabulary): the runner then skips the task with `unsupported_reason` instead of failing."""
        return self.unsupported_reason(sample) is None

    def unsupported_reason(self, sample: "Sample") -> str | None:
        from parallelbench.models.tokenizer import UnknownWordsError

        try:
            self.tokenizer.encode_chat(sample.messages)
        except UnknownWordsError as exc:
            return " ".join(str(exc).split())
        return None

    def _template(self, sample: "Sample", gen_length: int) -> list[int] | None:
        encode_template = getattr(self.tokenizer, "encode_template", None)
        if sample.output_format and callable(encode_template):
            ids = list(encode_template(sample.output_format, gen_length))
            if len(ids) != gen_length:
                raise ValueError(
                    f"tokenizer.encode_template returned {len(ids)} ids for gen_length={gen_length} "
                    f"(sample {sample.id}); it must return exactly gen_length ids"
                )
            return ids
        return None

    def generate(
        self,
        samples: "Sequence[Sample]",
        strategy: "Strategy | str | None",
        *,
        max_new_tokens: int,
        seed: int = 0,
    ) -> list[Generation]:
        """Decode every sample; sample i draws its randomness from seed + i (batch-independent)."""
        from parallelbench.decoding.strategy import as_strategy

        if strategy is None:
            raise ValueError(f"model {self.name!r} is a diffusion model: give a decoding strategy")
        strategy = as_strategy(strategy)
        strategy.validate(max_new_tokens)
        out: list[Generation] = []
        for start in range(0, len(samples), self.batch_size):
            batch = list(samples[start : start + self.batch_size])
            out.extend(self._generate_batch(batch, strategy, max_new_tokens=max_new_tokens, seed=seed + start))
        return out

    def _generate_batch(
        self, batch: "list[Sample]", strategy: "Strategy", *, max_new_tokens: int, seed: int
    ) -> list[Generation]:
        """One batch through the engine; subclasses wrap it (e.g. in a KV-cache session)."""
        from parallelbench.decoding import decode

        mask_id = int(self.net.mask_id)
        prompts = [self.tokenizer.encode_chat(s.messages) for s in batch]
        templates = [self._template(s, max_new_tokens) for s in batch]
        template = None
        if any(t is not None for t in templates):
            template = [t if t is not None else [mask_id] * max_new_tokens for t in templates]
        began = time.perf_counter()
        results = decode(
            self.net,
            prompts,
            gen_length=max_new_tokens,
            strategy=strategy,
            template=template,
            seed=seed,
            verifier=self.verifier,
        )
        elapsed = time.perf_counter() - began
        total_nfe = sum(r.nfe for r in results)
        # a row's share of the batch time follows the model calls it took
        return [self._generation(res, elapsed * res.nfe / total_nfe if total_nfe else elapsed / len(results))
                for res in results]

    def _stop_ids(self) -> set[int]:
        """Token ids that end the text: [EOS] here; chat models add their end-of-turn ids."""
        return {int(self.net.eos_id)}

    def _generation(self, res: Any, wall_time: float) -> Generation:
        stops = self._stop_ids()
        cut = cut_at_eos(res.tokens, stops)
        kept = res.tokens[:cut]
        return Generation(
            text=self.tokenizer.decode(kept),
            nfe=res.nfe,
            tokens_per_step=list(res.tokens_per_step),
            order=list(res.order[:cut]),
            token_texts=list(self.tokenizer.token_texts(kept)),
            num_tokens=res.num_committed,
            wall_time=wall_time,
            # steps of the positions from the first EOS on, for the whole-generation order metrics
            extra={"eos_index": cut, "pad_order": list(res.order[cut:]), **res.extra,
                   **repair_text(res.extra, res.tokens, cut, stops, self.tokenizer.decode)},
        )
