"""Console tables that read at any width and when piped: whole labels or numbered labels, never cut ones.

A Rich table squeezed into 80 columns cuts its labels (`tiny/ra…` three times) or folds
its headers mid-word (`confidence-threshol|d[...]`). Tables here either fit with every
label whole (`fits`) or show short ids (S1, C1 ...) and print the full labels once, in a
legend whose lines are never wrapped by Rich (`print_legend`), so every name can be read
back from the text, in a terminal or in a pipe.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from rich.console import Console
from rich.measure import Measurement
from rich.text import Text

from parallelbench.display import LIMIT, display_name

#: How much of a label a legend shows in all: enough for a long model and a long custom strategy.
LEGEND_LIMIT = 400
#: Characters that separate the parts of a label (`model/strategy[k=2,threshold=0.9]`).
_PARTS = re.compile(r"([/\[\],=:;. ]+)")


def full_label(value: object) -> str:
    """A label as shown whole: cleaned like `display.display_name`, each part between separators
    (`/`, `[`, `,`, `=`, `:` ...) cut to `display.LIMIT` characters and the whole to
    `LEGEND_LIMIT`, so a long `model/module:Class[params]` label reads in full while a
    10,000-character name still shows as 80."""
    text = display_name(value, LEGEND_LIMIT)
    return "".join(p if len(p) <= LIMIT else p[: LIMIT - 1] + "\u2026" for p in _PARTS.split(text))


def distinct_labels(values: Sequence[object]) -> list[str]:
    """`full_label` of each value, with a short hash of the stored name added where two cut
    labels would read the same."""
    shown = [full_label(v) for v in values]
    seen: dict[str, int] = {}
    for text in shown:
        seen[text] = seen.get(text, 0) + 1
    return [t if seen[t] == 1 else f"{t} #{hashlib.sha1(str(v).encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"
            for t, v in zip(shown, values)]


def table_width(console: Console, renderable) -> int:
    """The width `renderable` needs to show every cell unwrapped (its natural width)."""
    return Measurement.get(console, console.options.update(max_width=100_000), renderable).maximum


def fits(console: Console, renderable) -> bool:
    """True when `renderable` shows at its natural width within the console."""
    return table_width(console, renderable) <= console.width


def short_ids(prefix: str, count: int) -> list[str]:
    """['S1', 'S2', ...]."""
    return [f"{prefix}{i + 1}" for i in range(count)]


def legend_lines(ids: Sequence[str], names: Sequence[object], extra: Sequence[str] | None = None) -> list[str]:
    """'S1 = full name' per entry (`extra`, when given, appended in brackets)."""
    out = []
    for i, (short, name) in enumerate(zip(ids, distinct_labels(list(names)))):
        line = f"{short} = {name}"
        if extra and extra[i]:
            line += f" ({extra[i]})"
        out.append(line)
    return out


def print_line(console: Console, text: str, style: str | None = None) -> None:
    """One line that Rich never wraps or cuts (the terminal may still fold it on screen)."""
    console.print(Text(text, style=style or ""), soft_wrap=True, highlight=False)


def print_legend(console: Console, lines: Sequence[str]) -> None:
    for line in lines:
        print_line(console, line, "dim")


def needed_width(console: Console, renderable) -> int:
    """The narrowest width at which Rich shows `renderable` without cutting a cell: wrapping columns
    (not `no_wrap`) folded at spaces down to their longest word, the others at their natural width."""
    from rich.table import Table

    total = table_width(console, renderable)
    if not isinstance(renderable, Table):
        return total
    options = console.options.update(max_width=100_000)
    for column in renderable.columns:
        if not column.no_wrap and column.width is None:
            span = renderable._measure_column(console, options, column)  # noqa: SLF001 - Rich has no public per-column measure
            total -= span.maximum - span.minimum
    return total


def print_table(console: Console, table) -> None:
    """Print `table` with every cell whole: at the console's width when it fits (text columns may
    fold at spaces); otherwise at the width it needs (the terminal folds the long lines), because Rich
    would cut cells to `…`. Callers first drop or stack columns so that this happens only where
    nothing else fits."""
    need = needed_width(console, table)
    if need <= console.width:
        console.print(table)
        return
    width = console.width
    console.width = need
    try:
        console.print(table)
    finally:
        console.width = width


def fit_columns(console: Console, build, optional: Sequence) -> tuple[object, list]:
    """(`build(shown)`, dropped): the table with as many of the `optional` columns (kept from the
    left, dropped from the right) as fit the console; with none of them when even that is too wide."""
    optional = list(optional)
    for keep in range(len(optional), -1, -1):
        table = build(optional[:keep])
        if fits(console, table) or keep == 0:
            return table, optional[keep:]
    raise AssertionError("unreachable")


def dropped_line(names: Sequence[str], command: str) -> str:
    """The note under a table that left columns out for want of width."""
    return (f"not shown at this width: {', '.join(names)} (a wider terminal shows them, e.g. "
            f"COLUMNS=200 parallelbench {command})")
