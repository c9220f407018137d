"""An HF tokenizer plus its chat template as the `TextTokenizer` the text layer needs.

The prompt is the chat template with the generation prompt added (the assistant turn
is opened), exactly what the model saw in instruction tuning. Decoding stops at any
stop id (EOS and end-of-turn tokens such as <|eot_id|> or <|im_end|>).
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

END_OF_TURN_TOKENS = ("<|eot_id|>", "<|im_end|>", "<|end_of_turn|>", "<end_of_turn>", "<|endoftext|>", "<turn|>")


class HFChatTokenizer:
    def __init__(self, tokenizer: Any, stop_ids: Iterable[int] = ()):
        self.tokenizer = tokenizer
        self.stop_ids = tuple(dict.fromkeys(int(i) for i in stop_ids))

    def encode_chat(self, messages: Sequence[dict]) -> list[int]:
        msgs = [{"role": m["role"], "content": m["content"]} for m in messages]
        if getattr(self.tokenizer, "chat_template", None):
            ids = self.tokenizer.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True)
            if hasattr(ids, "keys") and "input_ids" in ids:  # transformers 5 returns a BatchEncoding
                ids = ids["input_ids"]
            return [int(i) for i in ids]
        # No template: a plain transcript that still ends where the answer begins.
        text = "".join(f"{m['role']}: {m['content']}\n" for m in msgs) + "assistant: "
        return [int(i) for i in self.tokenizer(text, add_special_tokens=True)["input_ids"]]

    def cut(self, ids: Sequence[int]) -> list[int]:
        """Ids up to (not including) the first stop id."""
        out: list[int] = []
        stops = set(self.stop_ids)
        for i in ids:
            if int(i) in stops:
                break
            out.append(int(i))
        return out

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(self.cut(ids), skip_special_tokens=True).strip()

    def token_texts(self, ids: Sequence[int]) -> list[str]:
        return [self.tokenizer.decode([int(i)]) for i in ids]


def stop_ids_of(tokenizer: Any, config: dict | None = None, extra: Iterable[int] = ()) -> list[int]:
    """EOS plus every end-of-turn token the vocabulary has (and the config's eos ids), EOS first."""
    ids: list[int] = []
    eos = getattr(tokenizer, "eos_token_id", None)
    if eos is not None:
        ids.append(int(eos))
    cfg_eos = (config or {}).get("eos_token_id")
    for value in cfg_eos if isinstance(cfg_eos, list) else [cfg_eos]:
        if isinstance(value, int):
            ids.append(value)
    vocab = tokenizer.get_vocab() if hasattr(tokenizer, "get_vocab") else {}
    for token in END_OF_TURN_TOKENS:
        if token in vocab:
            ids.append(int(vocab[token]))
    ids.extend(int(i) for i in extra)
    return list(dict.fromkeys(ids))


def mask_id_of(config: dict, tokenizer: Any, default: int) -> int:
    """The mask token id: config field, then the tokenizer's mask token, then the family default."""
    for key in ("mask_token_id", "mask_id"):
        if isinstance(config.get(key), int):
            return int(config[key])
    tok_mask = getattr(tokenizer, "mask_token_id", None)
    if tok_mask is not None:
        return int(tok_mask)
    return default
