"""Our tasks as an lm-evaluation-harness task folder (`--include_path DIR`), in the layout of
the ParallelBench rewrite's own lm-eval tasks.

`export_lm_eval(tasks, DIR)` writes one folder per category (``waiting_line/``,
``text_writing/``, ``puzzles/`` ...) holding one YAML per task, named
``parallelbench_<category>_<task>`` (``parallelbench_puzzles_sudoku_n4``,
``parallelbench_text_writing_words_to_sentence_easy``, ``parallelbench_waiting_line_copy``),
the category's group (``parallelbench_waiting_line``, ``parallelbench_text_writing``,
``parallelbench_puzzles``: the paper's tasks), the samples as local JSONL files and a
``utils.py`` that loads them and scores with our scorers; at the top, the group
``parallelbench_all`` of the three. Families of our own outside the paper get a top-level
group of their own that ``parallelbench_all`` does not hold (``parallelbench_structured``:
JSON records and tool calls), so the paper's aggregate stays the authors'. Generation stops at a blank line (``"\\n\\n"``; puzzles
``"\\n\\n\\n"``). Metrics: see `lm_eval_metrics.py`. The folder needs `parallelbench`
installed and nothing from a hub; lm-eval itself is not imported here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Callable, Iterable

from parallelbench.integrations.lm_eval_metrics import DECODING_METRICS, REPAIR_METRICS, score_metrics
from parallelbench.tasks.base import Sample, Task

GROUP = "parallelbench_all"
PREFIX = "parallelbench"
# our category -> the rewrite's category name (folder, subgroup and task-name part)
CATEGORY_NAMES = {"puzzle": "puzzles"}
SUBGROUPS = ("waiting_line", "text_writing", "puzzles")  # in parallelbench_all, in this order
OWN_GROUPS = {"structured": "ParallelBench - Structured output (ours, not in the paper)"}  # top-level, outside parallelbench_all
_HIGHER_IS_BETTER = {"nfe": "false", "tokens_per_step": "true"}  # the others are descriptive
_GROUP_METRICS = ("score", "nfe", "tokens_per_step")  # what the rewrite's groups aggregate

UTILS = '''"""Written by `parallelbench tasks export --format lm-eval`: local data and ParallelBench scorers."""

import json
from pathlib import Path

from parallelbench.integrations.lm_eval_metrics import percent_mean, sample_metrics

HERE = Path(__file__).resolve().parent


def load_docs(data_file=None, **_):
    """The task's samples from its JSONL file beside this module (no network)."""
    import datasets

    with open(HERE / data_file, encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return {"test": datasets.Dataset.from_list(rows)}


def process_results(doc, results):
    """Scores of the first response (0..1; $PARALLELBENCH_SCORING picks default or paper scoring)
    and the decoding metadata the parallelbench model recorded for this sample."""
    return sample_metrics(doc, results[0])
'''


def category_name(task: Task | str) -> str:
    """The rewrite's category of a task: `puzzle` -> `puzzles`, others unchanged."""
    category = task if isinstance(task, str) else task.category or task.id.partition("/")[0]
    return CATEGORY_NAMES.get(category, category)


def lm_eval_task_name(task_id: str) -> str:
    """`waiting_line/copy` -> `parallelbench_waiting_line_copy`; `puzzle/sudoku` ->
    `parallelbench_puzzles_sudoku_n4`; `text_writing/w2s_easy` ->
    `parallelbench_text_writing_words_to_sentence_easy` (the rewrite's names)."""
    head, _, rest = task_id.partition("/")
    if head == "puzzle" and rest in ("sudoku", "latin_square"):
        rest += "_n4"  # the paper's puzzles are 4 x 4
    if head == "text_writing" and rest.startswith("w2s_"):
        rest = "words_to_sentence_" + rest[len("w2s_"):]
    name = "_".join(p for p in (CATEGORY_NAMES.get(head, head), rest) if p)
    return f"{PREFIX}_" + re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")


def render_prompt(sample: Sample) -> str:
    """The chat turns as one plain-text prompt (for models without our chat handling)."""
    return "\n\n".join(m["content"] for m in sample.messages)


def stop_strings(task: Task, samples: list[Sample]) -> list[str]:
    """Blank line, as the rewrite (three newlines for puzzles); none when a reference answer
    itself holds a blank line (chain-of-thought answers), which a stop would cut."""
    stop = "\n\n\n" if category_name(task) == "puzzles" else "\n\n"
    if any(stop in (s.answer or "") for s in samples) or task.scorer == "cot_answer":
        return []
    return [stop]


def _yaml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid YAML scalar


def task_yaml(task: Task, data_file: str, until: list[str]) -> str:
    metrics = []
    for name in (*score_metrics(task.scorer), "unmask_score"):
        metrics += [f"  - metric: {name}", "    aggregation: !function utils.percent_mean", "    higher_is_better: true"]
    for name in (*REPAIR_METRICS[1:], *DECODING_METRICS):
        metrics += [f"  - metric: {name}", "    aggregation: mean",
                    f"    higher_is_better: {_HIGHER_IS_BETTER.get(name, 'null')}"]
    return "\n".join([
        f"task: {lm_eval_task_name(task.id)}",
        "custom_dataset: !function utils.load_docs",
        "dataset_kwargs:",
        f"  data_file: {_yaml_str(data_file)}",
        "output_type: generate_until",
        "test_split: test",
        "doc_to_text: text",
        "doc_to_target: answer",
        "num_fewshot: 0",  # the paper's one-shot example is part of each prompt already
        "process_results: !function utils.process_results",
        "metric_list:",
        *metrics,
        "generation_kwargs:",
        f"  until: [{', '.join(_yaml_str(u) for u in until)}]",
        "  do_sample: false",
        f"  max_gen_toks: {int(task.max_new_tokens)}",
        "metadata:",
        "  version: 1.0",
        f"  parallelbench_task: {_yaml_str(task.id)}",
        "",
    ])


def group_yaml(name: str, alias: str, members: list[str]) -> str:
    lines = [f"group: {name}", f"group_alias: {_yaml_str(alias)}", "aggregate_metric_list:"]
    for metric in _GROUP_METRICS:
        lines += [f"  - metric: {metric}", "    aggregation: mean", "    weight_by_size: true"]
    lines += ["task:"] + [f"  - {m}" for m in members] + ["metadata:", "  version: 1.0", ""]
    return "\n".join(lines)


def doc_of(sample: Sample) -> dict:
    return {"id": sample.id, "text": render_prompt(sample), "answer": sample.answer,
            "parallelbench_sample": json.dumps(sample.to_dict(), ensure_ascii=False)}


def export_lm_eval(
    tasks: Iterable[Task],
    out_dir: str | Path,
    limit: int | None = None,
    samples_of: Callable[[Task, int | None], list[Sample]] | None = None,
) -> list[tuple[str, Path, int]]:
    """Write the folder; returns (lm-eval task name, YAML file, sample count) rows."""
    out_dir = Path(out_dir)
    rows = []
    paper: dict[str, list[str]] = {}
    own: dict[str, list[str]] = {}
    folders: set[Path] = set()
    for task in tasks:
        name = lm_eval_task_name(task.id)
        folder = out_dir / category_name(task)
        (folder / "data").mkdir(parents=True, exist_ok=True)
        folders.add(folder)
        samples = samples_of(task, limit) if samples_of else task.samples(limit)
        data_file = f"data/{name}.jsonl"
        with (folder / data_file).open("w", encoding="utf-8") as fh:
            for s in samples:
                fh.write(json.dumps(doc_of(s), ensure_ascii=False) + "\n")
        path = folder / f"{name}.yaml"
        path.write_text(task_yaml(task, data_file, stop_strings(task, samples)), encoding="utf-8")
        rows.append((name, path, len(samples)))
        if task.in_paper:
            paper.setdefault(category_name(task), []).append(name)
        elif category_name(task) in OWN_GROUPS:
            own.setdefault(category_name(task), []).append(name)
    for folder in folders:
        (folder / "utils.py").write_text(UTILS, encoding="utf-8")
    subgroups = []
    for category in [c for c in SUBGROUPS if c in paper] + sorted(set(paper) - set(SUBGROUPS)):
        subgroup = f"{PREFIX}_{category}"
        alias = "ParallelBench - " + category.replace("_", " ").title()
        (out_dir / category / "_default.yaml").write_text(group_yaml(subgroup, alias, paper[category]), encoding="utf-8")
        subgroups.append(subgroup)
    if subgroups:
        (out_dir / f"_{PREFIX}.yaml").write_text(group_yaml(GROUP, "ParallelBench", subgroups), encoding="utf-8")
    for category, members in own.items():
        (out_dir / category / "_default.yaml").write_text(
            group_yaml(f"{PREFIX}_{category}", OWN_GROUPS[category], members), encoding="utf-8")
    return rows
