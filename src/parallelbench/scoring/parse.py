"""Turning a model's free text into lists and grids, by the reading rules of the paper's metric.

The rules are those of the ParallelBench authors' list and puzzle metrics (the original
release and its 2026 rewrite read answers the same way), written here from their
described behaviour and checked side by side (`benchmarks/compare_reference_metrics.py`):

- a list is the text after the last ``[`` and before the first ``]`` after it (either
  bracket may be missing), split at commas, each item stripped of spaces and double quotes;
- a grid row is a line of the output (split at ``\\n``); Latin square cells are split at
  commas and stripped, Sudoku rows are the decimal digits of a line.

Every function takes any string and returns a value or None; none raises and none uses a
regular expression that could backtrack, so a 1 MB output costs linear time.
"""

from __future__ import annotations

_ITEM_EDGES = '" '  # what the lenient list reading strips from each item: spaces and double quotes


def list_region(text: str) -> str:
    """The text the list readings look at: after the last ``[`` (if there is one), then up to
    the first ``]`` (if there is one). ``Sure: ["A", "B"] ok`` -> ``"A", "B"``."""
    start = text.rfind("[")
    if start >= 0:
        text = text[start + 1 :]
    end = text.find("]")
    return text if end < 0 else text[:end]


def parse_list_lenient(text: str) -> list[str] | None:
    """Items of the answer list, brackets and quotes optional, prose around allowed.

    ``Sure! The line is ["Ann Lee", "Bo Chan"]. Hope this helps`` and ``"Ann Lee", "Bo Chan"``
    both give ``["Ann Lee", "Bo Chan"]``. Only spaces and double quotes are stripped from an
    item, so single or curly quotes, tabs, newlines and doubled inner spaces stay part of it.
    Items that are only whitespace are dropped. None only for a non-string.
    """
    if not isinstance(text, str):
        return None
    return [part.strip(_ITEM_EDGES) for part in list_region(text).split(",") if part.strip()]


def parse_list_strict(text: str) -> list[str] | None:
    """Items when the last ``[...]`` of the output holds exactly ``"A B", "C D"``.

    Both brackets are required; inside them, items are separated by ``", "`` and each is
    wrapped in double quotes with no double quote inside. Text around the brackets does
    not matter. ``[]`` (nothing inside) is not a list of quoted items: None.
    """
    if not isinstance(text, str):
        return None
    start = text.rfind("[")
    if start < 0:
        return None
    rest = text[start + 1 :]
    end = rest.find("]")
    if end < 0:
        return None
    items = []
    for part in rest[:end].split(", "):
        if not (part.startswith('"') and part.endswith('"')):
            return None
        item = part[1:-1]
        if '"' in item:
            return None
        items.append(item)
    return items


def nonblank_lines(text: str) -> list[str]:
    """The lines of `text` (split at ``\\n`` only), stripped, blank ones dropped."""
    return [line.strip() for line in text.split("\n") if line.strip()]


def comma_cells(row: str) -> list[str]:
    """``"H, 4,A ,C"`` -> ``["H", "4", "A", "C"]``."""
    return [cell.strip() for cell in row.split(",")]


def decimal_digits(text: str) -> list[int]:
    """The values of every decimal digit character of `text` (ASCII or not: ``"１２"`` -> [1, 2])."""
    return [int(ch) for ch in text if ch.isdecimal()]
