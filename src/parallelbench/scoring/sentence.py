"""Is a words-to-sentence answer a real sentence, or the requested words dressed up as one?

A grammar checker passes "dog park ball throw" and "dog, park, ball, throw." (Harper
finds no error in either), so inclusion × grammar alone rewards listing the words. This
rule, stated in docs/scoring.md, closes that: an answer is a sentence when

1. it is plain text of at most `MAX_CHARS` characters with no control characters;
2. it starts with a capital letter (after any opening quote) and ends with ".", "!" or
   "?" (closing quotes or brackets may follow);
3. it has at least n + 2 words for n requested words, and at least one English
   function word (an article, pronoun, preposition, auxiliary or conjunction);
4. no three requested words follow one another with only punctuation, "and" or "or"
   between them (a list, not a sentence);
5. no word is repeated back to back, no word makes up more than a third of the words
   (at least two uses are always allowed), and no sentence of it is repeated.

`check_sentence` returns "" when the answer passes, else the first broken rule's name.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import Iterable

MAX_CHARS = 2000
LIST_RUN = 3  # this many requested words in a list-shaped run fail rule 4

FUNCTION_WORDS = frozenset(
    """a an the this that these those some any each every no my your his her its our their
    i me you he him she it we us they them myself yourself himself herself itself ourselves themselves
    who whom whose which what where when while why how
    in on at to for with from by of about into onto over under after before during through near
    across along around behind beside besides between beyond up down off out against among
    toward towards upon within without until till since per via like than
    is are was were be been being am has have had having do does did done will would can could
    should may might must shall ought
    and or but so because if then as although though unless whether nor yet also
    not there here very too just all both""".split()
)

_WORD = re.compile(r"[^\W\d_]+(?:['\u2019\-][^\W\d_]+)*")
_LIST_GAP = re.compile(r"^[\s,;:/|&.\-\u2013\u2014\"'\u2018\u2019\u201c\u201d()\[\]*\u2022]*$")
_SENTENCE_END = re.compile(r"[.!?]+[\"'\u2019\u201d)\]]*\s+")
_OPEN = "\"'\u2018\u201c([*"
_CLOSE = "\"'\u2019\u201d)]*"


def _control(text: str) -> bool:
    return any(unicodedata.category(c) in ("Cc", "Cs") and c not in "\t\n\r" for c in text)


def _is_required(word: str, required: frozenset[str]) -> bool:
    """`word` is a requested word or a short inflection of one (dogs, throwing)."""
    w = word.lower()
    return w in required or any(w.startswith(r) and len(w) - len(r) <= 3 for r in required if len(r) >= 3)


def _longest_list_run(text: str, words: list[re.Match[str]], required: frozenset[str]) -> int:
    best = run = 0
    prev_end: int | None = None
    for m in words:
        token = m.group()
        if token.lower() in ("and", "or") and run:
            continue  # "ball, and throw": the conjunction does not break the list
        if _is_required(token, required):
            gap = text[prev_end : m.start()] if prev_end is not None else None
            joined = gap is not None and run > 0 and _LIST_GAP.match(_strip_conjunctions(gap)) is not None
            run = run + 1 if joined else 1
            prev_end = m.end()
            best = max(best, run)
        else:
            run, prev_end = 0, None
    return best


def _strip_conjunctions(gap: str) -> str:
    return re.sub(r"(?i)(?<![^\W\d_])(?:and|or)(?![^\W\d_])", " ", gap)


def check_sentence(text: str, required_words: Iterable[str] = ()) -> str:
    """"" when `text` is a sentence under the module's rule, else the broken rule's name."""
    if not isinstance(text, str):
        return "not text"
    body = text.strip()
    if not body:
        return "empty"
    if len(body) > MAX_CHARS:
        return "too long"
    if _control(body):
        return "control characters"
    first = body.lstrip(_OPEN)
    if not first or not first[0].isupper():
        return "no capital start"
    if not body.rstrip(_CLOSE).endswith((".", "!", "?")):
        return "no end punctuation"
    required = frozenset(t.lower() for w in required_words for t in _WORD.findall(str(w)))
    words = list(_WORD.finditer(body))
    lowered = [m.group().lower() for m in words]
    if len(words) < len({w.lower() for w in required_words if str(w).strip()}) + 2:
        return "too few words"
    if not any(w in FUNCTION_WORDS and w not in required for w in lowered):
        return "no function word"
    if _longest_list_run(body, words, required) >= LIST_RUN:
        return "word list"
    if any(a == b for a, b in zip(lowered, lowered[1:])):
        return "repeated word"
    most = Counter(lowered).most_common(1)[0][1]
    if most > max(2, len(lowered) // 3):
        return "repeated word"
    parts = [" ".join(_WORD.findall(p)).lower() for p in _SENTENCE_END.split(body)]
    parts = [p for p in parts if p]
    if len(parts) != len(set(parts)):
        return "repeated sentence"
    return ""


def is_sentence(text: str, required_words: Iterable[str] = ()) -> bool:
    return check_sentence(text, required_words) == ""
