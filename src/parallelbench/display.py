"""Names as shown to people: any strategy, task or model name is displayable.

Names come from users and their code (a custom strategy, a `py:` model, a task file) and
may hold anything: 10,000 characters, NUL bytes, right-to-left overrides, markup. Shown
names have control and format characters replaced by U+FFFD and are cut to `LIMIT`
characters with an ellipsis; escaping for HTML or Rich markup is the caller's job (the
report escapes, the console prints `Text`). Stored names are never changed.
"""

from __future__ import annotations

import unicodedata

LIMIT = 80
EMPTY = "(unnamed)"


def display_name(value: object, limit: int = LIMIT) -> str:
    """`value` as one printable line of at most `limit` characters."""
    text = "" if value is None else str(value)
    if len(text) > 4 * limit:
        text = text[: 4 * limit + 1]  # only what can be shown is cleaned
    cleaned = "".join(
        " " if c in "\t\n\r" else ("\ufffd" if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Cn") else c)
        for c in text
    )
    if not cleaned.strip():
        return EMPTY
    if len(cleaned) > limit:
        cleaned = cleaned[: limit - 1] + "\u2026"
    return cleaned


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """'1 task point', '2 task points', '1,024 rows': a count with its noun in the right number."""
    return f"{n:,} {noun if n == 1 else (plural or noun + 's')}"


def about(subject: str, message: str, joint: str = ": ") -> str:
    """`subject: message` (`joint` between them), or the message alone when it already names the
    subject (no `'hf:X': 'hf:X' has no EOS token`); the subject is found with or without quotes."""
    quoted = subject[subject.index("'"):subject.rindex("'") + 1] if subject.count("'") >= 2 else subject
    return message if quoted in message else f"{subject}{joint}{message}"
