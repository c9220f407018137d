"""Scorers of the puzzle tasks: Latin square (any valid square) and Sudoku (the solution).

Rows are read the way the paper's metric reads them (`parse.py`): one row per line, prose
lines between or around the rows ignored.

- Latin square: the first `size` lines whose comma-separated cells hold exactly the
  symbols; ``lenient`` = ``strict`` (the paper's metric has one reading).
- Sudoku: ``lenient`` takes the lines with exactly `size` decimal digits once spaces and
  commas are dropped, and needs exactly `size` of them; ``strict`` needs exactly `size`
  non-blank lines of `size` digits each.

Two modes (`base.SCORING_MODES`): ``paper`` is the paper's metric exactly; ``default``
differs in one way only: it rejects a Latin square row with a repeated cell
(``H,4,A,C,C``), which the paper's metric accepts but is not a Latin square. Both read
rows from lines only, so a grid written on one line (``1342 2431 4123 3214``) scores 0
in both; our tasks write every grid one row per line, as the original release does.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable

from parallelbench.scoring.base import Scores, register_scorer
from parallelbench.scoring.parse import comma_cells, decimal_digits, nonblank_lines

if TYPE_CHECKING:
    from parallelbench.tasks.base import Sample

Grid = list[list[str]]


def is_latin_square(grid: Grid, symbols: list[str]) -> bool:
    """Every row and every column holds each symbol exactly once."""
    want = sorted(symbols)
    size = len(symbols)
    if len(grid) != size or any(sorted(row) != want for row in grid):
        return False
    return all(sorted(row[c] for row in grid) == want for c in range(size))


# ---- Latin square ----------------------------------------------------------------------


def latin_rows(text: str, symbols: list[str]) -> Grid | None:
    """The first `size` row lines of `text` as cells, or None when there are fewer.

    A row line's comma-separated cells, stripped, are exactly the set of symbols (so a
    repeated cell still passes here; `latin_ok` tells the modes apart). Both modes read
    the same rows.
    """
    want = set(symbols)
    rows = [comma_cells(line) for line in nonblank_lines(text) if set(comma_cells(line)) == want]
    return rows[: len(want)] if len(rows) >= len(want) else None


def latin_ok(rows: Grid, symbols: list[str], mode: str, first_row: list[str] | None) -> bool:
    """Default: a Latin square (each row and column a permutation). Paper: every row and every
    column (as far as the shortest row reaches) holds the set of symbols."""
    if first_row is not None and rows[0] != first_row:
        return False
    if mode == "default":
        return is_latin_square(rows, symbols)
    want = set(symbols)
    return all(set(row) == want for row in rows) and all(set(col) == want for col in zip(*rows))


def _latin(sample: "Sample", output: str, mode: str) -> Scores:
    output = output if isinstance(output, str) else ""
    data = sample.data or {}
    symbols = [str(s) for s in data.get("symbols") or []]
    size = int(data.get("size", len(symbols)) or 0)
    if not symbols or len(set(symbols)) != len(symbols) or size != len(symbols):
        return Scores(0.0, {"lenient": 0.0, "strict": 0.0})
    first_row = data.get("first_row")
    first_row = [str(s) for s in first_row] if isinstance(first_row, (list, tuple)) else None
    rows = latin_rows(output, symbols)
    ok = float(rows is not None and latin_ok(rows, symbols, mode, first_row))
    return Scores(ok, {"lenient": ok, "strict": ok})


@register_scorer("latin_square")
def score_latin_square(sample: "Sample", output: str) -> Scores:
    """Any valid ``size`` x ``size`` Latin square over exactly ``data["symbols"]``."""
    return _latin(sample, output, "default")


@register_scorer("latin_square", mode="paper")
def score_latin_square_paper(sample: "Sample", output: str) -> Scores:
    return _latin(sample, output, "paper")


# ---- Sudoku ----------------------------------------------------------------------------

IntGrid = list[list[int]]


def sudoku_lenient(text: str, size: int) -> IntGrid | None:
    """Rows = lines with exactly `size` decimal digits once spaces and commas are dropped (other
    characters are skipped); exactly `size` such lines, else None."""
    rows: IntGrid = []
    for line in text.split("\n"):
        digits = decimal_digits(line.replace(" ", "").replace(",", ""))
        if len(digits) == size:
            rows.append(digits)
        if len(rows) > size:  # too many rows already: no grid, whatever follows
            return None
    return rows if len(rows) == size else None


def sudoku_strict(text: str, size: int) -> IntGrid | None:
    """Exactly `size` non-blank lines, each exactly `size` decimal digits (surrounding whitespace
    aside)."""
    lines = nonblank_lines(text)
    if len(lines) != size or not all(len(line) == size and line.isdecimal() for line in lines):
        return None
    return [decimal_digits(line) for line in lines]


def is_valid_sudoku(grid: Grid) -> bool:
    """Rows, columns and (for square sizes) boxes each hold 1..n once."""
    n = len(grid)
    want = [str(d) for d in range(1, n + 1)]
    lines = [list(row) for row in grid] + [[row[c] for row in grid] for c in range(n)]
    box = math.isqrt(n)
    if box * box == n:
        lines += [
            [grid[r][c] for r in range(br, br + box) for c in range(bc, bc + box)]
            for br in range(0, n, box)
            for bc in range(0, n, box)
        ]
    return all(len(line) == n and sorted(line) == want for line in lines)


def _sudoku_check(puzzle: list[str], solution: IntGrid | None) -> Callable[[IntGrid], bool]:
    def check(grid: IntGrid) -> bool:
        if solution is not None:
            return grid == solution
        text = [[str(v) for v in row] for row in grid]
        keeps = all(p == "0" or p == g for prow, grow in zip(puzzle, text) for p, g in zip(prow, grow))
        return len(grid) == len(puzzle) and keeps and is_valid_sudoku(text)

    return check


def _solution(data: dict, size: int) -> IntGrid | None:
    rows = str(data.get("solution") or "").split()
    if len(rows) != size or not all(len(r) == size and r.isdecimal() for r in rows):
        return None
    return [decimal_digits(r) for r in rows]


def _sudoku(sample: "Sample", output: str) -> Scores:
    output = output if isinstance(output, str) else ""
    data = sample.data or {}
    puzzle = str(data.get("puzzle") or "").split()
    size = len(puzzle)
    if size == 0 or any(len(row) != size for row in puzzle):
        return Scores(0.0, {"lenient": 0.0, "strict": 0.0})
    check = _sudoku_check(puzzle, _solution(data, size))
    lenient_grid = sudoku_lenient(output, size)
    strict_grid = sudoku_strict(output, size)
    lenient = float(lenient_grid is not None and check(lenient_grid))
    strict = float(strict_grid is not None and check(strict_grid))
    return Scores(lenient, {"lenient": lenient, "strict": strict})


@register_scorer("sudoku")
def score_sudoku(sample: "Sample", output: str) -> Scores:
    """The puzzle's solution (``data["solution"]``); without a stored solution, any valid
    grid that keeps the given cells. The same in both scoring modes (no paper variant)."""
    return _sudoku(sample, output)
