"""Scorers of the puzzle tasks: Latin square (any valid square) and Sudoku (the solution).

Rows are read the way the paper's metric reads them (`parse.py`): one row per line, prose
lines between or around the rows ignored.

- Latin square: the first `size` lines whose comma-separated cells hold exactly the
  symbols; ``lenient`` = ``strict`` (the paper's metric has one reading).
- Sudoku: ``lenient`` takes the lines with exactly `size` decimal digits once spaces and
  commas are dropped, and needs exactly `size` of them; ``strict`` needs exactly `size`
  non-blank lines of `size` digits each.

Two modes (`base.SCORING_MODES`): ``paper`` is the paper's metric exactly; ``default``
differs in two ways only. It rejects a Latin square row with a repeated cell
(``H,4,A,C,C``), which the paper's metric accepts but is not a Latin square. And it
also reads a grid written on one line, rows separated by spaces (``1342 2431 4123
3214``): the layout of the paper's table of prompts and of our tasks' own one-shot
examples and reference answers, which the paper's metric (reading rows from lines only)
scores 0.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable

from parallelbench.scoring.base import Scores, register_scorer
from parallelbench.scoring.parse import comma_cells, decimal_digits, nonblank_lines, one_line_grid

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


def latin_rows(text: str, symbols: list[str], mode: str) -> Grid | None:
    """The first `size` row lines of `text` as cells, or None when there are fewer.

    A row line's comma-separated cells, stripped, are exactly the set of symbols (so a
    repeated cell still passes here). In default mode a line holding `size` such rows
    separated by whitespace counts as those rows.
    """
    want = set(symbols)
    size = len(want)

    def is_row(line: str) -> bool:
        return set(comma_cells(line)) == want

    rows: Grid = []
    for line in nonblank_lines(text):
        if is_row(line):
            rows.append(comma_cells(line))
        elif mode == "default":
            tokens = one_line_grid(line, size, is_row)
            rows.extend(comma_cells(tok) for tok in tokens or ())
        if len(rows) >= size:
            return rows[:size]
    return None


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
    rows = latin_rows(output, symbols, mode)
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


def _digit_row(size: int) -> Callable[[str], bool]:
    def is_row(token: str) -> bool:
        return len(token) == size and token.isdecimal()

    return is_row


def sudoku_lenient(text: str, size: int, mode: str) -> IntGrid | None:
    """Rows = lines with exactly `size` decimal digits once spaces and commas are dropped (other
    characters are skipped); exactly `size` such lines, else None. Default mode also
    expands a line of `size` whitespace-separated rows."""
    rows: IntGrid = []
    one_line_row = _digit_row(size)
    for line in text.split("\n"):
        if mode == "default":
            tokens = one_line_grid(line, size, one_line_row)
            if tokens is not None:
                rows.extend(decimal_digits(tok) for tok in tokens)
                continue
        digits = decimal_digits(line.replace(" ", "").replace(",", ""))
        if len(digits) == size:
            rows.append(digits)
        if len(rows) > size:  # too many rows already: no grid, whatever follows
            return None
    return rows if len(rows) == size else None


def sudoku_strict(text: str, size: int, mode: str) -> IntGrid | None:
    """Exactly `size` non-blank lines, each exactly `size` decimal digits (surrounding whitespace
    aside). Default mode also takes the whole output as one line of `size` such rows."""
    lines = nonblank_lines(text)
    is_row = _digit_row(size)
    if mode == "default" and len(lines) == 1:
        tokens = one_line_grid(lines[0], size, is_row)
        if tokens is not None:
            lines = tokens
    if len(lines) != size or not all(is_row(line) for line in lines):
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


def _sudoku(sample: "Sample", output: str, mode: str) -> Scores:
    output = output if isinstance(output, str) else ""
    data = sample.data or {}
    puzzle = str(data.get("puzzle") or "").split()
    size = len(puzzle)
    if size == 0 or any(len(row) != size for row in puzzle):
        return Scores(0.0, {"lenient": 0.0, "strict": 0.0})
    check = _sudoku_check(puzzle, _solution(data, size))
    lenient_grid = sudoku_lenient(output, size, mode)
    strict_grid = sudoku_strict(output, size, mode)
    lenient = float(lenient_grid is not None and check(lenient_grid))
    strict = float(strict_grid is not None and check(strict_grid))
    return Scores(lenient, {"lenient": lenient, "strict": strict})


@register_scorer("sudoku")
def score_sudoku(sample: "Sample", output: str) -> Scores:
    """The puzzle's solution (``data["solution"]``); without a stored solution, any valid
    grid that keeps the given cells."""
    return _sudoku(sample, output, "default")


@register_scorer("sudoku", mode="paper")
def score_sudoku_paper(sample: "Sample", output: str) -> Scores:
    return _sudoku(sample, output, "paper")
