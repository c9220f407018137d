"""A whole run: validate the plan, then per model load once, run the missing units, write rows.

Order of events matters for the guarantees of `parallelbench run`:
1. the spec is planned and validated (nothing touched on disk),
2. the first model is loaded (a model that cannot load creates no database),
3. the database is opened and its finished keys read once per model,
4. units run on the chosen executor; each finished unit is written in one transaction.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from rich.console import Console
from rich.markup import escape

from parallelbench.runner.interrupts import held
from parallelbench.runner.progress import RunProgress
from parallelbench.runner.spec import FALLBACK_MODEL, Plan, RunSpec, SpecError, check_model
from parallelbench.runner.store import ResultsStore

from parallelbench.runner.pool import describe_unit
from parallelbench.runner.provenance import Provenance
from parallelbench.runner.units import plan_units, rescore_rows, unsupported_tasks

MEDUSA_MODES = ("medusa", "medusa-verified")  # strategies only a causal LM with Medusa heads decodes


@dataclass
class JobResult:
    db: Path
    models: list[str]
    rows_added: int = 0
    rows_skipped: int = 0
    rows_rescored: int = 0  # stored outputs scored again (scorer version or --scoring changed), not decoded
    wall_time: float = 0.0
    report: Path | None = None
    notes: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str, str]] = field(default_factory=list)  # (model, task, reason)
    pairs_run: int = 0  # (model, task) pairs that decoded or were already done
    attempted: int = 0  # samples decoded (or tried) by this run
    failed: int = 0  # of those, samples whose decoding failed (stored as failed rows, retried by a re-run)
    failure_reasons: dict[str, int] = field(default_factory=dict)  # short reason -> samples
    lost: list[str] = field(default_factory=list)  # units whose worker process died mid-unit, described
    lost_rows: int = 0
    not_run: int = 0  # units never started because every worker process had died
    not_run_rows: int = 0

    def failure_line(self) -> str:
        """'12 of 1,700 samples failed: 429 rate limited; re-run to retry them' (empty when none failed)."""
        if not self.failed:
            return ""
        reasons = sorted(self.failure_reasons.items(), key=lambda kv: (-kv[1], kv[0]))
        said = "; ".join(r if len(reasons) == 1 else f"{r} ({n:,})" for r, n in reasons[:4])
        if len(reasons) > 4:
            said += f"; {len(reasons) - 4} other reasons"
        return f"{self.failed:,} of {self.attempted:,} samples failed: {said}; re-run to retry them"

    def lost_line(self) -> str:
        """'1 unit (8 rows) was lost when its worker process died: ...; re-run the same command to decode it'
        (empty when every worker lived)."""
        if not self.lost and not self.not_run:
            return ""
        parts = []
        if self.lost:
            n = len(self.lost)
            shown = "; ".join(self.lost[:3]) + (f"; and {n - 3} more" if n > 3 else "")
            parts.append(f"{n:,} unit{'s' if n != 1 else ''} ({self.lost_rows:,} rows) lost when {'their' if n != 1 else 'its'} "
                         f"worker process died: {shown}")
        if self.not_run:
            parts.append(f"{self.not_run:,} unit{'s' if self.not_run != 1 else ''} ({self.not_run_rows:,} rows) not run "
                         "because every worker process had died")
        return "; ".join(parts) + "; re-run the same command to decode them"

    @property
    def nothing_ran(self) -> bool:
        """True when no (model, task) pair could run at all (every one skipped)."""
        return self.pairs_run == 0


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run; carries what was saved so the CLI can say it in one line."""

    def __init__(self, result: "JobResult"):
        super().__init__()
        self.result = result


class ModelLoadError(RuntimeError):
    pass


def _load(spec: str, options: dict[str, Any]):
    from parallelbench.display import about
    from parallelbench.models import ModelSpecError, load_model

    try:
        return load_model(spec, **options)
    except ModelSpecError as exc:
        raise ModelLoadError(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - missing weights, bad options...: one line for the user
        raise ModelLoadError(about(f"model {spec!r}", " ".join(str(exc).split()), " could not be loaded: ")) from None


def _default_model(spec: RunSpec, console: Console, notes: list[str]):
    """The main job's model: the bundled `tiny` if it loads, else the ideal model (with a note)."""
    from parallelbench.runner.spec import DEFAULT_MODEL

    try:
        return DEFAULT_MODEL, _load(DEFAULT_MODEL, spec.model_options)
    except Exception as exc:  # noqa: BLE001 - any failure means: fall back
        reason = " ".join(str(exc).split()) or type(exc).__name__
        note = f"the bundled model '{DEFAULT_MODEL}' is not available ({reason}); using the '{FALLBACK_MODEL}' model"
        notes.append(note)
        console.print(f"[yellow]note:[/yellow] {escape(note)}", soft_wrap=True)
        check_model(FALLBACK_MODEL)
        return FALLBACK_MODEL, _load(FALLBACK_MODEL, {})


class _Sessions:
    """Opens one executor session per model (local: the loaded model; ray: actors)."""

    def __init__(self, spec: RunSpec, console: Console):
        self.spec = spec
        self.console = console
        self.owns_ray = False
        self.pool = None
        self.workers = None  # the local executor's worker processes (runner.pool), made when first needed
        self.first = None  # the first model, loaded before the database was opened
        if spec.executor == "ray":
            from parallelbench.runner.ray_executor import init_ray

            self.owns_ray = init_ray(workers=self.ray_workers(), address=spec.ray_address)

    def ray_workers(self) -> int:
        from parallelbench.runner.resources import usable_cores

        return self.spec.workers or usable_cores()

    def note(self, text: str) -> None:
        self.console.print(f"[yellow]note:[/yellow] {escape(text)}", soft_wrap=True, highlight=False)

    def local_pool(self, count: int, devices: list[str] | None):
        """Worker processes for the local executor, reused by each model that wants the same ones."""
        from parallelbench.runner.pool import WorkerPool

        if self.workers is not None and (self.workers.size, self.workers.devices) == (count, devices) \
                and len(self.workers.handles) == count:
            return self.workers
        if self.workers is not None:
            self.workers.shutdown(gracefully=True)
        self.workers = None
        self.workers = WorkerPool(count, threads=self.spec.threads, devices=devices, notify=self.note)
        return self.workers

    def options(self, model_spec: str) -> dict[str, Any]:
        """The loader options this model gets (none for the main job's fallback model)."""
        fallback = self.spec.models is None and model_spec == FALLBACK_MODEL
        return {} if fallback else self.spec.model_options

    def open(self, model_spec: str, loaded=None):
        if self.spec.executor == "ray":
            from parallelbench.runner.ray_executor import RayPool

            if self.pool is None:
                self.pool = RayPool(workers=self.ray_workers(), address=self.spec.ray_address,
                                    gpus_per_worker=self.spec.gpus_per_worker, threads_per_worker=self.spec.threads)
            try:
                return self.pool.load(model_spec, self.options(model_spec))
            except RuntimeError as exc:
                raise ModelLoadError(str(exc)) from None
        from parallelbench.runner.local import LocalSession

        model = loaded if loaded is not None else _load(model_spec, self.spec.model_options)
        return LocalSession(model, model_spec, options=self.options(model_spec), workers=self.spec.workers,
                            pools=self.local_pool, notify=self.note)

    def close(self) -> None:
        if self.workers is not None:
            self.workers.shutdown(gracefully=True)
            self.workers = None
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None
        if self.owns_ray:
            from parallelbench.runner.ray_executor import shutdown_ray

            shutdown_ray()
            self.owns_ray = False


def _skip(result: JobResult, console: Console, model: str, task: str, reason: str) -> None:
    result.skipped.append((model, task, reason))
    console.print(f"[yellow]skipped {escape(task)} for {escape(model)}:[/yellow] {escape(reason)}", soft_wrap=True)


def run_job(
    spec: RunSpec,
    console: Console | None = None,
    *,
    show_progress: bool = True,
    on_unit: Callable[[int], None] | None = None,
) -> JobResult:
    """Run a spec to completion (or until killed: rerun to resume). Raises SpecError before any work."""
    console = console or Console()
    t0 = time.perf_counter()
    plan: Plan = spec.plan()
    if spec.executor == "local":
        import torch

        torch.set_num_threads(spec.threads)
    notes: list[str] = []

    models = list(plan.models)
    first_loaded = None
    if spec.models is None:
        name, first_loaded = _default_model(spec, console, notes)
        models = [name]
        covered = getattr(first_loaded, "tasks", None)
        if spec.tasks is None and covered:
            spec.tasks = list(covered)
            plan = spec.plan()
            plan.models = models
    elif spec.executor == "local":
        first_loaded = _load(models[0], spec.model_options)
    _check_strategies(plan, first_loaded, models[0])

    sessions = _Sessions(spec, console)
    sessions.first, first_loaded = first_loaded, None  # held there only, so worker processes can free it
    result = JobResult(db=Path(spec.db), models=list(models), notes=notes)
    holder: list[ResultsStore] = []
    try:
        _run_models(spec, plan, models, sessions, result, console, show_progress, on_unit, holder)
    except KeyboardInterrupt:
        raise RunInterrupted(result) from None
    finally:
        sessions.close()
        for store in holder:
            store.close(discard_empty=True)  # a run that saved nothing leaves no empty file
    result.wall_time = time.perf_counter() - t0
    return result


def _run_models(spec, plan, models, sessions, result, console, show_progress, on_unit, holder) -> None:
    """The model loop of `run_job`; the store it opens goes into `holder` so the caller closes it."""
    store = None
    samples_cache: dict[str, list] = {}
    prov = Provenance(spec.scoring)
    names: dict[str, str] = {}  # row name -> spec, to refuse two models of one run under one name
    with RunProgress(console, enabled=show_progress) as progress:
        for i, model_spec in enumerate(models):
            session = sessions.open(model_spec, sessions.first if i == 0 else None)
            sessions.first = None
            try:
                name = row_model_name(model_spec, getattr(session, "model_name", None))
                if names.setdefault(name, model_spec) != model_spec:
                    raise ModelLoadError(f"models {names[name]!r} and {model_spec!r} both report the name {name!r}; "
                                         "give each model a name of its own")
                result.models[i] = name
                if store is None:
                    store = ResultsStore(spec.db)
                    holder.append(store)
                probe = getattr(session, "model", None)
                if probe is None and model_spec == FALLBACK_MODEL:
                    probe = _load(FALLBACK_MODEL, {})  # cheap: lets a Ray run skip up front too
                # what the model waits for (an API request), in this process or relayed from Ray workers
                progress.watch(getattr(session, "waiting", None) or getattr(probe, "waiting", None))
                skip = unsupported_tasks(plan, probe, samples_cache)
                probe = None
                for task_id, reason in skip.items():
                    _skip(result, console, name, task_id, reason)
                identity = model_identity(model_spec, getattr(session, "model_versions", {}),
                                          sessions.options(model_spec), prov)
                todo = plan_units(plan, model_spec, session.kind, store.finished(name), samples_cache, set(skip),
                                  provenance=prov, identity=identity, model_name=name, force=spec.force)
                _print_notes(prov, result, console)
                if todo.promote:
                    store.promote(todo.promote)
                if todo.rescore:
                    rows = rescore_rows(todo.rescore, store.rows_by_id([r.row_id for r in todo.rescore]), spec.scoring)
                    result.rows_rescored += store.write(rows)
                result.rows_skipped += todo.skipped
                progress.start_model(name, sum(len(u.samples) for u in todo.units), todo.skipped, len(todo.rescore))
                reported = set(skip)
                try:
                    for unit, rows in session.run(todo.units):
                        _save(store, spec, result, progress, unit, rows)
                        for task_id, reason in getattr(session, "skipped", {}).items():
                            if task_id not in reported:
                                reported.add(task_id)
                                _skip(result, console, name, task_id, reason)
                        if on_unit is not None:
                            on_unit(len(rows))
                except BaseException:
                    _save_finished(store, spec, result, progress, session)
                    raise
                for lost in getattr(session, "lost", []):
                    result.lost.append(describe_unit(lost.unit))
                    result.lost_rows += len(lost.unit.samples)
                for unit in getattr(session, "not_run", []):
                    result.not_run += 1
                    result.not_run_rows += len(unit.samples)
                result.pairs_run += sum(1 for t in plan.tasks if t.id not in reported)
            finally:
                progress.watch(None)
                session.close()


def _save(store: ResultsStore, spec: RunSpec, result: JobResult, progress: RunProgress, unit, rows) -> None:
    """Write one finished unit (one transaction) and count it, both or neither (`interrupts.held`)."""
    with held():
        written = store.write(rows, supersede=spec.force)
        failed = [r for r in rows if r.get("status") == "failed"]
        result.attempted += len(rows)
        result.failed += len(failed)
        for r in failed:
            reason = str(r.get("error") or "unknown").split(":", 1)[0].strip() or "unknown"
            result.failure_reasons[reason] = result.failure_reasons.get(reason, 0) + 1
        result.rows_added += max(0, written - len(failed))
    progress.advance(rows, f"{unit.config.label} · {unit.task}")


def _save_finished(store: ResultsStore, spec: RunSpec, result: JobResult, progress: RunProgress, session) -> None:
    """On Ctrl-C, SIGTERM or an error: save the units worker processes finished but the run had not
    written yet (best effort: the exception that stopped the run is the one the user sees)."""
    try:
        for unit, rows in getattr(session, "finished", list)():
            _save(store, spec, result, progress, unit, rows)
    except Exception:  # noqa: BLE001 - e.g. the disk that stopped the run is still full
        pass


def row_model_name(spec: str, reported: Any) -> str:
    """The `model` column of a model's rows: the spec, except that a `py:` factory's model is stored
    under the name it reports (`BenchModel.name`); the spec is kept in each row's `versions`."""
    if not spec.startswith("py:") or not isinstance(reported, str) or not reported.strip() or reported == spec:
        return spec
    name = " ".join(reported.split())
    from parallelbench.models.registry import ModelSpecError, check_spec

    try:
        check_spec(name)
        builtin = not name.startswith("py:")
    except ModelSpecError:
        builtin = False
    if builtin or name.startswith("py:"):
        raise ModelLoadError(f"model {spec!r} reports the name {name!r}, which is another model spec; give it a "
                             "name of its own, e.g. DiffusionTextModel(net, tokenizer, name='mymodel')")
    return name


def model_identity(spec: str, versions: Any, options: dict[str, Any], prov: Provenance) -> dict[str, Any]:
    """What identifies a model in a row's decoding provenance: its spec, `versions()`, the options
    that can change outputs and, for a `py:` factory, the source of its module."""
    from parallelbench.models.registry import ModelSpecError, output_options, python_factory

    factory = None
    if spec.startswith("py:"):
        try:
            factory = python_factory(spec[3:])
        except ModelSpecError:
            factory = None
    return {"spec": spec, "versions": dict(versions or {}), "options": output_options(spec, options),
            "factory": prov.factory_code(spec, factory)}


def _print_notes(prov: Provenance, result: JobResult, console: Console) -> None:
    for note in prov.notes:
        if note not in result.notes:
            result.notes.append(note)
            console.print(f"[yellow]note:[/yellow] {escape(note)}", soft_wrap=True, highlight=False)


def _check_strategies(plan: Plan, model: Any, model_spec: str = "") -> None:
    """A model that accepts only some strategies (Medusa heads) refuses the others before any work,
    and so does one that lacks a capability a strategy's options need (`Strategy.check_model`):
    one line naming the model, the task and the config."""
    check = getattr(model, "check_strategy", None)
    net = getattr(model, "net", model)  # a diffusion text model decodes with its network
    for task_id, configs in plan.configs.items():
        for config in configs:
            if model is not None and config.strategy not in MEDUSA_MODES and check is None:
                try:
                    config.build().check_model(net)
                except ValueError as exc:
                    raise SpecError(f"model {model_spec!r} cannot decode task {task_id} with {config.label}: "
                                    f"{' '.join(str(exc).split())}") from None
            if check is None and config.strategy not in MEDUSA_MODES:
                continue
            try:
                strategy = config.build()
                if check is None:
                    strategy.begin({"model": model})  # a Medusa mode on a model without heads: its one line
                else:
                    check(strategy)
            except ValueError as exc:
                raise SpecError(str(exc)) from None


__all__ = ["JobResult", "ModelLoadError", "RunInterrupted", "SpecError", "run_job"]
