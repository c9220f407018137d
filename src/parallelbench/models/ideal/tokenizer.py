"""A self-contained word-level tokenizer for the ideal model's answer texts.

Pieces are words and single punctuation marks, each carrying the whitespace in
front of it, so decoding is plain concatenation and a first name (``Susan``) and
a last name (`` Fox``) are separate tokens, as a dLLM's tokenizer would make
them: a parallel step can then tear names apart. The vocabulary is built from
the answers the model is asked to produce, so it never needs a download.

Structured answers (JSON records and tool calls) are cut by `json_pieces` instead: one
field (`"key": value`) is one token and the punctuation around the fields (`{`, `, `, `}`,
a tool call's `"arguments": `) tokens of its own, which the ideal model is given (a
template, as in infilling). Only the fields are decoded, so the paper's closed forms hold
with n = the number of fields: an any-order object is shuffle.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable, Sequence

# Whitespace-prefixed words, whitespace-prefixed single symbols, or trailing whitespace.
_PIECE = re.compile(r"\s*\w+|\s*[^\w\s]|\s+")

SPECIALS = ("<mask>", "<eos>", "<bos>")


def split_words(text: str) -> list[str]:
    """Cut text into pieces whose concatenation is exactly the text."""
    pieces = _PIECE.findall(text)
    if "".join(pieces) != text:  # pragma: no cover - the pattern matches every character
        raise ValueError(f"could not split {text!r} into word pieces")
    return pieces


def json_pieces(text: str) -> list[tuple[str, bool]] | None:
    """(piece, is_field) of a canonical JSON object (`json.dumps` with default separators), whose
    concatenation is the text; None when the text is not such an object. A value that is
    itself an object (a tool call's arguments) is opened into pieces; any other value stays
    inside its field."""
    try:
        value = json.loads(text, object_pairs_hook=list)
    except ValueError:
        return None
    if not isinstance(value, list) or not value or not all(isinstance(p, tuple) for p in value):
        return None
    pieces = _object_pieces(value)
    return pieces if "".join(p for p, _ in pieces) == text else None


def _object_pieces(pairs: list[tuple[str, Any]]) -> list[tuple[str, bool]]:
    out: list[tuple[str, bool]] = [("{", False)]
    for i, (key, value) in enumerate(pairs):
        if i:
            out.append((", ", False))
        if isinstance(value, list) and value and all(isinstance(p, tuple) for p in value):
            out.append((json.dumps(key) + ": ", False))
            out += _object_pieces(value)
        else:
            out.append((json.dumps(key) + ": " + json.dumps(_plain(value)), True))
    out.append(("}", False))
    return out


def _plain(value: Any) -> Any:
    """Pairs lists (from `object_pairs_hook=list`) back to dicts, for re-serialising a value."""
    if isinstance(value, list) and value and all(isinstance(p, tuple) for p in value):
        return {k: _plain(v) for k, v in value}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


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

    def encode_pieces(self, pieces: Sequence[str]) -> list[int]:
        """Ids of pieces given whole (e.g. `json_pieces`), growing the vocabulary."""
        ids = []
        for piece in pieces:
            if piece not in self.index:
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
