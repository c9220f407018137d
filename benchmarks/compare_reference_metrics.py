"""Our scorers side by side with the ParallelBench authors' own metric code.

Reads the authors' repository from a checkout you provide (nothing of it is part of this
project), loads its metric module with its unrelated imports stubbed out, and scores many
generated answer forms of every release test sample both ways:

    git clone https://github.com/furiosa-ai/ParallelBench /tmp/pb-authors
    PARALLELBENCH_AUTHORS_REPO=/tmp/pb-authors python benchmarks/compare_reference_metrics.py \\
        --release ../shared/official-parallelbench

Either layout of their repository works: the original release (`dataset/parallel_bench/metrics.py`,
functions ``f(prediction, ground_truth, strict=False) -> float``) or the 2026 rewrite
(`parallelbench/datasets/metrics.py`, functions ``f(prediction, ground_truth) -> dict``).
The release's test files default to the ones inside the checkout.

What is compared, per answer: the reference's ``score`` and ``score_strict`` (list and
puzzle tasks) or ``inclusion_score`` (words-to-sentence) with our ``lenient`` / ``strict``
/ ``inclusion`` components in ``paper`` mode (must agree on every answer) and in
``default`` mode (agrees except for the classes docs/scoring.md lists; the table names
the forms where they differ). Grammar is not compared: the reference's checker needs
LanguageTool and the network, so both sides get a stub that accepts everything.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import types
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Callable

ENV = "PARALLELBENCH_AUTHORS_REPO"
METRICS_FILES = ("parallelbench/datasets/metrics.py", "dataset/parallel_bench/metrics.py")
RELEASE_DIRS = ("dataset/parallel_bench/data/output/test", "parallelbench/datasets/data/output/test")


# ---- loading the authors' metric module -----------------------------------------------------


def load_reference(repo: str | Path) -> types.ModuleType:
    """Their metrics module, executed under the name `pb_authors_metrics`.

    Lines importing their own packages, `evaluate` and the grammar checker are replaced by
    stubs (the list, puzzle and inclusion metrics use none of them).
    """
    repo = Path(repo)
    path = next((repo / rel for rel in METRICS_FILES if (repo / rel).is_file()), None)
    if path is None:
        raise FileNotFoundError(f"no metrics module under {repo} (looked for {', '.join(METRICS_FILES)})")
    kept = []
    for line in path.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if stripped == "import evaluate" or stripped.startswith(("from parallelbench.", "from dataset.", "from utils.")):
            kept.append(line[: len(line) - len(line.lstrip())] + "pass  # stubbed: " + stripped)
        else:
            kept.append(line)
    module = types.ModuleType("pb_authors_metrics")
    module.__file__ = str(path)
    module.__dict__.update(
        evaluate=None,
        grammar_check=lambda text: True,
        sentence_to_words=lambda s: s.replace(".", "").replace(",", "").split(),
        str_to_latin_square=lambda s: s,
    )
    exec(compile("\n".join(kept), str(path), "exec"), module.__dict__)  # noqa: S102  (the user's own checkout)
    return module


def metric_map(module: types.ModuleType) -> dict[str, Callable]:
    for name in ("parallelbench_metric_func_map", "parallel_bench_metric_func_map"):
        if hasattr(module, name):
            return getattr(module, name)
    raise AttributeError(f"{module.__file__} has no metric function map")


def reference_scores(fn: Callable, prediction: str, ground_truth: Any) -> dict[str, float]:
    """``score`` and ``score_strict`` (and ``inclusion_score`` where given) from either layout."""
    import inspect

    if "strict" in inspect.signature(fn).parameters:  # the original release
        lenient = fn(prediction, ground_truth, strict=False)
        if isinstance(lenient, dict):
            return {k: float(v) for k, v in lenient.items()}
        return {"score": float(lenient), "score_strict": float(fn(prediction, ground_truth, strict=True))}
    out = fn(prediction, ground_truth)
    return {k: float(v) for k, v in out.items()}


# ---- answer forms -----------------------------------------------------------------------------


def _q(items, quote='"', sep=", ") -> str:
    return sep.join(f"{quote}{x}{quote}" for x in items)


def list_forms(items: list[str]) -> dict[str, str]:
    """Ways a model writes the list `items` (and a few wrong lists)."""
    canon = "[" + _q(items) + "]"
    wrong = "[" + _q(items[::-1] if len(items) > 1 else items + items) + "]"
    return {
        "canonical": canon,
        "prose_after": canon + " I hope this helps!",
        "prose_before": "Sure! Here is the final list: " + canon,
        "code_fence": "```json\n" + canon + "\n```",
        "twice": canon + "\n" + canon,
        "wrong_then_right": wrong + "\nCorrection: " + canon,
        "right_then_wrong": canon + "\nor maybe " + wrong,
        "bracketless_quoted": _q(items),
        "bracketless_bare": ", ".join(items),
        "unquoted_in_brackets": "[" + ", ".join(items) + "]",
        "single_quotes": "[" + _q(items, "'") + "]",
        "curly_quotes": "[" + ", ".join(f"\u201c{x}\u201d" for x in items) + "]",
        "no_space_separator": "[" + _q(items, sep=",") + "]",
        "space_before_comma": "[" + _q(items, sep=" , ") + "]",
        "one_item_per_line": "[\n" + _q(items, sep=",\n") + "\n]",
        "tab_in_names": "[" + _q([x.replace(" ", "\t") for x in items]) + "]",
        "double_space_in_names": "[" + _q([x.replace(" ", "  ") for x in items]) + "]",
        "padded_items": "[" + _q([f" {x} " for x in items]) + "]",
        "trailing_comma": "[" + _q(items) + ",]",
        "lowercase": "[" + _q([x.lower() for x in items]) + "]",
        "missing_close": "[" + _q(items),
        "missing_open": _q(items) + "]",
        "nested": "[" + canon + "]",
        "bullets": "\n".join(f"- {x}" for x in items),
        "period_after": "The answer is " + canon + ".",
        "backticks": "`" + canon + "`",
        "semicolons": "[" + _q(items, sep="; ") + "]",
        "padded_brackets": "[ " + _q(items) + " ]",
        "crlf": canon + "\r\n",
        "solved_in_ms": canon + "\nSolved in 1234 ms.",
        "reversed": wrong,
        "missing_item": "[" + _q(items[:-1]) + "]",
        "extra_item": "[" + _q(items + [items[0]]) + "]",
        "empty": "",
        "empty_brackets": "[]",
        "bracket_prose_after": canon + " (sorted [as asked])",
    }


def latin_forms(rows: list[list[str]]) -> dict[str, str]:
    """Ways a model writes the Latin square `rows` (and some broken squares)."""
    lines = [",".join(r) for r in rows]
    nl = "\n".join(lines)
    bad = [lines[0], lines[0], *lines[2:]]
    return {
        "newline_rows": nl,
        "one_line": " ".join(lines),
        "one_line_double_spaces": "  ".join(lines),
        "one_line_twice": " ".join(lines) + "\n" + " ".join(lines),
        "one_line_with_prose": "Answer: " + " ".join(lines),
        "spaces_after_commas": "\n".join(", ".join(r) for r in rows),
        "spaces_around_commas": "\n".join(" , ".join(r) for r in rows),
        "space_separated_cells": "\n".join(" ".join(r) for r in rows),
        "concatenated_cells": "\n".join("".join(r) for r in rows),
        "prose_before": "Here is a Latin square:\n" + nl,
        "prose_between": "\n".join(f"Row {i + 1}:\n{x}" for i, x in enumerate(lines)),
        "prose_after": nl + "\nEach symbol appears once per row and column.",
        "code_fence": "```csv\n" + nl + "\n```",
        "twice": nl + "\n\n" + nl,
        "fifth_cell_one_row": "\n".join([lines[0] + "," + rows[0][0], *lines[1:]]),
        "fifth_cell_all_rows": "\n".join(x + "," + r[0] for x, r in zip(lines, rows)),
        "repeated_row": "\n".join(bad),
        "lowercase": nl.lower(),
        "tabs_after_commas": "\n".join(",\t".join(r) for r in rows),
        "crlf": "\r\n".join(lines),
        "blank_lines_between": "\n\n".join(lines),
        "trailing_comma": "\n".join(x + "," for x in lines),
        "quoted_cells": "\n".join(",".join(f'"{c}"' for c in r) for r in rows),
        "bracketed_rows": "\n".join("[" + ", ".join(r) + "]" for r in rows),
        "pipe_table": "\n".join("| " + " | ".join(r) + " |" for r in rows),
        "semicolon_rows": "; ".join(lines),
        "three_rows": "\n".join(lines[:3]),
        "extra_row": nl + "\n" + lines[0],
        "fullwidth_commas": "\n".join("\uff0c".join(r) for r in rows),
        "solved_in_ms": nl + "\nSolved in 1234 ms.",
        "indented": "\n".join("  " + x for x in lines),
        "empty": "",
    }


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if c.isdigit() else c for c in text)


def sudoku_forms(rows: list[str], puzzle_rows: list[str]) -> dict[str, str]:
    """Ways a model writes the Sudoku grid `rows` (digit strings)."""
    nl = "\n".join(rows)
    wrong = [rows[0], rows[1], rows[2], rows[3][::-1]]
    return {
        "newline_rows": nl,
        "one_line": " ".join(rows),
        "one_line_double_spaces": "  ".join(rows),
        "one_line_commas": ", ".join(rows),
        "one_line_twice_same_line": " ".join(rows + rows),
        "one_line_then_solved_in_ms": " ".join(rows) + "\nSolved in 1234 ms.",
        "spaces_between_digits": "\n".join(" ".join(r) for r in rows),
        "commas_between_digits": "\n".join(",".join(r) for r in rows),
        "prose_before": "Output:\n" + nl,
        "solved_in_ms": nl + "\nSolved in 1234 ms.",
        "prose_after_no_digits": nl + "\nDone!",
        "code_fence": "```\n" + nl + "\n```",
        "twice": nl + "\n\n" + nl,
        "extra_fifth_row": nl + "\n" + rows[0],
        "fullwidth_digits": _fullwidth(nl),
        "fullwidth_one_line": _fullwidth(" ".join(rows)),
        "arabic_indic_digits": "".join(chr(0x0660 + int(c)) if c.isdigit() else c for c in nl),
        "tabs_between_digits": "\n".join("\t".join(r) for r in rows),
        "pipes": "\n".join("|" + "|".join(r) + "|" for r in rows),
        "letters_between_digits": "\n".join(r[:2] + "x" + r[2:] for r in rows),
        "row_labels": "\n".join(f"Row {i + 1}: {r}" for i, r in enumerate(rows)),
        "wrong_digit": "\n".join(wrong),
        "puzzle_echoed": "\n".join(puzzle_rows) + "\n" + nl,
        "crlf": "\r\n".join(rows),
        "blank_lines_between": "\n\n".join(rows),
        "indented": "\n".join("  " + r for r in rows),
        "boxes_with_spaces": "\n".join(r[:2] + " " + r[2:] for r in rows),
        "trailing_period": "\n".join(r + "." for r in rows),
        "python_list_one_line": str([[int(c) for c in r] for r in rows]),
        "json_rows": "\n".join(str([int(c) for c in r]) + "," for r in rows),
        "superscript_digits": nl.translate(str.maketrans("1234", "\u00b9\u00b2\u00b3\u2074")),
        "three_rows": "\n".join(rows[:3]),
        "empty": "",
    }


def w2s_forms(words: list[str], example: str | None) -> dict[str, str]:
    """Sentences that use, inflect, capitalise or miss the requested words."""
    joined = ", ".join(words[:-1]) + (" and " if len(words) > 1 else "") + words[-1]
    forms = {
        "plain_sentence": f"I wrote about {joined} today.",
        "capitalised_first": f"{words[0].capitalize()} came first, then {joined}.",
        "all_capitalised": " ".join(w.capitalize() for w in words) + ".",
        "upper_case": " ".join(w.upper() for w in words) + ".",
        "plural_s": " ".join(w + "s" for w in words) + ".",
        "ing_forms": " ".join(w + "ing" for w in words) + ".",
        "missing_last": " ".join(words[:-1]) + ".",
        "missing_first": " ".join(words[1:]) + ".",
        "hyphenated": "-".join(words) + ".",
        "inside_words": " ".join("re" + w + "ed" for w in words) + ".",
        "quoted_words": " ".join(f'"{w}"' for w in words) + ".",
        "with_newlines": "\n".join(words),
        "leading_space": "  " + " ".join(words),
        "trailing_prose": " ".join(words) + ". I hope this helps!",
        "one_word_twice": " ".join([words[0]] * 2) + ".",
        "empty": "",
        "unicode_lookalike": " ".join(w.replace("a", "\u0430") for w in words) + ".",
        "fullwidth": " ".join("".join(chr(ord(c) + 0xFEE0) if c.isascii() and c.isalpha() else c for c in w)
                               for w in words) + ".",
        "truncated_last": " ".join(words[:-1] + [words[-1][:-1]]) + ".",
        "spaced_letters": " ".join(" ".join(w) for w in words) + ".",
        "title_case_sentence": f"The {joined} story.".title(),
        "list_form": "- " + "\n- ".join(words),
        "comma_list": ", ".join(words),
        "json_list": json.dumps(words),
        "no_spaces": "".join(words),
        "reversed_words": " ".join(w[::-1] for w in words) + ".",
        "underscore_joined": "_".join(words),
        "with_apostrophes": " ".join(w + "'s" for w in words) + ".",
        "sentence_then_missing": f"Nothing to see here about {words[0]}.",
        "shouting_first": f"{words[0].upper()} and {' '.join(words[1:])}.",
    }
    if example:
        forms["release_example"] = example
    return forms


# ---- the release's samples --------------------------------------------------------------------


def release_rows(root: Path, limit: int | None = None) -> list[tuple[str, str, dict, Any]]:
    """(release file, metric name, raw line, our Sample) for every line (the first `limit`) of every known file."""
    import yaml

    from parallelbench.tasks.official import convert_line, task_id_for

    rows = []
    for path in sorted(root.glob("*/*.jsonl")):
        rel = path.relative_to(root).as_posix()
        task_id = task_id_for(rel)
        if task_id is None:
            continue
        config = yaml.safe_load((path.parent / "task_config.yaml").read_text(encoding="utf-8"))
        entry = config[f"{path.parent.name}/{path.stem}"]
        template = entry["prompt"].replace("\\n", "\n")
        lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
        for i, line in enumerate(lines[:limit]):
            sample = convert_line(line, task_id=task_id, template=template, rel=rel, index=i)
            rows.append((rel, entry["metric"], line, sample))
    return rows


def forms_of(metric: str, line: dict, sample) -> dict[str, str]:
    answer = line["answer"]
    if metric in ("list_match_score", "list_shuffle_score", "list_random_insert_score",
                  "list_random_remove_score", "list_random_replace_score"):
        text = answer if isinstance(answer, str) else answer["example"]
        forms = list_forms(json.loads(text))
        if "expected" in sample.data and sample.data["expected"] != json.loads(text):
            forms["prompt_semantics"] = json.dumps(sample.data["expected"])  # sort by last name
        return forms
    if metric == "latin_square_score":
        return latin_forms([r.split(",") for r in answer["example"].split("\n")])
    if metric == "sudoku_score":
        return sudoku_forms(answer.split("\n"), line["input"]["sudoku"].split("\n"))
    if metric == "sentence_to_words_score":
        return w2s_forms(list(answer["words"]), answer.get("example"))
    return {}


def ours(sample, text: str, mode: str) -> dict[str, float]:
    from parallelbench.scoring import score

    result = score(sample, text, mode=mode)
    if sample.scorer == "w2s":
        return {"inclusion_score": result.components["inclusion"]}
    return {"score": result.components["lenient"], "score_strict": result.components["strict"]}


def compare(repo: Path, release: Path, limit: int | None = None) -> dict[str, Any]:
    """Agreement counts per task family and mode, and the forms where default differs."""
    import parallelbench.scoring.text as text_scorers
    from parallelbench.scoring.grammar import GrammarResult

    text_scorers.grammar_check = lambda text, known_words=(): GrammarResult(1.0, "stub", "none")  # not compared
    fns = metric_map(load_reference(repo))
    stats: dict[str, Counter] = defaultdict(Counter)
    differs: dict[str, Counter] = defaultdict(Counter)
    for rel, metric, line, sample in release_rows(release, limit):
        family = {"latin_square_score": "latin_square", "sudoku_score": "sudoku",
                  "sentence_to_words_score": "w2s_inclusion"}.get(metric, "lists")
        fn = fns[metric]
        fn = fn() if isinstance(fn, type) else fn
        for form, text in forms_of(metric, line, sample).items():
            ref = reference_scores(fn, text, line["answer"])
            keys = ["inclusion_score"] if family == "w2s_inclusion" else ["score", "score_strict"]
            ref = {k: ref.get(k, ref["score"]) for k in keys}
            stats[family]["answers"] += 1
            for mode in ("paper", "default"):
                mine = ours(sample, text, mode)
                if all(mine[k] == ref[k] for k in keys):
                    stats[family][f"{mode}_agree"] += 1
                else:
                    differs[f"{family}/{mode}"][f"{form} ({rel.split('/')[0]}/{Path(rel).stem})"] += 1
    return {"stats": {k: dict(v) for k, v in stats.items()}, "differs": {k: dict(v) for k, v in differs.items()}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", default=os.environ.get(ENV), help=f"the authors' checkout (default: ${ENV})")
    parser.add_argument("--release", default=None, help="the release's test folder (default: inside the checkout)")
    parser.add_argument("--json", default=None, help="also write the result to this JSON file")
    parser.add_argument("--quick", action="store_true", help="two samples per release file")
    args = parser.parse_args(argv)
    if not args.repo:
        print(f"needs the authors' code: set {ENV} to a checkout of github.com/furiosa-ai/ParallelBench or pass --repo")
        return 77 if args.quick else 2
    repo = Path(args.repo)
    release = Path(args.release) if args.release else next((repo / d for d in RELEASE_DIRS if (repo / d).is_dir()), None)
    if release is None or not release.is_dir():
        print(f"error: no release test folder; pass --release (e.g. ../shared/official-parallelbench)", file=sys.stderr)
        return 2
    result = compare(repo, release, 2 if args.quick else None)
    print(f"{'family':<16}{'answers':>9}{'paper agree':>13}{'default agree':>15}")
    for family, c in sorted(result["stats"].items()):
        print(f"{family:<16}{c['answers']:>9}{c.get('paper_agree', 0):>13}{c.get('default_agree', 0):>15}")
    for key, forms in sorted(result["differs"].items()):
        print(f"\n{key}: differs from the reference on")
        for form, n in sorted(forms.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {n:>6}  {form}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
