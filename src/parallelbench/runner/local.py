"""The local executor: the loaded model in this process, or a copy of it in each worker process.

By default a run uses every core this process may use (one worker per visible GPU for a model on
a GPU): the first unit decodes here, and when what is left would take longer than starting the
workers costs (`MIN_WORK_S`, estimated from that unit) the rest goes to worker processes
(`runner.pool`). `--workers N` starts N workers whatever the size; `--workers 1` decodes here.
API models always send their requests from this process (their own `concurrency` sets how many
are in flight). Rows do not depend on any of this (`runner.units`).
"""

from __future__ import annotations

import gc
import re
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from parallelbench.runner.pool import Lost, WorkerLoadError, WorkerPool
from parallelbench.runner.resources import copies_that_fit, model_device, usable_cores, visible_gpus
from parallelbench.runner.units import UnitRunner, UnsupportedTask, WorkUnit

if TYPE_CHECKING:
    from parallelbench.models.base import BenchModel

MIN_WORK_S = 20.0  # with the default --workers, less decoding than this (estimated) stays in this process
IN_PROCESS_KINDS = ("api",)  # remote compute: more processes would only multiply the requests in flight

PoolFactory = Callable[[int, "list[str] | None"], WorkerPool]


class LocalSession:
    """Runs a model's units, one batch after another here or spread over worker processes."""

    def __init__(self, model: "BenchModel", model_spec: str, *, options: dict[str, Any] | None = None,
                 workers: int | None = 1, pools: PoolFactory | None = None,
                 notify: Callable[[str], None] | None = None, clock: Callable[[], float] = time.perf_counter):
        self.runner: UnitRunner | None = UnitRunner(model, model_spec)
        self.kind = self.runner.kind
        self.model: Any = model
        self.model_spec = model_spec
        self.model_versions = self.runner.versions.get("model", {})  # part of each row's provenance
        self.model_name = getattr(model, "name", None)  # a py: factory's rows carry it (runner.job.row_model_name)
        self.skipped: dict[str, str] = {}  # tasks found undecodable mid-run, with the reason
        self.options = dict(options or {})  # what the workers load the model with
        self.workers = workers  # None: every usable core (or GPU), when the run is long enough
        self.pools = pools  # None: always in this process
        self.notify = notify or (lambda text: None)
        self.clock = clock
        self.lost: list[Lost] = []  # units whose worker process died while decoding them
        self.not_run: list[WorkUnit] = []  # units never started because every worker had died
        self._pool: WorkerPool | None = None
        self._on_gpu = False

    def run(self, units: Iterable[WorkUnit]) -> Iterator[tuple[WorkUnit, list[dict[str, Any]]]]:
        """Rows per unit, in the order given; a task the model turns out not to decode is skipped whole."""
        units = list(units)
        count, devices = self.worker_plan(len(units))
        start = 0
        if count > 1 and self.workers is None:  # the default: only when the work repays the start-up
            began = self.clock()
            yield from self._here(units[:1])
            start = 1
            if (self.clock() - began) * (len(units) - 1) < MIN_WORK_S:
                count = 1
        if count <= 1 or start >= len(units):
            yield from self._here(units[start:])
            return
        assert self.pools is not None
        pool = self.pools(count, devices)
        if self._on_gpu:
            self._release()  # its device memory goes to the workers' copies (one of them shares this device)
        try:
            pool.load(self.model_spec, self.options)
        except WorkerLoadError as exc:
            if self.runner is None:
                raise
            self.notify(f"{exc}; decoding in this process instead")
            yield from self._here(units[start:])
            return
        self._pool = pool
        self._release()
        yield from pool.run(units[start:], self.skipped)
        self.lost, self.not_run = list(pool.lost), list(pool.not_run)

    def finished(self) -> list[tuple[WorkUnit, list[dict[str, Any]]]]:
        """After an interruption or an error: units the workers finished that `run` has not yielded yet."""
        return self._pool.finished() if self._pool is not None else []

    def worker_plan(self, n_units: int) -> tuple[int, list[str] | None]:
        """(processes, a CUDA device per worker or None) for this model's units; 1 means this process."""
        if self.pools is None or self.kind in IN_PROCESS_KINDS or n_units < 2 or self.workers == 1:
            if self.workers and self.workers > 1 and self.kind in IN_PROCESS_KINDS:
                self.notify(f"model {self.model_spec!r} sends its requests from this process; --workers does not "
                            "apply to it (--model-opt concurrency=N sets how many are in flight)")
            return 1, None
        self._on_gpu = model_device(self.model) == "cuda"
        if self._on_gpu:
            gpus = visible_gpus()
            count = self.workers or max(1, len(gpus))
            pinned = re.fullmatch(r"cuda:\d+", str(self.options.get("device", "")))  # the user chose the device
            return min(count, n_units), (gpus if gpus and not pinned else None)
        count = self.workers or usable_cores()
        if self.workers is None:
            fit = copies_that_fit(self.model)
            if fit is not None and fit < count:
                self.notify(f"{fit} worker process{'es' if fit != 1 else ''}, not {count}: each holds a copy of model "
                            f"{self.model_spec!r} and the free memory holds {fit} (--workers N decides)")
                count = fit
        return min(count, n_units), None

    def _here(self, units: Iterable[WorkUnit]) -> Iterator[tuple[WorkUnit, list[dict[str, Any]]]]:
        assert self.runner is not None
        for unit in units:
            if unit.task in self.skipped:
                continue
            try:
                rows = self.runner.run(unit)
            except UnsupportedTask as exc:
                self.skipped[exc.task] = exc.reason
                rows = []
            yield unit, rows

    def _release(self) -> None:
        """The workers hold their own copies: free this process's (on a GPU, its device memory)."""
        if self.runner is None:
            return
        self.runner = None
        self.model = None
        gc.collect()
        try:
            import torch

            if torch.cuda.is_available() and torch.cuda.is_initialized():
                torch.cuda.empty_cache()
        except Exception:  # noqa: BLE001 - freeing memory is only a courtesy
            pass

    def close(self) -> None:
        self._pool = None  # the pool belongs to the run (runner.job), reused by the next model
