"""Word-level tokenizer for the tiny model, with the fixed instruction text merged into phrases.

Why this shape:
- Every token is a literal substring of the text, so ``decode(encode(t)) == t`` exactly and
  answers such as ``["Susan Fox", "Philip Gray"]`` or ``1342\\n2431\\n4123\\n3214`` come back
  byte for byte.
- Words carry their leading space, so a first name (``Susan``) and a last name (`` Fox``)
  are separate tokens and a parallel decode can tear names apart, as in the paper.
- List punctuation is compact (``["``, ``", "``, ``"]``): three tokens per name, so a
  7-name Waiting Line answer fits the 32-token budget. JSON punctuation likewise
  (``{"``, ``": ``, ``, "``, ``}``, a name value carrying its quotes; splitter 4).
- Runs of instruction words that never occur in any answer ("You are managing a waiting
  line ...") become one *phrase* token each. The instructions are fixed per task, so this
  keeps the prompt short (about 3x fewer positions) without hiding any list item, digit or
  symbol from the model; it is what makes training on two CPU cores feasible.

Text with a word outside the vocabulary raises `UnknownWordsError`, naming the words.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence

from parallelbench.models.protocols import ModelInputError

PAD, MASK, EOS, SEP = "[PAD]", "[MASK]", "[EOS]", "[SEP]"
SPECIALS = (PAD, MASK, EOS, SEP)

# Order matters: list punctuation first, then words (with one leading space), single digits,
# single symbols, and any other whitespace run.
# Splitter 1 (the first shipped vocabulary) glued a space to a lone digit or letter, so the
# Sudoku digit starting a row (" 4") and a Latin-square symbol in the prompt (" J") were other
# tokens than the same digit or symbol elsewhere. Splitter 2 keeps a lone character a token
# of its own (the space before it is a token too); words of two letters or more, names
# included, still carry their leading space.
# Splitter 3 adds compact JSON punctuation, as the list punctuation is compact: `{"` opens an
# object and its first key, `": "` / `": ` end a key before a string / any other value, `, "`
# ends a number and opens the next key (`", "` a string's), `"}` ends a string and its object.
# A field is then key, separator, value (2 tokens for a name, 1-2 for a number) and a comma
# piece: an 8-field record fits in about 40 tokens. Text without JSON splits as with 2.
# Splitter 4 makes every JSON punctuation token independent of the value's type: a name value
# carries its own quotes (`"Hannah`, ` Webster"`, in the answer and in the prompt's
# `key: "Hannah Webster"` lines alike, so the pointer still copies it), the key separator is
# `": ` and the field end `, "` or `}` for a name as for a number. With splitter 3, `": "` /
# `": ` said which type follows, so in an any-order record a committed separator fixed the
# type of a key not yet chosen (the tiny model then wrote `"owner": Hannah Webster`). Every
# field is still key, separator, two value tokens and an end: the layout follows from the
# field count. Waiting Line lists (`["Susan Fox", "Philip Gray"]`) split as before.
_PIECES = {
    1: re.compile(r' ?\["|", "|"\]| ?[A-Za-z]+| ?\d| ?[^\sA-Za-z\d]|\s+'),
    2: re.compile(r' ?\["|", "|"\]| ?[A-Za-z]{2,}|[A-Za-z\d]| ?[^\sA-Za-z\d]|\s+'),
    3: re.compile(r' ?\["|", "|"\]|\{"|": "|": |, "|"\}| ?[A-Za-z]{2,}|[A-Za-z\d]| ?[^\sA-Za-z\d]|\s+'),
    4: re.compile(
        r' ?\["|", "|"\]|\{"|": "(?![A-Z])|": |, "|"\}|: (?="[A-Z])'
        r'|(?<=: )"[A-Z][A-Za-z]+(?= [A-Za-z])| [A-Z][A-Za-z]+"(?=, "[a-z_]+": |\}|\n)'
        r'| ?[A-Za-z]{2,}|[A-Za-z\d]| ?[^\sA-Za-z\d]|\s+'
    ),
}
SPLITTER = 4  # what `WordTokenizer.build` uses
_DIGIT = re.compile(r" ?\d")


class UnknownWordsError(ModelInputError):
    """The text holds words the tiny model was never trained on."""


def split_pieces(text: str, splitter: int = SPLITTER) -> list[str]:
    """Cut text into word-level pieces whose concatenation is the text itself."""
    pieces = _PIECES[splitter].findall(text)
    assert "".join(pieces) == text, "piece pattern must cover every character"
    return pieces


class WordTokenizer:
    """Word-level tokenizer with phrase tokens for instruction text; see the module docstring."""

    def __init__(self, tokens: Sequence[str], data_pieces: Iterable[str], splitter: int = SPLITTER):
        if splitter not in _PIECES:
            raise ValueError(f"unknown splitter {splitter}; this version knows {sorted(_PIECES)}")
        self.splitter = splitter
        self.tokens = list(tokens)
        self.index = {t: i for i, t in enumerate(self.tokens)}
        if len(self.index) != len(self.tokens):
            raise ValueError("duplicate tokens in vocabulary")
        for special in SPECIALS:
            if special not in self.index:
                raise ValueError(f"vocabulary lacks special token {special}")
        self.data_pieces = frozenset(data_pieces)
        self.pad_id, self.mask_id = self.index[PAD], self.index[MASK]
        self.eos_id, self.sep_id = self.index[EOS], self.index[SEP]
        self.special_ids = frozenset(self.index[s] for s in SPECIALS)

    # ---- building -------------------------------------------------------------------
    @classmethod
    def build(
        cls, pairs: Iterable[tuple[str, str]], extra_pieces: Iterable[str] = ()
    ) -> "WordTokenizer":
        """Vocabulary from (prompt, answer) pairs: every piece, plus phrases of the prompts.

        `extra_pieces` adds words that may be rare in the sample (e.g. every name of the
        name lists, first names bare and last names with their leading space).
        """
        pairs = list(pairs)
        data: set[str] = set(extra_pieces)
        for _, answer in pairs:
            # whitespace in an answer (the line break between grid rows) is layout, not an
            # item: it may join an instruction phrase ("\nOutput:\n" after a prompt's grid)
            data.update(p for p in split_pieces(answer, SPLITTER) if p.strip())
        pieces: Counter[str] = Counter()
        phrases: Counter[str] = Counter()
        for prompt, answer in pairs:
            ps = split_pieces(prompt, SPLITTER)
            pieces.update(ps)
            pieces.update(split_pieces(answer, SPLITTER))
            for run, mergeable in _runs(ps, data):
                if mergeable and len(run) > 1:
                    phrases["".join(run)] += 1
        vocab = list(SPECIALS)
        vocab += sorted(set(pieces) | data)
        vocab += sorted(p for p in phrases if p not in set(vocab))
        return cls(vocab, data, SPLITTER)

    # ---- encoding -------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return len(self.tokens)

    def encode(self, text: str) -> list[int]:
        """Ids of the text (no special tokens). Raises `UnknownWordsError` on unknown words."""
        ids: list[int] = []
        unknown: list[str] = []
        for run, mergeable in _runs(split_pieces(text, self.splitter), self.data_pieces):
            phrase = "".join(run)
            if mergeable and phrase in self.index:
                ids.append(self.index[phrase])
                continue
            for piece in run:
                if piece in self.index:
                    ids.append(self.index[piece])
                else:
                    unknown.append(piece.strip() or repr(piece))
        if unknown:
            words = ", ".join(sorted(set(unknown))[:20])
            raise UnknownWordsError(
                f"the tiny model cannot tokenize these words: {words}. It only knows the "
                "vocabulary of the tasks it was trained on (Waiting Line, Sudoku, Latin square, "
                "synthetic list operations, structured output); use one of those tasks or a different model."
            )
        return ids

    def without_unknown(self, text: str) -> tuple[str, int]:
        """The text with the pieces this vocabulary cannot encode left out, and how many were.

        For callers that must run on any text (an lm-eval task with words the tiny model never
        saw); `encode` still refuses unknown words. Dropping can regroup instruction phrases,
        so the check repeats until the text encodes."""
        dropped = 0
        for _ in range(8):
            kept: list[str] = []
            lost = 0
            for run, mergeable in _runs(split_pieces(text, self.splitter), self.data_pieces):
                if mergeable and "".join(run) in self.index:
                    kept.extend(run)
                    continue
                for piece in run:
                    if piece in self.index:
                        kept.append(piece)
                    else:
                        lost += 1
            text, dropped = "".join(kept), dropped + lost
            if lost == 0:
                break
        return text, dropped

    def encode_prompt(self, text: str) -> list[int]:
        """A prompt as the model sees it: the text's ids, then [SEP] where the answer begins."""
        return self.encode(text) + [self.sep_id]

    def encode_chat(self, messages: Sequence[dict]) -> list[int]:
        """Only the last user turn is used: the tiny model is trained zero-shot on our
        prompts, which keeps its sequences short (the one-shot example would triple them)."""
        users = [m["content"] for m in messages if m.get("role") == "user"]
        if not users:
            raise ValueError("chat has no user turn; give at least one message with role 'user'")
        return self.encode_prompt(users[-1])

    def encode_answer(self, answer: str, gen_length: int) -> list[int]:
        """The training target: answer ids, then [EOS] up to `gen_length` (as LLaDA pads)."""
        ids = self.encode(answer)
        if len(ids) + 1 > gen_length:
            raise ModelInputError(
                f"answer needs {len(ids) + 1} tokens with its [EOS] but gen_length is {gen_length}"
            )
        return ids + [self.eos_id] * (gen_length - len(ids))

    def encode_template(
        self, output_format: str, gen_length: int, tokens_per_item: int = 1
    ) -> list[int]:
        """Infilling canvas: formatting tokens given, [MASK] where items go, [EOS] after.

        Each "[MASK]" in `output_format` stands for `tokens_per_item` tokens (1 for the
        synthetic letters, 2 for a first + last name).
        """
        ids: list[int] = []
        for i, part in enumerate(output_format.split(MASK)):
            if i:
                ids += [self.mask_id] * tokens_per_item
            if part:
                ids += self.encode(part)
        if len(ids) + 1 > gen_length:
            raise ModelInputError(
                f"output format needs {len(ids) + 1} tokens but gen_length is {gen_length}"
            )
        return ids + [self.eos_id] * (gen_length - len(ids))

    # ---- decoding -------------------------------------------------------------------
    def token_texts(self, ids: Sequence[int]) -> list[str]:
        return [self.tokens[int(i)] for i in ids]

    def decode(self, ids: Sequence[int]) -> str:
        """Text of the ids up to the first [EOS]; [PAD] and [SEP] are dropped, [MASK] shown."""
        out: list[str] = []
        for i in ids:
            i = int(i)
            if i == self.eos_id:
                break
            if i in (self.pad_id, self.sep_id):
                continue
            out.append(self.tokens[i])
        return "".join(out)

    # ---- persistence ----------------------------------------------------------------
    def to_dict(self) -> dict:
        return {"tokens": self.tokens, "data_pieces": sorted(self.data_pieces), "splitter": self.splitter}

    @classmethod
    def from_dict(cls, d: dict) -> "WordTokenizer":
        return cls(d["tokens"], d["data_pieces"], d.get("splitter", 1))  # files without it predate splitter 2

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), ensure_ascii=False, indent=0))

    @classmethod
    def load(cls, path: str | Path) -> "WordTokenizer":
        return cls.from_dict(json.loads(Path(path).read_text()))


def _runs(pieces: list[str], data: frozenset[str] | set[str]) -> list[tuple[list[str], bool]]:
    """Group pieces into maximal runs of instruction pieces (mergeable) and single data pieces.

    Data pieces (anything that occurs in an answer) and digits never merge, so every list
    item, index and symbol stays a token of its own.
    """
    runs: list[tuple[list[str], bool]] = []
    current: list[str] = []
    for p in pieces:
        if p in data or _DIGIT.fullmatch(p):
            if current:
                runs.append((current, True))
                current = []
            runs.append(([p], False))
        else:
            current.append(p)
    if current:
        runs.append((current, True))
    return runs
