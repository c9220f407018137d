"""Code blocks of the docs, so tests run the examples exactly as a reader copies them."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def blocks(page: str, lang: str = "python") -> list[str]:
    """Every fenced block of docs/<page> in that language, in order."""
    text = (DOCS / page).read_text(encoding="utf-8")
    return [m.group(2) for m in _FENCE.finditer(text) if m.group(1) == lang]


def block(page: str, first_line: str, lang: str = "python") -> str:
    """The one block of docs/<page> whose first line is `first_line` (e.g. "# my_tasks.py")."""
    found = [b for b in blocks(page, lang) if b.splitlines()[:1] == [first_line]]
    assert len(found) == 1, f"docs/{page} has {len(found)} {lang} blocks starting with {first_line!r}"
    return found[0]
