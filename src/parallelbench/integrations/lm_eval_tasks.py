"""Our tasks as an lm-evaluation-harness task folder (`--include_path DIR`).

`export_lm_eval(tasks, DIR)` writes one YAML per task (name `parallelbench_<category>_<task>`),
a group `parallelbench` with the paper's tasks, the samples as local JSONL files under
`data/`, and `utils.py`, which loads them and scores with our scorers (so the folder needs
`parallelbench` installed, and nothing from a hub). lm-eval itself is not imported here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Callable, Iterable

from parallelbench.tasks.base import Sample, Task

GROUP = "parallelbench"

UTILS = '''"""Written by `parallelbench tasks export --format lm-eval`: local data and ParallelBench scorers."""

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def load_docs(data_file=None, **_):
    """The task's samples from its JSONL file beside this module (no network)."""
    import datasets

    with open(HERE / data_file, encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return {"test": datasets.Dataset.from_list(rows)}


def process_results(doc, results):
    """Score the first response with the sample's own ParallelBench scorer (0..1)."""
    from parallelbench.scoring import score
    from parallelbench.tasks.base import Sample

    sample = Sample.from_dict(json.loads(doc["parallelbench_sample"]))
    return {"acc": float(score(sample, results[0]).score)}
'''


def lm_eval_task_name(task_id: str) -> str:
    """`waiting_line/copy` -> `parallelbench_waiting_line_copy`."""
    return f"{GROUP}_" + re.sub(r"[^A-Za-z0-9]+", "_", task_id).strip("_")


def render_prompt(sample: Sample) -> str:
    """The chat turns as one plain-text prompt (for models without our chat handling)."""
    return "\n\n".join(m["content"] for m in sample.messages)


def _yaml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid YAML scalar


def task_yaml(task: Task, data_file: str) -> str:
    return "\n".join([
        f"task: {lm_eval_task_name(task.id)}",
        "custom_dataset: !function utils.load_docs",
        "dataset_kwargs:",
        f"  data_file: {_yaml_str(data_file)}",
        "output_type: generate_until",
        "test_split: test",
        "doc_to_text: text",
        "doc_to_target: answer",
        "num_fewshot: 0",
        "process_results: !function utils.process_results",
        "metric_list:",
        "  - metric: acc",
        "    aggregation: mean",
        "    higher_is_better: true",
        "generation_kwargs:",
        "  until: []",
        f"  max_gen_toks: {int(task.max_new_tokens)}",
        "metadata:",
        "  version: 1.0",
        f"  parallelbench_task: {_yaml_str(task.id)}",
        "",
    ])


def group_yaml(names: list[str]) -> str:
    lines = [f"group: {GROUP}", "task:"] + [f"  - {n}" for n in names]
    lines += ["aggregate_metric_list:", "  - metric: acc", "    aggregation: mean", "    weight_by_size: false",
              "metadata:", "  version: 1.0", ""]
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
    (out_dir / "data").mkdir(parents=True, exist_ok=True)
    rows, paper = [], []
    for task in tasks:
        name = lm_eval_task_name(task.id)
        samples = samples_of(task, limit) if samples_of else task.samples(limit)
        data_file = f"data/{name}.jsonl"
        with (out_dir / data_file).open("w", encoding="utf-8") as fh:
            for s in samples:
                fh.write(json.dumps(doc_of(s), ensure_ascii=False) + "\n")
        path = out_dir / f"{name}.yaml"
        path.write_text(task_yaml(task, data_file), encoding="utf-8")
        rows.append((name, path, len(samples)))
        if task.in_paper:
            paper.append(name)
    (out_dir / "utils.py").write_text(UTILS, encoding="utf-8")
    if paper:
        (out_dir / f"_{GROUP}.yaml").write_text(group_yaml(paper), encoding="utf-8")
    return rows
