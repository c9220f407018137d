"""The Ray executor: one actor per worker, a shared queue of units, the driver the only writer.

Each actor loads the model once and decodes whatever unit it is handed next; the driver
hands out a unit whenever an actor frees up (`ray.wait`), so fast and slow strategy
configs balance across workers, and writes every finished unit to the database itself
(SQLite has one writer; actors never touch the file). What a model waits for (an API
request: host, attempt, seconds) is asked of the busy actors about once a second and shown
in the driver's progress, as for a model in the driver's own process. Ray is imported only
here, and only when `--executor ray` is asked for.
"""

from __future__ import annotations

import os
import sys
import time
from collections import deque
from typing import Any, Iterable, Iterator

from parallelbench.runner.pool import adopt_driver_imports
from parallelbench.runner.units import UnitRunner, UnsupportedTask, WorkUnit

WAIT_POLL_S = 1.0  # how often busy actors are asked what their model waits for


class RayUnavailable(RuntimeError):
    pass


class _Worker:
    """The actor body: loads one model at a time and runs units on it."""

    def __init__(self, paths: list[str], threads: int | None, user_dir: str | None = None):
        adopt_driver_imports(paths, user_dir, threads)  # py: models and module:Class strategies too
        self.runner: UnitRunner | None = None

    def load(self, model_spec: str, options: dict[str, Any]) -> str:
        from parallelbench.models import load_model

        self.runner = None  # free the previous model first
        self.runner = UnitRunner(load_model(model_spec, **options), model_spec)
        return self.runner.kind

    def model_versions(self) -> dict[str, str]:
        assert self.runner is not None, "load a model first"
        return self.runner.versions.get("model", {})

    def model_name(self) -> str | None:
        assert self.runner is not None, "load a model first"
        name = getattr(self.runner.model, "name", None)
        return name if isinstance(name, str) else None

    def can_wait(self) -> bool:
        """Whether the model says what it waits for (an API model: host, attempt, seconds)."""
        return callable(getattr(self.runner.model, "waiting", None)) if self.runner is not None else False

    def waiting(self) -> str | None:
        """What the model waits for right now; runs beside `run` (the actor has two threads)."""
        runner = self.runner
        ask = getattr(runner.model, "waiting", None) if runner is not None else None
        try:
            return ask() if callable(ask) else None
        except Exception:  # noqa: BLE001 - a progress hint must never break a run
            return None

    def run(self, unit: WorkUnit) -> tuple[list[dict[str, Any]], str | None]:
        """(rows, None), or ([], reason) when the model cannot decode the unit's task:
        the driver then skips the task, as the local executor does."""
        assert self.runner is not None, "load a model first"
        try:
            return self.runner.run(unit), None
        except UnsupportedTask as exc:
            return [], exc.reason


def _import_ray():
    try:
        import ray
    except ImportError:
        raise RayUnavailable(
            "--executor ray needs Ray: pip install 'parallelbench[ray]' (or use --executor local)"
        ) from None
    return ray


def init_ray(*, workers: int, address: str | None = None) -> bool:
    """Connect to `address`, or start a local instance with one CPU per worker. True if started here."""
    ray = _import_ray()
    if ray.is_initialized():
        return False
    if address:
        ray.init(address=address, log_to_driver=False)
    else:
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    return True


def shutdown_ray() -> None:
    _import_ray().shutdown()


def ray_available() -> bool:
    try:
        _import_ray()
    except RayUnavailable:
        return False
    return True


class RayPool:
    """Actors on a local or existing Ray cluster, reused for every model of a run."""

    def __init__(
        self,
        *,
        workers: int,
        address: str | None = None,
        gpus_per_worker: float = 0.0,
        threads_per_worker: int | None = 1,
    ):
        ray = _import_ray()
        self.ray = ray
        if not ray.is_initialized():
            init_ray(workers=workers, address=address)
        remote = ray.remote(_Worker)
        paths = [p for p in sys.path if p]
        # two threads per actor: `waiting` answers while `run` decodes
        self.actors = [
            remote.options(num_cpus=1, num_gpus=gpus_per_worker, max_concurrency=2).remote(
                paths, threads_per_worker, os.getcwd())
            for _ in range(workers)
        ]
        self.kind = ""
        self.skipped: dict[str, str] = {}  # tasks found undecodable mid-run, with the reason
        self.waiting = None  # set by `load` when the model says what it waits for (progress.watch)
        self._waits: dict[int, tuple[float, str]] = {}  # actor index -> (since when, what it waits for)
        self._asked: dict[Any, int] = {}  # pending `waiting` calls -> actor index
        self._last_ask = 0.0

    def load(self, model_spec: str, options: dict[str, Any]) -> "RayPool":
        """Load a model on every actor (in parallel); returns self, ready to `run`."""
        try:
            kinds = self.ray.get([a.load.remote(model_spec, options) for a in self.actors])
        except Exception as exc:  # noqa: BLE001 - the actor's load error, on one line
            raise RuntimeError(f"model {model_spec!r} failed to load on a Ray worker: {_cause(exc)}") from None
        self.kind = kinds[0]
        self.model_versions = self.ray.get(self.actors[0].model_versions.remote())
        self.model_name = self.ray.get(self.actors[0].model_name.remote())
        self.skipped = {}
        self.waiting = self._waiting if self.ray.get(self.actors[0].can_wait.remote()) else None
        return self

    def run(self, units: Iterable[WorkUnit]) -> Iterator[tuple[WorkUnit, list[dict[str, Any]]]]:
        """Hand each unit to the next free actor; yield (unit, rows) as they finish."""
        ray = self.ray
        queue = deque(units)
        pending: dict[Any, tuple[Any, WorkUnit]] = {}

        def hand_out(actor) -> None:
            while queue and queue[0].task in self.skipped:
                queue.popleft()
            if queue:
                unit = queue.popleft()
                pending[actor.run.remote(unit)] = (actor, unit)

        for actor in self.actors:
            hand_out(actor)
        while pending:
            if self.waiting is None:
                ready, _ = ray.wait(list(pending), num_returns=1)
            else:  # wake up every second to ask the busy actors what they wait for
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=WAIT_POLL_S)
                self._ask_waits([actor for actor, _ in pending.values()])
                if not ready:
                    continue
            actor, unit = pending.pop(ready[0])
            self._waits.pop(self.actors.index(actor), None)  # done: no longer waiting
            try:
                rows, unsupported = ray.get(ready[0])
            except Exception as exc:  # noqa: BLE001
                raise RuntimeError(f"a Ray worker failed on {unit.config.label} / {unit.task}: {_cause(exc)}") from None
            if unsupported is not None:
                self.skipped.setdefault(unit.task, unsupported)
            hand_out(actor)
            yield unit, rows

    def _ask_waits(self, busy: list[Any]) -> None:
        """Collect the answers that came back; ask each busy actor again at most every WAIT_POLL_S."""
        ray = self.ray
        if self._asked:
            answered, _ = ray.wait(list(self._asked), num_returns=len(self._asked), timeout=0)
            for ref in answered:
                index = self._asked.pop(ref)
                try:
                    text = ray.get(ref)
                except Exception:  # noqa: BLE001 - a progress hint must never break a run
                    text = None
                if text:
                    since = self._waits.get(index, (time.monotonic(), ""))[0]
                    self._waits[index] = (since, str(text))
                else:
                    self._waits.pop(index, None)
        now = time.monotonic()
        if now - self._last_ask < WAIT_POLL_S:
            return
        self._last_ask = now
        asking = set(self._asked.values())
        for actor in busy:
            index = self.actors.index(actor)
            if index not in asking:
                self._asked[actor.waiting.remote()] = index

    def _waiting(self) -> str | None:
        """The longest wait among the actors, as the model words it, and how many others wait too."""
        waits = sorted(dict(self._waits).values())  # a copy: the run loop updates it from another thread
        if not waits:
            return None
        more = f"; {len(waits) - 1} more Ray worker{'s' if len(waits) > 2 else ''} waiting" if len(waits) > 1 else ""
        return waits[0][1] + more

    def close(self) -> None:
        """Kept open across models; `shutdown` ends it."""

    def shutdown(self) -> None:
        for a in self.actors:
            try:
                self.ray.kill(a)
            except Exception:  # noqa: BLE001 - already gone
                pass
        self.actors = []
        self.skipped = {}


def _cause(exc: BaseException) -> str:
    cause = getattr(exc, "cause", None) or exc
    lines = [ln for ln in str(cause).strip().splitlines() if ln.strip()]
    return lines[-1] if lines else type(cause).__name__
