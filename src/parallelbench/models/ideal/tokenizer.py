"""A self-contained word-level tokenizer for the ideal model's answer texts.

Pieces are words and single punctuation marks, each carrying the whitespace in
front of it, so decoding is plain concatenation and a first name (``Susan``) and
a last name (`` Fox``) are separate tokens, as a dLLM's tokenizer would make
them: a parallel step can then tear names apart. The vocabulary is built from
the answers the model is asked to produce, so it never needs a download.
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

# Whitespace-prefixed words, whitespace-prefixed single symbols, or trailing whitespace.
_PIECE = re.compile(r"\s*\w+|\s*[^\w\s]|\s+")

SPECIALS = ("<mask>", "<eos>", "<bos>")


def split_words(text: str) -> list[str]:
    """Cut text into pieces whose concatenation is exactly the text."""
    pieces = _PIECE.findall(text)
    if "".join(pieces) != text:  # pragma: no cover - the pattern matches every character
        raise ValueError(f"could not split {text!r} into word pieces")
    return pieces


class AnswerTokenizer:
    """Maps answer texts to ids over a vocabulary of their own pieces (ids 0..2 are special)."""

    def __init__(self, texts: Iterable[str] = ()):
        self.tokens: list[str] = list(SPECIALS)
        self.index: dict[str, int] = {t: i for i, t in enumerate(self.tokens)}
        self.mask_id, self.eos_id, self.bos_id = 0, 1, 2
        for text in texts:
            self.encode(text, grow=True)

    def __len__(self) -> int:
        return len(self.tokens)

    def encode(self, text: str, *, grow: bool = True) -> list[int]:
        ids = []
        for piece in split_words(text):
            if piece not in self.index:
                if not grow:
                    raise KeyError(f"piece {piece!r} is not in the answer vocabulary")
                self.index[piece] = len(self.tokens)
                self.tokens.append(piece)
            ids.append(self.index[piece])
        return ids

    def token_texts(self, ids: Sequence[int]) -> list[str]:
        return ["" if i == self.eos_id else self.tokens[i] for i in ids]

    def decode(self, ids: Sequence[int]) -> str:
        """Concatenate pieces up to the first EOS."""
        out = []
        for i in ids:
            if i == self.eos_id:
                break
            out.append(self.tokens[i] if i >= len(SPECIALS) else "")
        return "".join(out)
