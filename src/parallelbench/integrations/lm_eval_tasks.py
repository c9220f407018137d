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
# Modules of your own tasks (`--tasks module:NAME`): (name, folder) pairs imported before scoring
# so that their @register_scorer scorers exist.
USER_MODULES = []


def _import_user_modules():
    import importlib
    import sys

    for name, folder in USER_MODULES:
        if name in sys.modules:
            continue
        added = folder not in sys.path
        if added:
            sys.path.insert(0, folder)
        try:
            importlib.import_module(name)
        finally:
            if added:
                sys.path.remove(folder)


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

    _import_user_modules()
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


def _utils(tasks: list[Task]) -> str:
    """utils.py, importing the modules of user tasks (where they were found now) before scoring."""
    from parallelbench.tasks import task_source
    from parallelbench.tasks.user import import_root, source_module

    modules = {}
    for task in tasks:
        spec = task_source(task.id)
        if spec:
            name = source_module(spec)
            modules[name] = import_root(name)
    pairs = [(name, folder) for name, folder in modules.items() if folder]
    return UTILS.replace("USER_MODULES = []", f"USER_MODULES = {pairs!r}")


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
    tasks_seen = []
    for task in tasks:
        tasks_seen.append(task)
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
    (out_dir / "utils.py").write_text(_utils(tasks_seen), encoding="utf-8")
    if paper:
        (out_dir / f"_{GROUP}.yaml").write_text(group_yaml(paper), encoding="utf-8")
    return rows


def with_user_tasks(args: list[str], folder: str | Path) -> list[str]:
    """lm-eval arguments with every `module:NAME` item of `--tasks` exported into `folder`.

    The items become the exported lm-eval task names and `--include_path folder` is added,
    so `parallelbench lm-eval --tasks my_tasks:make_tasks ...` runs your own tasks.
    Raises `TaskSourceError` (one line) for a source that cannot be loaded.
    """
    from parallelbench.tasks import resolve_tasks
    from parallelbench.tasks.user import is_task_source

    out, changed = [], False
    i = 0
    while i < len(args):
        arg = args[i]
        value = None
        if arg == "--tasks" and i + 1 < len(args):
            value, prefix = args[i + 1], None
            i += 2
        elif arg.startswith("--tasks="):
            value, prefix = arg[len("--tasks="):], "--tasks="
            i += 1
        else:
            out.append(arg)
            i += 1
            continue
        items = [v.strip() for v in value.split(",") if v.strip()]
        if any(is_task_source(v) for v in items):
            names = []
            for item in items:
                if is_task_source(item):
                    rows = export_lm_eval(resolve_tasks([item]), Path(folder) / re.sub(r"\W+", "_", item))
                    names += [name for name, _, _ in rows]
                else:
                    names.append(item)
            value, changed = ",".join(names), True
        out += [f"{prefix}{value}"] if prefix else ["--tasks", value]
    if changed:
        if any(a == "--include_path" or a.startswith("--include_path=") for a in out):
            from parallelbench.tasks import TaskSourceError

            raise TaskSourceError(
                "--tasks module:NAME cannot be combined with --include_path (lm-eval takes one folder); export your "
                "tasks into that folder with `parallelbench tasks export --format lm-eval --out DIR --tasks module:NAME`"
            )
        out += ["--include_path", str(folder)]
    return out
