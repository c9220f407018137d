"""Read the original ParallelBench release's frozen test files into our `Sample` format.

Each upstream file maps to one of our task ids and scorers. The release's prompt
template (from `task_config.yaml`) and its one-shot example are kept as they are;
what our scorers need goes into `data`. Expected answers of deterministic list tasks
are recomputed from the input with our operation semantics, so a defect of the
release shows up instead of being copied: its `sort` references are sorted by the
full "First Last" string although the prompt asks for the last name; the release's
own text is kept in `data["release_answer"]`.

Other handled quirks: the Sudoku template spells line breaks as a literal backslash-n
(turned into real ones), and Sudoku's one-shot examples are items of the same test
set (kept, since they are the release's prompts; our own generator never does this).
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parallelbench.tasks._common import format_list, one_shot, zero_shot
from parallelbench.tasks._listops import OPS_WITH_INDEX, SCORER_OF, sort_key
from parallelbench.tasks.base import Sample
from parallelbench.tasks.text_writing import w2s_reference

WAITING_OPS = tuple(SCORER_OF)


def task_id_for(rel: str) -> str | None:
    """Our task id for a release file path like `waiting_line/copy.jsonl` (None: unknown)."""
    folder, _, name = rel.removesuffix(".jsonl").partition("/")
    if folder in ("waiting_line", "waiting_line_n15") and name in WAITING_OPS:
        return f"{folder}/{name}"
    if folder == "puzzle":
        return {"latin_square_n4": "puzzle/latin_square", "sudoku_n4_12": "puzzle/sudoku"}.get(name)
    if folder == "paraphrase_summarize":
        return {"samsum": "text_writing/summarization", "chatgpt-paraphrases": "text_writing/paraphrasing"}.get(name)
    if folder == "words_to_sentence":
        level, _, k = name.partition("_n")
        if level in ("easy", "medium", "hard") and (not k or (k.isdigit() and 1 <= int(k) <= 7)):
            return f"text_writing/w2s_{level}" + (f"_n{k}" if k else "")
    return None


@dataclass
class ReleaseImport:
    samples: dict[str, list[Sample]] = field(default_factory=dict)  # our task id -> samples
    skipped: list[str] = field(default_factory=list)  # release files with no matching task


def load_release(root: str | Path, tasks: set[str] | None = None) -> ReleaseImport:
    """Every release file under `root` (one folder per category) as samples of our tasks."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"release folder {root} does not exist; pass the folder that holds waiting_line/, puzzle/ ...")
    files = sorted(root.glob("*/*.jsonl"))
    if not files:
        raise FileNotFoundError(f"no */*.jsonl files under {root}; is this the release's output/test folder?")
    result = ReleaseImport()
    configs: dict[str, dict[str, Any]] = {}
    for path in files:
        rel = path.relative_to(root).as_posix()
        task_id = task_id_for(rel)
        if task_id is None:
            result.skipped.append(rel)
            continue
        if tasks is not None and task_id not in tasks:
            continue
        folder = path.parent.name
        if folder not in configs:
            configs[folder] = _read_config(path.parent / "task_config.yaml")
        config = configs[folder].get(f"{folder}/{path.stem}")
        if config is None or "prompt" not in config:
            raise ValueError(f"{path.parent / 'task_config.yaml'} has no prompt for {folder}/{path.stem}")
        template = config["prompt"].replace("\\n", "\n")
        lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
        result.samples[task_id] = [
            convert_line(json.loads(line), task_id=task_id, template=template, rel=rel, index=i)
            for i, line in enumerate(lines)
        ]
    return result


def _read_config(path: Path) -> dict[str, Any]:
    import yaml  # noqa: PLC0415

    if not path.exists():
        raise FileNotFoundError(f"{path} is missing; every release folder needs its task_config.yaml")
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


def _answer_text(answer: Any) -> str | None:
    return answer if isinstance(answer, str) else answer.get("example") if isinstance(answer, dict) else None


def convert_line(line: dict[str, Any], *, task_id: str, template: str, rel: str, index: int) -> Sample:
    """One release JSONL record -> one Sample of `task_id`."""
    inp = line["input"]
    prompt = _fill(template, task_id, inp)
    scorer, data, answer = _score_data(task_id, inp, line.get("answer"))
    data["release"] = {"file": rel, "line": index}
    if line.get("output_format") is not None:
        data["release_output_format"] = line["output_format"]
    examples = inp.get("icl_examples") or []
    if examples:
        ex = examples[0]
        messages = one_shot(_fill(template, task_id, ex["input"]), _answer_text(ex["answer"]) or "", prompt)
    else:
        messages = zero_shot(prompt)
    stem = rel.removesuffix(".jsonl")
    return Sample(
        id=f"official/{stem}/{index}",
        task=task_id,
        prompt=prompt,
        messages=messages,
        answer=answer,
        scorer=scorer,
        data=data,
    )


def _fill(template: str, task_id: str, inp: dict[str, Any]) -> str:
    if task_id.startswith("waiting_line"):
        return template.format(context=inp["context"], word=inp.get("word"), index=inp.get("index"))
    if task_id == "puzzle/latin_square":
        return template.format(size=inp["size"], symbols=inp["symbols"])
    if task_id == "puzzle/sudoku":
        return template.format(sudoku=inp["sudoku"])
    if "w2s" in task_id:
        return template.format(words=inp["words"])
    return template.format(text=inp["text"])


def _score_data(task_id: str, inp: dict[str, Any], answer: Any) -> tuple[str, dict[str, Any], str]:
    release_text = _answer_text(answer)
    if task_id.startswith("waiting_line"):
        op = task_id.split("/")[1]
        items = json.loads(inp["context"])
        word, index = inp.get("word"), inp.get("index")
        data: dict[str, Any] = {"n": len(items), "input": items}
        if word is not None:
            data["word"] = word
        if op in OPS_WITH_INDEX:
            data["index"] = index
        scorer = SCORER_OF[op]
        if op == "shuffle":
            data["must_differ"] = True
        if scorer == "list_exact":
            expected = _expected(op, items, word, index)
            data["expected"] = expected
            data["release_answer"] = release_text
            return scorer, data, format_list(expected)
        return scorer, data, release_text or ""
    if task_id == "puzzle/latin_square":
        symbols = [s.strip() for s in inp["symbols"].strip("[]").split(",")]
        data = {"n": int(inp["size"]), "size": int(inp["size"]), "symbols": symbols, "release_answer": release_text}
        return "latin_square", data, release_text or ""
    if task_id == "puzzle/sudoku":
        # the release's grids as they are (one row per line, as in our own tasks), so the
        # reference answer, `data` and the prompt's grid agree
        puzzle, solution = inp["sudoku"], release_text or ""
        clues = sum(c.isdigit() and c != "0" for c in puzzle)
        data = {"n": 4, "size": 4, "clues": clues, "puzzle": puzzle, "solution": solution, "release_answer": release_text}
        return "sudoku", data, solution
    if task_id == "text_writing/summarization":
        return "summarization", {"source": inp["text"], "reference": answer["summary"]}, answer["summary"]
    if task_id == "text_writing/paraphrasing":
        refs = answer.get("examples")
        refs = list(ast.literal_eval(refs)) if isinstance(refs, str) else list(refs or [])
        return "paraphrase", {"source": inp["text"], "references": refs}, refs[0] if refs else ""
    words = list(answer["words"])
    return "w2s", {"n": len(words), "words": words}, release_text or w2s_reference(words)


def _expected(op: str, items: list[str], word: str | None, index: int | None) -> list[str]:
    """The answer our prompt semantics give (positions 0-based, sort by last name)."""
    if op == "copy":
        return list(items)
    if op == "sort":
        return sorted(items, key=sort_key)
    if op == "reverse":
        return items[::-1]
    if op == "insert_index":
        return items[:index] + [word] + items[index:]
    if op == "remove_index":
        return items[:index] + items[index + 1 :]
    if op == "replace_index":
        return items[:index] + [word] + items[index + 1 :]
    raise ValueError(f"{op} has no single expected answer")
