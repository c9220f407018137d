"""Masked-LM dLLMs that transformers runs natively: `*ForMaskedLM` checkpoints (BERT, RoBERTa,
ModernBERT, DistilBERT ...), e.g. BERT-style encoders fine-tuned as chat dLLMs (the dllm project).

No checkpoint code runs: the model is `AutoModelForMaskedLM` from transformers. The engine
drives it like any masked dLLM:

- the mask is the tokenizer's own mask token (`[MASK]`, `<mask>`); a tokenizer without one
  cannot load as this family;
- the end of an answer is the tokenizer's EOS token, else its SEP token (BERT has no EOS);
- the prompt is the tokenizer's chat template when it has one, else the plain prompt
  (the conversation as text after the CLS/BOS token, without a closing SEP/EOS, so the
  answer continues it and ends with the end token);
- left padding is batch-invariant: pads are hidden as keys and every row's position ids
  start at its first real token. These models use absolute (BERT, DistilBERT, RoBERTa)
  or rotary (ModernBERT) positions, and transformers' default positions would count the
  pads, so positions are passed explicitly. RoBERTa-style embeddings number positions from
  `padding_idx + 1` (they derive them from the pad token when none are given); that offset
  is kept. A model whose forward takes no `position_ids` gets each row moved to the left
  edge (pads after it) for the call and moved back, which gives it the same positions.

`.net.forward(canvas)` on an unpadded canvas is the transformers model's own logits.
"""

from __future__ import annotations

import inspect
from typing import Any, Sequence

import torch

from parallelbench.models.hf.net import HFDiffusionNet
from parallelbench.models.hf.tokenizer import HFChatTokenizer
from parallelbench.models.protocols import ModelInputError


class MaskedLMNet(HFDiffusionNet):
    family = "masked_lm"

    def __init__(self, model: Any, **kwargs: Any):
        super().__init__(model, **kwargs)
        self.position_offset = _position_offset(model)
        self.explicit_positions = "position_ids" in inspect.signature(model.forward).parameters
        limit = getattr(getattr(model, "config", None), "max_position_embeddings", None)
        # tokens a row may hold: absolute position tables end, RoBERTa's after its offset
        self.max_length = int(limit) - self.position_offset if isinstance(limit, int) else None

    def positions(self, attention_mask: torch.Tensor) -> torch.Tensor:
        """Each row's positions counted from its first real token (plus the embeddings' offset)."""
        count = attention_mask.long().cumsum(-1) - 1
        return count.clamp(min=0) + self.position_offset

    def full_logits(self, canvas: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        longest = int(attention_mask.long().sum(-1).max()) if canvas.numel() else 0
        if self.max_length is not None and longest > self.max_length:
            raise ModelInputError(
                f"a prompt plus its answer region is {longest} tokens, more than the model's {self.max_length} "
                "positions (max_position_embeddings); give the task fewer new tokens or use a shorter prompt"
            )
        mask = attention_mask.long()
        if self.explicit_positions:
            return self.model(input_ids=canvas, attention_mask=mask, position_ids=self.positions(attention_mask)).logits
        return _left_aligned_call(self.model, canvas, attention_mask)

    def versions(self) -> dict[str, str]:
        out = super().versions()
        architectures = getattr(getattr(self.model, "config", None), "architectures", None) or []
        out["architecture"] = ",".join(architectures) or type(self.model).__name__
        return out


def _position_offset(model: Any) -> int:
    """`padding_idx + 1` for RoBERTa-style embeddings (positions start after the pad index), else 0."""
    embeddings = getattr(getattr(model, "base_model", model), "embeddings", None)
    padding_idx = getattr(embeddings, "padding_idx", None)
    if padding_idx is not None and hasattr(embeddings, "create_position_ids_from_input_ids"):
        return int(padding_idx) + 1
    return 0


def _left_aligned_call(model: Any, canvas: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Logits with every row moved to start at index 0 (pads at the end), then moved back."""
    length = canvas.shape[1]
    pads = (~attention_mask.bool()).sum(-1, keepdim=True)
    index = torch.arange(length, device=canvas.device).unsqueeze(0)
    take = (index + pads) % length  # real tokens first
    logits = model(input_ids=canvas.gather(1, take), attention_mask=attention_mask.long().gather(1, take)).logits
    back = (index - pads) % length
    return logits.gather(1, back.unsqueeze(-1).expand(-1, -1, logits.shape[-1]))


class MaskedLMChatTokenizer(HFChatTokenizer):
    """The chat template when the tokenizer has one; else the plain prompt, left open for the answer."""

    def encode_chat(self, messages: Sequence[dict]) -> list[int]:
        if getattr(self.tokenizer, "chat_template", None):
            return super().encode_chat(messages)
        msgs = [{"role": m["role"], "content": m["content"]} for m in messages]
        text = "".join(f"{m['role']}: {m['content']}\n" for m in msgs) + "assistant:"
        ids = [int(i) for i in self.tokenizer(text, add_special_tokens=True)["input_ids"]]
        closing = {self.tokenizer.sep_token_id, self.tokenizer.eos_token_id} - {None}
        while ids and ids[-1] in closing:  # the answer continues the prompt; its own end token comes after it
            ids.pop()
        return ids


def end_token_id(tokenizer: Any) -> int | None:
    """The tokenizer's EOS, else its SEP (BERT-style vocabularies have no EOS)."""
    for name in ("eos_token_id", "sep_token_id"):
        value = getattr(tokenizer, name, None)
        if value is not None:
            return int(value)
    return None


def build(ckpt, opts, *, device: str, dtype, name: str):
    from transformers import AutoModelForMaskedLM

    from parallelbench.models.hf.errors import HFModelError
    from parallelbench.models.hf.loading import load_tokenizer, load_weights
    from parallelbench.models.hf.text_model import HFDiffusionTextModel
    from parallelbench.models.hf.tokenizer import stop_ids_of

    trust = opts.trust_remote_code is True  # resolved by the package's remote-code policy
    tokenizer = load_tokenizer(ckpt, trust_remote_code=trust, revision=opts.revision)
    mask_id = getattr(tokenizer, "mask_token_id", None)
    if mask_id is None:
        raise HFModelError(
            f"'hf:{ckpt.label}' has no mask token in its tokenizer, so it cannot decode as family masked_lm; "
            "use a masked-LM checkpoint whose tokenizer defines mask_token (e.g. [MASK] or <mask>)"
        )
    end = end_token_id(tokenizer)
    if end is None:
        raise HFModelError(
            f"'hf:{ckpt.label}' has neither an EOS nor a SEP token in its tokenizer; cannot tell where answers end"
        )
    model = load_weights(ckpt, AutoModelForMaskedLM, device=device, dtype=dtype, trust_remote_code=trust,
                         revision=opts.revision)
    vocab = int(model.get_output_embeddings().weight.shape[0])
    if not 0 <= int(mask_id) < vocab:
        raise HFModelError(f"'hf:{ckpt.label}': the mask token id {mask_id} is outside the model's {vocab} logits")
    stops = stop_ids_of(tokenizer, None, extra=[end])
    stops = [end] + [s for s in stops if s != end]
    net = MaskedLMNet(model, mask_id=int(mask_id), eos_id=end, vocab_size=vocab, stop_ids=stops,
                      pad_id=tokenizer.pad_token_id, cache=opts.cache or "none")
    return HFDiffusionTextModel(net, MaskedLMChatTokenizer(tokenizer, stops), name, batch_size=opts.batch_size)
