"""Work units: the batches a run is cut into, and how one is decoded, scored and recorded.

Both executors run the same units through `execute_unit`, which is what makes a Ray
run and a local run produce the same rows. A unit is a fixed chunk of one task's
sample list for one (model, config, seed): chunks are cut from the full list, never
from what is left to do, and each chunk decodes with a seed derived from its own
identity. So a unit's outputs do not depend on which executor, worker or process
ran it, or on what finished before; a unit is skipped only when all its rows exist
(a partly present unit, e.g. after changing --batch-size, runs whole and the database
keeps the rows it already had).
"""

from __future__ import annotations

import hashlib
import json
import platform
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Sequence

from parallelbench import __version__
from parallelbench.runner.spec import AUTOREGRESSIVE_CONFIG, Config, Plan
from parallelbench.runner.store import canonical_json, provenance

if TYPE_CHECKING:
    from parallelbench.models.base import BenchModel, Generation
    from parallelbench.tasks.base import Sample, Task

NON_DIFFUSION_KINDS = ("autoregressive", "api")
# Models that decode each sample on its own (no batch effects): a partly done unit sends only its missing samples.
PER_SAMPLE_KINDS = ("api",)


@dataclass
class WorkUnit:
    """One batch: samples of one task under one strategy config, model and seed."""

    model: str  # the spec string (the database key)
    config: Config
    task: str
    category: str
    max_new_tokens: int
    seed: int
    samples: list["Sample"]
    data_version: str  # identifies the task's generator settings
    keys: list[tuple] = field(default_factory=list)  # (strategy, params, task, sample_id, seed)
    anchor: str = ""  # the first sample id of the full chunk, when only its missing samples are left
    task_source: str | None = None  # `module:NAME` of a user task: a Ray worker loads it (its scorers too)


    @property
    def decode_seed(self) -> int:
        """Derived from the unit's identity only, so any executor decodes it identically."""
        ident = "|".join(
            [self.model, self.config.strategy, self.config.params, self.task, self.anchor or self.samples[0].id,
             str(self.seed)]
        )
        return int.from_bytes(hashlib.sha256(ident.encode()).digest()[:4], "big") & 0x7FFFFFFF


def task_data_version(task: "Task") -> str:
    """A short hash of the generator settings: same value, same samples.

    A task from a user module (`--tasks module:NAME`) also hashes that module's source, so
    editing the task decodes it again."""
    from parallelbench.tasks import task_source
    from parallelbench.tasks.user import source_fingerprint

    p = task.params
    source = task_source(task.id)
    desc = canonical_json(
        {
            **({"source": source_fingerprint(source)} if source else {}),
            "task": task.id,
            "n": [p.n_min, p.n_max],
            "per_length": p.samples_per_length,
            "num": p.num_samples,
            "seed": p.seed,
            "extra": {k: repr(v) for k, v in sorted(p.extra.items())},
            "max_new_tokens": task.max_new_tokens,
            "template": hashlib.sha256(task.prompt_template.encode()).hexdigest()[:12],
        }
    )
    return hashlib.sha256(desc.encode()).hexdigest()[:12]


def configs_for(plan: Plan, task_id: str, model_kind: str) -> list[Config]:
    """Autoregressive and API models run once per task, with no strategy; others run every config.

    The ideal model handles semi-AR block lengths itself (it pads each answer region
    with EOS up to a multiple of the block), so it gets every config too.
    """
    if model_kind in NON_DIFFUSION_KINDS:
        return [AUTOREGRESSIVE_CONFIG]
    return plan.configs[task_id]


class UnsupportedTask(Exception):
    """A model cannot decode a task's samples (e.g. the ideal model on Text Writing)."""

    def __init__(self, task: str, reason: str):
        super().__init__(reason)
        self.task = task
        self.reason = reason


def no_answer_set_errors() -> tuple[type[BaseException], ...]:
    """The exception a model raises for a sample it cannot decode (the ideal model's)."""
    try:
        from parallelbench.models.ideal.bench import NoAnswerSetError
    except ImportError:  # pragma: no cover - the ideal model ships with the package
        return ()
    return (NoAnswerSetError,)


def unsupported_tasks(
    plan: Plan, model: Any, samples_cache: dict[str, list["Sample"]] | None = None
) -> dict[str, str]:
    """Tasks the model says it cannot decode (via its optional `supports(sample)`), with a reason.

    Every sample the run would decode is checked: one it cannot decode would stop its batch.
    """
    supports = getattr(model, "supports", None)
    if supports is None:
        return {}
    cache = samples_cache if samples_cache is not None else {}
    out: dict[str, str] = {}
    for task in plan.tasks:
        if task.id not in cache:
            cache[task.id] = task.samples(plan.limit)
        for sample in cache[task.id]:
            if not supports(sample):
                out[task.id] = _reason(sample, model)
                break
    return out


def _reason(sample: "Sample", model: Any = None) -> str:
    explain = getattr(model, "unsupported_reason", None)
    if callable(explain):
        reason = explain(sample)
        if reason:
            return str(reason)
    try:
        from parallelbench.models.ideal.bench import no_answer_set_reason

        return no_answer_set_reason(sample)
    except Exception:  # noqa: BLE001 - the reason is only a hint
        return f"the model cannot decode sample {sample.id}"


def make_units(
    plan: Plan,
    model: str,
    model_kind: str,
    done: set[tuple],
    samples_cache: dict[str, list["Sample"]] | None = None,
    skip_tasks: set[str] | frozenset[str] = frozenset(),
    model_versions: dict[str, str] | None = None,
) -> tuple[list[WorkUnit], int]:
    """Units still to run for one model (grouped by config, then task) and the number of rows already done.

    With `model_versions`, `done` holds (strategy, params, task, sample_id, seed, provenance)
    and a row counts as done only when its provenance matches this run's (see store.provenance).
    """
    from parallelbench.tasks import task_source

    cache = samples_cache if samples_cache is not None else {}
    units: list[WorkUnit] = []
    skipped = 0
    bs = plan.spec.batch_size
    for task in plan.tasks:
        if task.id in skip_tasks:
            continue
        if task.id not in cache:
            cache[task.id] = task.samples(plan.limit)
        samples = cache[task.id]
        if not samples:
            continue
        version = task_data_version(task)
        for config in configs_for(plan, task.id, model_kind):
            for seed in plan.spec.seeds:
                for start in range(0, len(samples), bs):
                    chunk = samples[start : start + bs]
                    keys = [(config.strategy, config.params, task.id, s.id, seed) for s in chunk]
                    if model_versions is not None:
                        prov = provenance(model, model_versions, version, config.strategy, config.params)
                        found = all(k + (prov,) in done for k in keys)
                    else:
                        found = all(k in done for k in keys)
                    if found:
                        skipped += len(keys)
                        continue
                    anchor = ""
                    if model_kind in PER_SAMPLE_KINDS and model_versions is not None:
                        # one request per sample: send only what is missing (a re-run retries just the failed)
                        missing = [i for i, k in enumerate(keys) if k + (prov,) not in done]
                        skipped += len(keys) - len(missing)
                        anchor = chunk[0].id
                        chunk, keys = [chunk[i] for i in missing], [keys[i] for i in missing]
                    units.append(
                        WorkUnit(model, config, task.id, task.category, task.max_new_tokens, seed, chunk, version, keys,
                                 anchor, task_source(task.id))
                    )
    return units, skipped


def base_versions(model: "BenchModel") -> dict[str, Any]:
    """Versions recorded with every row: code, runtime and model (data and scorer are per row)."""
    out: dict[str, Any] = {"parallelbench": __version__, "python": platform.python_version()}
    try:
        import torch

        out["torch"] = torch.__version__
    except ImportError:  # pragma: no cover - torch is a dependency
        pass
    try:
        out["model"] = {str(k): str(v) for k, v in (model.versions() or {}).items()}
    except Exception as exc:  # noqa: BLE001 - a model without versions still runs
        out["model"] = {"error": type(exc).__name__}
    return out


def _score_all(samples: Sequence["Sample"], outputs: Sequence[str]):
    import parallelbench.scoring as scoring

    many = getattr(scoring, "score_many", None)
    if many is not None:
        return list(many(list(samples), list(outputs)))
    return [scoring.score(s, o) for s, o in zip(samples, outputs)]


class UnitRunner:
    """Runs units on one loaded model; keeps built strategies for reuse."""

    def __init__(self, model: "BenchModel", model_spec: str):
        self.model = model
        self.model_spec = model_spec
        self.kind = str(getattr(model, "kind", "diffusion"))
        self.versions = base_versions(model)
        self._strategies: dict[tuple[str, str], Any] = {}

    def strategy(self, config: Config):
        key = (config.strategy, config.kwargs)
        if key not in self._strategies:
            self._strategies[key] = config.build()
        return self._strategies[key]

    def run(self, unit: WorkUnit) -> list[dict[str, Any]]:
        """Decode, score and turn one unit into database rows."""
        if unit.task_source:  # a Ray worker has not imported the user's task module (and its scorers) yet
            from parallelbench.tasks import user_tasks

            user_tasks(unit.task_source)
        strategy = self.strategy(unit.config)
        t0 = time.perf_counter()
        try:
            gens: list[Generation] = list(
                self.model.generate(unit.samples, strategy, max_new_tokens=unit.max_new_tokens, seed=unit.decode_seed)
            )
        except no_answer_set_errors() as exc:
            raise UnsupportedTask(unit.task, " ".join(str(exc).split())) from None
        elapsed = time.perf_counter() - t0
        if len(gens) != len(unit.samples):
            raise RuntimeError(
                f"model {unit.model} returned {len(gens)} generations for {len(unit.samples)} samples"
            )
        ok = [i for i, g in enumerate(gens) if not getattr(g, "error", None)]
        scored = _score_all([unit.samples[i] for i in ok], [gens[i].text for i in ok]) if ok else []
        scores: list[Any] = [None] * len(gens)
        for i, sc in zip(ok, scored):
            scores[i] = sc
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        share = elapsed / len(gens)
        prov = provenance(unit.model, self.versions.get("model"), unit.data_version, unit.config.strategy,
                          unit.config.params)
        rows = []
        for sample, gen, sc in zip(unit.samples, gens, scores):
            if sc is None:  # failed: stored with its reason, not scored, retried by a re-run
                rows.append(self._failed_row(unit, sample, gen, now, prov))
                continue
            versions = {**self.versions, "data": unit.data_version, "scorer": dict(sc.meta)}
            rows.append(
                {
                    "model": unit.model,
                    "model_kind": self.kind,
                    "strategy": unit.config.strategy,
                    "strategy_kind": unit.config.kind,
                    "params": unit.config.params,
                    "config": unit.config.label,
                    "task": unit.task,
                    "category": unit.category,
                    "sample_id": sample.id,
                    "seed": unit.seed,
                    "output": gen.text,
                    "score": float(sc.score),
                    "scores": canonical_json({k: float(v) for k, v in sc.components.items()}),
                    "nfe": int(gen.nfe),
                    "num_tokens": int(gen.num_tokens),
                    "tps": (gen.num_tokens / gen.nfe) if gen.nfe else 0.0,
                    "tokens_per_step": json.dumps([int(x) for x in gen.tokens_per_step]),
                    "order": json.dumps([int(x) for x in gen.order]),
                    "token_texts": json.dumps(list(gen.token_texts), ensure_ascii=False),
                    "wall_time": float(gen.wall_time) if gen.wall_time else share,
                    "versions": canonical_json(versions),
                    "created_at": now,
                    "status": "ok",
                    "provenance": prov,
                }
            )
        return rows

    def _failed_row(self, unit: WorkUnit, sample: "Sample", gen: "Generation", now: str, prov: str) -> dict[str, Any]:
        reason = " ".join(str(gen.error).split())[:500]
        return {
            "model": unit.model, "model_kind": self.kind, "strategy": unit.config.strategy,
            "strategy_kind": unit.config.kind, "params": unit.config.params, "config": unit.config.label,
            "task": unit.task, "category": unit.category, "sample_id": sample.id, "seed": unit.seed,
            "output": "", "score": None, "scores": "{}", "nfe": None, "num_tokens": None, "tps": None,
            "tokens_per_step": "[]", "order": "[]", "token_texts": "[]",
            "wall_time": float(gen.wall_time or 0.0),
            "versions": canonical_json({**self.versions, "data": unit.data_version}),
            "created_at": now, "status": "failed", "error": reason, "provenance": prov,
        }
