"""One fine-tuning run: load the base, make and check the data, train, write the result.

Everything that can refuse the run (the model, the tasks, words a tiny tokenizer lacks)
is checked before anything is written to --out.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from parallelbench.models.finetune.defaults import kind_of
from parallelbench.models.finetune.loop import CheckpointError, FinetuneConfig, run


class FinetuneError(ValueError):
    """A one-line reason the fine-tuning run cannot go ahead."""


def _backend(cfg: FinetuneConfig) -> Any:
    kind = kind_of(cfg.base)
    try:
        if kind == "tiny":
            from parallelbench.models.finetune.tiny import TinyBackend

            return TinyBackend(cfg.base)
        from parallelbench.models.finetune.lora import LoraBackend

        return LoraBackend(cfg.base, cfg.model_options, rank=cfg.rank, alpha=cfg.alpha, dropout=cfg.dropout)
    except FileNotFoundError as exc:
        raise FinetuneError(str(exc).replace("--path", "the model spec")) from None
    except ValueError as exc:  # ModelSpecError / HFModelError / LoraError: one line already
        raise FinetuneError(str(exc).splitlines()[0]) from None


def finetune(cfg: FinetuneConfig, out: Path, *, state: dict | None = None, dump_data: Path | None = None,
             threads: int | None = None, progress: bool = True, console: Any = None) -> dict:
    """Run (or resume) the fine-tune into `out`; returns the record written as finetune.json."""
    import torch

    from parallelbench.models.finetune.data import SplitError, check_split, dump, make_splits
    from parallelbench.models.tokenizer import UnknownWordsError
    from parallelbench.tasks import get_task

    say = console.print if console is not None else (lambda *_a, **_k: None)
    if threads:
        torch.set_num_threads(threads)
    torch.manual_seed(cfg.seed)
    backend = _backend(cfg)
    tasks = [get_task(t) for t in cfg.tasks]
    try:
        splits = make_splits(tasks, cfg.train_samples, cfg.val_samples, cfg.seed)
        check_split(splits, tasks)
    except SplitError as exc:
        raise FinetuneError(str(exc)) from None
    say(f"data: {len(splits.train):,} training and {len(splits.val):,} validation samples from {len(tasks)} task(s), "
        f"generated from seeds disjoint from the test seeds; checked: none of them is among the "
        f"{splits.test_prompts:,} test prompts of these tasks ({splits.dropped_test} generated samples equal to a test "
        f"prompt and {splits.dropped_train} validation samples equal to a test or training prompt were dropped)",
        highlight=False)
    by_id = {t.id: t for t in tasks}
    try:
        train = [backend.encode(s, by_id[s.task]) for s in splits.train]
        val = [backend.encode(s, by_id[s.task]) for s in splits.val]
    except UnknownWordsError as exc:
        raise FinetuneError(f"{exc}; {cfg.base} cannot read these tasks (its vocabulary comes from its own training tasks)") from None
    except ValueError as exc:
        raise FinetuneError(" ".join(str(exc).split())) from None
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FinetuneError(f"cannot create {out}: {exc.strerror}; choose a writable folder") from None
    if dump_data is not None:
        try:
            paths = dump(splits, dump_data)
        except OSError as exc:
            raise FinetuneError(f"cannot write --dump-data {dump_data}: {exc.strerror}") from None
        say(f"wrote {', '.join(str(p) for p in paths)}", highlight=False)
    bar = None
    if progress:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                       TextColumn("loss {task.fields[loss]}  val loss {task.fields[val_loss]}  "
                                  "val acc (1 by 1) {task.fields[val_acc]}"),
                       TimeElapsedColumn(), console=console)
        bar.start()
    try:
        result = run(backend, cfg, train, val, splits.val, out, data_fingerprint=splits.fingerprint(), state=state,
                     progress=bar, log=(lambda m: (bar.console if bar else console).print(m, highlight=False))
                     if console is not None else (lambda _m: None))
    except CheckpointError as exc:
        raise FinetuneError(str(exc)) from None
    finally:
        if bar is not None:
            bar.stop()
    record = {
        "base": cfg.base, "base_fingerprint": backend.fingerprint, "tasks": list(cfg.tasks),
        "kind": kind_of(cfg.base), "lora_mode": getattr(backend, "mode", None), "config": {k: v for k, v in asdict(cfg).items() if k != "stop_after"},
        "data": {"train": len(splits.train), "val": len(splits.val), "fingerprint": splits.fingerprint(),
                 "test_prompts_checked": splits.test_prompts, "dropped_test": splits.dropped_test},
        **result,
    }
    if result.get("complete"):
        backend.export(out, record)
    return record
