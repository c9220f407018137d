"""Latin square and Sudoku generators and their answer sets."""

import math
import re

import pytest

from parallelbench.tasks import get_task, valid_answers
from parallelbench.tasks._common import StableRng, with_params
from parallelbench.tasks._grids import (
    count_sudoku_solutions,
    latin_squares,
    parse_sudoku,
    sudoku_grids,
    sudoku_solutions,
)
from parallelbench.tasks.puzzles import make_sudoku


def _is_sudoku(grid):
    lines = [list(r) for r in grid] + [[grid[r][c] for r in range(4)] for c in range(4)]
    lines += [[grid[br + i][bc + j] for i in (0, 1) for j in (0, 1)] for br in (0, 2) for bc in (0, 2)]
    return all(sorted(x) == [1, 2, 3, 4] for x in lines)


def test_grid_counts_match_the_known_numbers():
    assert len(latin_squares(4)) == 576
    assert len(latin_squares(3)) == 12
    assert len(sudoku_grids()) == 288
    assert len(set(sudoku_grids())) == 288 and all(_is_sudoku(g) for g in sudoku_grids())


def test_solution_count_agrees_with_brute_force():
    rng = StableRng("brute", 0)
    for _ in range(30):
        grid = rng.choice(sudoku_grids())
        holes = set(rng.sample(range(16), rng.between(0, 12)))
        puzzle = tuple(tuple(0 if r * 4 + c in holes else grid[r][c] for c in range(4)) for r in range(4))
        brute = [g for g in sudoku_grids() if all(puzzle[r][c] in (0, g[r][c]) for r in range(4) for c in range(4))]
        assert count_sudoku_solutions(puzzle) == len(brute) and sudoku_solutions(puzzle) == brute


def test_sudoku_samples_have_12_clues_and_a_unique_solution():
    samples = get_task("puzzle/sudoku").samples()
    assert len(samples) == 108  # the paper's benchmark table: Sudoku (4x4), 108 samples
    assert len({s.data["puzzle"] for s in samples}) == 108
    for s in samples:
        puzzle, solution = parse_sudoku(s.data["puzzle"]), parse_sudoku(s.data["solution"])
        assert sum(v != 0 for row in puzzle for v in row) == 12
        assert sudoku_solutions(puzzle) == [solution]
        assert s.answer == s.data["solution"] and valid_answers(s) == [s.answer]
        assert s.prompt.endswith(f"Input:\n{s.data['puzzle']}\nOutput:\n")


def test_sudoku_examples_never_reuse_a_test_grid_or_puzzle():
    samples = get_task("puzzle/sudoku").samples()
    test_puzzles = {s.data["puzzle"] for s in samples}
    test_solutions = {s.data["solution"] for s in samples}
    for s in samples:
        ex_puzzle = s.messages[0]["content"].split("Input:\n")[1].split("\nOutput:")[0]
        ex_solution = s.messages[1]["content"]
        assert ex_puzzle not in test_puzzles and ex_solution not in test_solutions
        assert sudoku_solutions(parse_sudoku(ex_puzzle)) == [parse_sudoku(ex_solution)]


@pytest.mark.parametrize("clues", [4, 8, 16])
def test_clue_count_is_adjustable(clues):
    t = with_params(get_task("puzzle/sudoku"), clues=clues, num_samples=5)
    for s in t.samples():
        puzzle = parse_sudoku(s.data["puzzle"])
        assert sum(v != 0 for row in puzzle for v in row) == clues
        assert count_sudoku_solutions(puzzle) == 1
    with pytest.raises(ValueError, match="4..16 clues"):
        make_sudoku(StableRng("x"), 3)


def test_latin_square_samples_and_their_576_answers():
    samples = get_task("puzzle/latin_square").samples()
    test_symbol_lists = {tuple(s.data["symbols"]) for s in samples}
    for s in samples:
        symbols = s.data["symbols"]
        assert len(set(symbols)) == 4 and all(len(x) == 1 and x.isalnum() for x in symbols)
        assert f"[{', '.join(symbols)}]" in s.prompt
        answers = valid_answers(s)
        assert len(answers) == len(set(answers)) == 576 and s.answer in answers
        rows = [r.split(",") for r in s.answer.split("\n")]
        assert all(sorted(r) == sorted(symbols) for r in rows)
        assert all(sorted(col) == sorted(symbols) for col in zip(*rows))
        ex_symbols = s.messages[0]["content"].split("symbols [")[1].split("]")[0].split(", ")
        assert tuple(ex_symbols) not in test_symbol_lists
    assert math.factorial(4) * 24 == 576


GRID_ROW = {"puzzle/sudoku": re.compile(r"[0-4]{4}"), "puzzle/latin_square": re.compile(r"[A-Z0-9](,[A-Z0-9]){3}")}


@pytest.mark.parametrize("task_id", sorted(GRID_ROW))
def test_grids_are_written_one_row_per_line_as_the_release_writes_them(task_id):
    """Prompts, one-shot examples, answers, `data` and every valid answer: four lines of one
    row each, no row separated by a space (the paper's metric reads rows from lines)."""
    row = GRID_ROW[task_id]

    def is_grid(text):
        lines = text.split("\n")
        return len(lines) == 4 and all(row.fullmatch(line) for line in lines)

    for s in get_task(task_id).samples():
        assert is_grid(s.answer) and is_grid(s.messages[1]["content"]), s.id
        assert all(is_grid(a) for a in valid_answers(s)), s.id
        if task_id == "puzzle/sudoku":
            assert is_grid(s.data["puzzle"]) and is_grid(s.data["solution"])
            for prompt in (s.prompt, s.messages[0]["content"]):
                assert is_grid(prompt.split("Input:\n")[1].removesuffix("\nOutput:\n"))


def test_templates_and_layout_are_the_release_ones():
    """Our templates are the release's (`task_config.yaml`), and a release sample's text is what
    our generator writes for the same grid and symbols."""
    from parallelbench.tasks._grids import latin_text, sudoku_text
    from parallelbench.tasks.official import load_release

    from release_files import MISSING, RELEASE  # noqa: PLC0415

    if not (RELEASE / "puzzle").is_dir():
        pytest.skip(MISSING)
    release = load_release(RELEASE, tasks={"puzzle/sudoku", "puzzle/latin_square"}).samples
    ours = {t: get_task(t) for t in ("puzzle/sudoku", "puzzle/latin_square")}
    for task_id, samples in release.items():
        for s in samples:
            if task_id == "puzzle/sudoku":
                puzzle = parse_sudoku(s.data["puzzle"])
                assert s.prompt == ours[task_id].prompt_template.format(sudoku=sudoku_text(puzzle))
                assert s.answer == sudoku_text(parse_sudoku(s.answer))
            else:
                symbols = s.data["symbols"]
                assert s.prompt == ours[task_id].prompt_template.format(size=4, symbols="[" + ", ".join(symbols) + "]")
                grid = tuple(tuple(symbols.index(c) for c in line.split(",")) for line in s.answer.split("\n"))
                assert s.answer == latin_text(grid, symbols)
