"""Latin squares and 4x4 Sudoku grids, enumerated once (both sets are small).

A 4x4 Sudoku grid is a Latin square whose four 2x2 boxes also hold every digit:
there are 288 of them out of the 576 4x4 Latin squares.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import permutations

Grid = tuple[tuple[int, ...], ...]


@lru_cache(maxsize=None)
def latin_squares(size: int) -> tuple[Grid, ...]:
    """Every size x size Latin square over 0..size-1, rows built one at a time (size <= 5)."""
    if not 1 <= size <= 5:
        raise ValueError(f"enumerating Latin squares of size {size} is not supported (1..5)")
    rows = list(permutations(range(size)))
    out: list[Grid] = []

    def extend(square: list[tuple[int, ...]]) -> None:
        if len(square) == size:
            out.append(tuple(square))
            return
        for row in rows:
            if all(row[c] != prev[c] for prev in square for c in range(size)):
                square.append(row)
                extend(square)
                square.pop()

    extend([])
    return tuple(out)


def _boxes_ok(grid: Grid) -> bool:
    for br in (0, 2):
        for bc in (0, 2):
            if len({grid[br + i][bc + j] for i in (0, 1) for j in (0, 1)}) != 4:
                return False
    return True


@lru_cache(maxsize=None)
def sudoku_grids() -> tuple[Grid, ...]:
    """The 288 complete 4x4 Sudoku grids over digits 1..4."""
    return tuple(
        tuple(tuple(v + 1 for v in row) for row in sq) for sq in latin_squares(4) if _boxes_ok(sq)
    )


def sudoku_text(grid: Grid) -> str:
    """`1342\\n2431\\n4123\\n3214`: one row per line as digit strings, 0 for an empty cell
    (the layout of the original release's prompts and answers)."""
    return "\n".join("".join(str(v) for v in row) for row in grid)


def parse_sudoku(text: str) -> Grid:
    """Inverse of `sudoku_text`; rows may be separated by any whitespace."""
    rows = text.split()
    if len(rows) != 4 or any(len(r) != 4 or not r.isdigit() for r in rows):
        raise ValueError(f"not a 4x4 Sudoku text: {text!r} (expected four rows of four digits, e.g. '0042\\n2031\\n4023\\n3214')")
    return tuple(tuple(int(c) for c in r) for r in rows)


@lru_cache(maxsize=None)
def _cell_masks() -> tuple[tuple[int, ...], ...]:
    """masks[pos][d]: bit g set when grid g has digit d at cell pos (row-major)."""
    masks = [[0] * 5 for _ in range(16)]
    for g, grid in enumerate(sudoku_grids()):
        for pos in range(16):
            masks[pos][grid[pos // 4][pos % 4]] |= 1 << g
    return tuple(tuple(m) for m in masks)


def _solution_bits(puzzle: Grid) -> int:
    masks = _cell_masks()
    bits = (1 << len(sudoku_grids())) - 1
    for pos in range(16):
        d = puzzle[pos // 4][pos % 4]
        if d:
            bits &= masks[pos][d] if 1 <= d <= 4 else 0
    return bits


def count_sudoku_solutions(puzzle: Grid) -> int:
    """How many complete grids keep the given (non-zero) cells of `puzzle`."""
    return bin(_solution_bits(puzzle)).count("1")


def sudoku_solutions(puzzle: Grid) -> list[Grid]:
    """Every complete grid that keeps the given (non-zero) cells of `puzzle`."""
    bits = _solution_bits(puzzle)
    return [g for i, g in enumerate(sudoku_grids()) if bits >> i & 1]


def latin_text(grid: Grid, symbols: list[str]) -> str:
    """`H,4,A,C\\n4,C,H,A\\n...`: cells joined by commas, one row per line (the original
    release's CSV layout)."""
    return "\n".join(",".join(symbols[v] for v in row) for row in grid)
