"""Latin square and Sudoku scorers, including the original release's own answers."""

from __future__ import annotations

import itertools
import json

import pytest

from parallelbench.scoring import score
from parallelbench.scoring.puzzles import is_latin_square, is_valid_sudoku
from parallelbench.tasks.base import Sample

from release_files import RELEASE, missing  # noqa: E402  (the release's files: where, and how to get them)
SYMBOLS = ["H", "4", "A", "C"]
SQUARE = "H,4,A,C\n4,C,H,A\nC,A,4,H\nA,H,C,4"  # one row per line, as our tasks and the release write grids
PUZZLE, SOLUTION = "0042\n2031\n4023\n3214", "1342\n2431\n4123\n3214"
ONE_LINE_SQUARE, ONE_LINE_SOLUTION = SQUARE.replace("\n", " "), SOLUTION.replace("\n", " ")


def latin(symbols=SYMBOLS, size=4) -> Sample:
    return Sample("p/0", "puzzle/latin_square", "", [], SQUARE, "latin_square", {"symbols": symbols, "size": size})


def sudoku(puzzle=PUZZLE, solution=SOLUTION) -> Sample:
    data = {"puzzle": puzzle} if solution is None else {"puzzle": puzzle, "solution": solution}
    return Sample("p/1", "puzzle/sudoku", "", [], SOLUTION, "sudoku", data)


# ------------------------------------------------------------------ Latin square


@pytest.mark.parametrize(
    ("text", "lenient", "strict"),
    [
        (SQUARE, 1.0, 1.0),
        ("\n" + SQUARE.replace("\n", "\n\n") + "\n", 1.0, 1.0),  # blank lines around and between rows
        ("Here it is:\nH,4,A,C\n4,C,H,A\nthen\nC,A,4,H\nA,H,C,4\nDone.", 1.0, 1.0),  # prose lines are skipped
        (ONE_LINE_SQUARE, 0.0, 0.0),  # rows are read from lines: a grid on one line has no row
        ("H, 4, A, C\n4, C, H, A\nC, A, 4, H\nA, H, C, 4", 1.0, 1.0),  # cells are stripped
        ("Here is the square:\nH4AC\n4CHA\nCA4H\nAHC4\nHope this helps!", 0.0, 0.0),  # no commas
        ("H 4 A C\n4 C H A\nC A 4 H\nA H C 4", 0.0, 0.0),
        (SQUARE + "\nH,4,A,C", 1.0, 1.0),  # extra row: the first four rows are judged
        ("H,4,A,C\n4,C,H,A\nC,A,4,H", 0.0, 0.0),  # three rows
        ("H,4,A,C\nH,4,A,C\nC,A,4,H\nA,H,C,4", 0.0, 0.0),  # repeated row: columns break
        ("H,4,A,B\n4,B,H,A\nB,A,4,H\nA,H,B,4", 0.0, 0.0),  # wrong symbol set
        ("", 0.0, 0.0),
    ],
)
def test_latin_square(text, lenient, strict):
    assert score(latin(), text).components == {"lenient": lenient, "strict": strict}


def test_latin_square_accepts_every_valid_square_and_only_those():
    """Over all 4! x 4! arrangements built from cyclic shifts, validity decides the score."""
    base = [[SYMBOLS[(r + c) % 4] for c in range(4)] for r in range(4)]
    count = 0
    for rows in itertools.permutations(range(4)):
        for cols in itertools.permutations(range(4)):
            grid = [[base[r][c] for c in cols] for r in rows]
            text = "\n".join(",".join(row) for row in grid)
            assert score(latin(), text).score == 1.0
            count += 1
    assert count == 576
    broken = "\n".join(",".join(row) for row in [base[0], base[0], base[2], base[3]])
    assert score(latin(), broken).score == 0.0


def test_latin_square_multichar_symbols_and_bad_data():
    syms = ["10", "20", "30"]
    text = "10,20,30\n20,30,10\n30,10,20"
    assert score(latin(syms, 3), text).score == 1.0
    assert score(latin(["A", "A", "B"], 3), "A,A,B\nA,B,A\nB,A,A").score == 0.0
    assert score(latin([], 4), SQUARE).score == 0.0


def test_is_latin_square_checks_columns():
    assert is_latin_square([["A", "B"], ["B", "A"]], ["A", "B"])
    assert not is_latin_square([["A", "B"], ["A", "B"]], ["A", "B"])


# ------------------------------------------------------------------ Sudoku


@pytest.mark.parametrize(
    ("text", "lenient", "strict"),
    [
        (SOLUTION, 1.0, 1.0),
        (" 1342 \n\n2431\n4123\n3214\n", 1.0, 1.0),  # blank lines and surrounding spaces
        (ONE_LINE_SOLUTION, 0.0, 0.0),  # rows are read from lines: a grid on one line has no row
        ("Output: 1342 2431 4123 3214", 0.0, 0.0),
        ("Output:\n" + SOLUTION, 1.0, 0.0),
        ("1 3 4 2\n2 4 3 1\n4 1 2 3\n3 2 1 4", 1.0, 0.0),
        ("1,3,4,2\n2,4,3,1\n4,1,2,3\n3,2,1,4", 1.0, 0.0),
        ("1342, 2431, 4123, 3214", 0.0, 0.0),  # sixteen digits on one line, not four rows
        ("| 1 3 | 4 2 |\n| 2 4 | 3 1 |\n| 4 1 | 2 3 |\n| 3 2 | 1 4 |", 1.0, 0.0),
        ("1342\n2431\n4123\n3241", 0.0, 0.0),  # last row wrong
        ("1342\n2431\n4123", 0.0, 0.0),
        (SOLUTION + "\nSolved in 1234 ms.", 0.0, 0.0),  # a fifth line of four digits: five rows
        ("１３４２\n２４３１\n４１２３\n３２１４", 1.0, 1.0),  # full-width digits are digits
        ("", 0.0, 0.0),
    ],
)
def test_sudoku(text, lenient, strict):
    assert score(sudoku(), text).components == {"lenient": lenient, "strict": strict}


def test_sudoku_without_solution_checks_validity_and_givens():
    s = sudoku(solution=None)
    assert score(s, SOLUTION).score == 1.0
    # A valid grid that changes a given cell (row 4 given as 3214) does not count.
    other = "2143\n3412\n1234\n4321"
    assert is_valid_sudoku([list(r) for r in other.split()])
    assert score(s, other).score == 0.0


def test_is_valid_sudoku_checks_boxes():
    rows_and_cols_ok = ["1234", "2341", "3412", "4123"]  # a Latin square, boxes repeat digits
    assert not is_valid_sudoku([list(r) for r in rows_and_cols_ok])
    assert is_valid_sudoku([list(r) for r in SOLUTION.split()])


# ------------------------------------------------------------------ the original release's answers


def _release_lines(name: str) -> list[dict]:
    path = RELEASE / name
    if not path.exists():
        pytest.skip(missing(path))
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_release_latin_square_examples_score_as_correct():
    for line in _release_lines("puzzle/latin_square_n4.jsonl"):
        answer = line["answer"]
        s = latin(answer["symbols"], int(line["input"]["size"]))
        assert score(s, answer["example"]).components == {"lenient": 1.0, "strict": 1.0}


def test_release_sudoku_answers_score_as_correct():
    lines = _release_lines("puzzle/sudoku_n4_12.jsonl")
    assert len(lines) == 108
    for line in lines:
        puzzle, solution = line["input"]["sudoku"], line["answer"]
        assert "\n" in puzzle and "\n" in solution  # the release writes one row per line, as we do
        assert score(sudoku(puzzle, solution), line["answer"]).components == {"lenient": 1.0, "strict": 1.0}
        assert score(sudoku(puzzle, None), line["answer"]).score == 1.0
