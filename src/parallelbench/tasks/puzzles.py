"""Puzzles: 4x4 Latin square over random symbols and 4x4 Sudoku with a unique solution.

Both one-shot. Grids are written as the original release writes them, one row per line:
the Latin square as CSV, cells joined by commas (`H,4,A,C\\n4,C,H,A\\nC,A,4,H\\nA,H,C,4`),
Sudoku rows as digit strings (`1342\\n2431\\n4123\\n3214`, 0 for an empty cell in the
puzzle), in prompts, one-shot examples, reference answers and `data` alike. The paper's
metric reads rows from lines, so a grid on one line would score 0 against it. (The
paper's table of prompts prints the grids flattened onto one line; that is typesetting.)
"""

from __future__ import annotations

import string

from parallelbench.tasks._answers import valid_answers_from_data
from parallelbench.tasks._common import DEFAULT_SEED, StableRng, example_rng, one_shot, sample_rng
from parallelbench.tasks._grids import (
    latin_squares,
    latin_text,
    sudoku_grids,
    count_sudoku_solutions,
    sudoku_text,
)
from parallelbench.tasks.base import GeneratorParams, Sample, Task

LATIN_PROMPT = (
    "Generate a Latin square of size {size} with the symbols {symbols}. Only output the final result as CSV."
)
SUDOKU_PROMPT = (
    "Fill the positions where the values are 0 in a 4x4 grid with digits 1-4 so that each column, "
    "each row, and each of the four 2x2 subgrids that compose the grid contains all of the digits "
    "from 1 to 4.\n\nInput:\n{sudoku}\nOutput:\n"
)
SYMBOLS = string.ascii_uppercase + string.digits
DEFAULT_CLUES = 12


# ---- Latin square -------------------------------------------------------------------


def _draw_latin(rng: StableRng, size: int) -> tuple[list[str], str]:
    symbols = rng.sample(SYMBOLS, size)
    square = rng.choice(latin_squares(size))
    return symbols, latin_text(square, symbols)


def _symbols_text(symbols: list[str]) -> str:
    return "[" + ", ".join(symbols) + "]"


def _generate_latin(task: Task, limit: int | None) -> list[Sample]:
    size = int(task.params.extra.get("size", 4))
    rng = sample_rng(task)
    tests = [_draw_latin(rng, size) for _ in range(task.params.num_samples)]
    seen = {tuple(sym) for sym, _ in tests}
    erng = example_rng(task)
    out = []
    for i, (symbols, answer) in enumerate(tests if limit is None else tests[: max(limit, 0)]):
        while True:
            ex_symbols, ex_answer = _draw_latin(erng, size)
            if tuple(ex_symbols) not in seen:
                break
        prompt = task.prompt_template.format(size=size, symbols=_symbols_text(symbols))
        ex_prompt = task.prompt_template.format(size=size, symbols=_symbols_text(ex_symbols))
        out.append(
            Sample(
                id=f"{task.id}/{i}",
                task=task.id,
                prompt=prompt,
                messages=one_shot(ex_prompt, ex_answer, prompt),
                answer=answer,
                scorer="latin_square",
                data={"n": size, "size": size, "symbols": symbols},
            )
        )
    return out


# ---- Sudoku -------------------------------------------------------------------------


def make_sudoku(rng: StableRng, clues: int = DEFAULT_CLUES, *, avoid: frozenset = frozenset()):
    """(puzzle, solution) grids: a random complete grid with cells removed while unique.

    Cells are removed in a random order, each only if the puzzle still has exactly one
    solution (counted over the 288 grids); a dead end restarts with a new grid. A grid
    in `avoid` is never used.
    """
    if not 4 <= clues <= 16:
        raise ValueError(f"a 4x4 Sudoku with a unique solution needs 4..16 clues, got {clues}")
    grids = [g for g in sudoku_grids() if g not in avoid]
    while True:
        solution = rng.choice(grids)
        cells = [[v for v in row] for row in solution]
        removed = 0
        for pos in rng.shuffled(range(16)):
            if removed == 16 - clues:
                break
            r, c = divmod(pos, 4)
            keep = cells[r][c]
            cells[r][c] = 0
            if count_sudoku_solutions(tuple(tuple(row) for row in cells)) == 1:
                removed += 1
            else:
                cells[r][c] = keep
        if removed == 16 - clues:
            return tuple(tuple(row) for row in cells), solution


def _generate_sudoku(task: Task, limit: int | None) -> list[Sample]:
    clues = int(task.params.extra.get("clues", DEFAULT_CLUES))
    rng = sample_rng(task)
    tests = [make_sudoku(rng, clues) for _ in range(task.params.num_samples)]
    used = frozenset(solution for _, solution in tests)
    erng = example_rng(task)
    out = []
    for i, (puzzle, solution) in enumerate(tests if limit is None else tests[: max(limit, 0)]):
        # Examples never share a solution grid (hence never a puzzle) with any test item.
        ex_puzzle, ex_solution = make_sudoku(erng, clues, avoid=used)
        prompt = task.prompt_template.format(sudoku=sudoku_text(puzzle))
        ex_prompt = task.prompt_template.format(sudoku=sudoku_text(ex_puzzle))
        out.append(
            Sample(
                id=f"{task.id}/{i}",
                task=task.id,
                prompt=prompt,
                messages=one_shot(ex_prompt, sudoku_text(ex_solution), prompt),
                answer=sudoku_text(solution),
                scorer="sudoku",
                data={"n": 4, "size": 4, "clues": clues, "puzzle": sudoku_text(puzzle), "solution": sudoku_text(solution)},
            )
        )
    return out


TASKS = (  # registered by `tasks/builtin.py`
    Task(
        id="puzzle/latin_square",
        category="puzzle",
        prompt_template=LATIN_PROMPT,
        shots=1,
        max_new_tokens=64,
        scorer="latin_square",
        params=GeneratorParams(4, 4, 100, 100, DEFAULT_SEED, {"size": 4}),
        generate=_generate_latin,
        description="Latin square 4x4 over 4 random letters/digits; any valid square is correct (576).",
        valid_answers=valid_answers_from_data,
        in_paper=True,
    ),
    Task(
        id="puzzle/sudoku",
        category="puzzle",
        prompt_template=SUDOKU_PROMPT,
        shots=1,
        max_new_tokens=64,
        scorer="sudoku",
        # The paper's benchmark table lists 108 Sudoku puzzles (100 for every other task).
        params=GeneratorParams(4, 4, 108, 108, DEFAULT_SEED, {"clues": DEFAULT_CLUES}),
        generate=_generate_sudoku,
        description="Sudoku 4x4 with a unique solution, 12 clues by default (params.extra['clues']).",
        valid_answers=valid_answers_from_data,
        in_paper=True,
    ),
)
