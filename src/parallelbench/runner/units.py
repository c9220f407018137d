"""Work units: the batches a run is cut into, and how one is decoded, scored and recorded.

Both executors run the same units through `execute_unit`, which is what makes a Ray
run and a local run produce the same rows. A unit is a fixed chunk of one task's
sample list for one (model, config, seed): chunks are cut from the full list, never
from what is left to do, and each chunk decodes with a seed derived from its own
identity. So a unit's outputs do not depend on which executor, worker or process
ran it, or on what finished before; a unit is skipped only when all its rows exist
with this run's provenance (`runner.provenance`), or need only scoring again (a partly
present unit, e.g. after changing --batch-size, runs whole and the database keeps the
rows it already had).
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
from parallelbench.runner.provenance import Provenance, decoding_part, join
from parallelbench.runner.spec import AUTOREGRESSIVE_CONFIG, Config, Plan
from parallelbench.runner.store import canonical_json

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
    provenances: list[str] = field(default_factory=list)  # per sample: what its row's provenance is
    row_versions: list[dict[str, Any]] = field(default_factory=list)  # per sample: provenance details for `versions`
    model_name: str = ""  # the `model` column of its rows (a py: factory's own name), default the spec
    scoring: str = "default"  # the scoring mode
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

    The ideal model decodes the task's canvas like the others (an answer longer than it gets
    a canvas rounded up to the block length), so it gets every config too.
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


class UserModelCrash(RuntimeError):
    """A `py:` model of the user's raised something other than ModelInputError while decoding: one
    line naming the model, the task, the config and where in the user's code it raised."""


def user_model_crash(spec: str, task: str, config: str, exc: BaseException) -> UserModelCrash:
    import os
    import traceback

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the parallelbench package
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith(here) and "site-packages" not in f.filename]
    where = f" ({os.path.basename(frames[-1].filename)}:{frames[-1].lineno} in {frames[-1].name})" if frames else ""
    reason = " ".join(str(exc).split()) or "no message"
    return UserModelCrash(
        f"model {spec!r} raised {type(exc).__name__} while decoding task {task} with {config}: {reason}{where}; "
        "the rows finished before it are saved (re-run to resume); for an input your model cannot take raise "
        "parallelbench.models.base.ModelInputError, and `run` skips that task with one line instead")


def no_answer_set_errors() -> tuple[type[BaseException], ...]:
    """The exceptions a model raises for a sample it cannot decode: the ideal model's missing
    answer set, and any model's input that does not fit it (too long, unknown words, a block
    length its blocks do not divide)."""
    from parallelbench.models.protocols import ModelInputError

    try:
        from parallelbench.models.ideal.bench import NoAnswerSetError
    except ImportError:  # pragma: no cover - the ideal model ships with the package
        return (ModelInputError,)
    return (NoAnswerSetError, ModelInputError)


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


@dataclass
class Rescore:
    """A stored row whose decoding still matches, scored again under the run's scorer version or mode."""

    row_id: int
    sample: "Sample"
    provenance: str
    row_versions: dict[str, Any]


@dataclass
class UnitPlan:
    """What a run still has to do for one model: units to decode, rows to rescore, rows to make current."""

    units: list[WorkUnit] = field(default_factory=list)
    skipped: int = 0  # rows already there (reused as they are)
    rescore: list[Rescore] = field(default_factory=list)
    promote: list[int] = field(default_factory=list)  # reused rows that are not their key's current version


def make_units(
    plan: Plan,
    model: str,
    model_kind: str,
    done: set[tuple],
    samples_cache: dict[str, list["Sample"]] | None = None,
    skip_tasks: set[str] | frozenset[str] = frozenset(),
) -> tuple[list[WorkUnit], int]:
    """Units still to run for one model, keyed on (strategy, params, task, sample_id, seed) alone
    (no provenance: every stored key counts as done), and the number of rows already done."""
    out = plan_units(plan, model, model_kind, {k: [(0, "")] for k in done}, samples_cache, skip_tasks,
                     provenance=None)
    return out.units, out.skipped


def plan_units(
    plan: Plan,
    model: str,
    model_kind: str,
    finished: dict[tuple, list[tuple[int, str]]],
    samples_cache: dict[str, list["Sample"]] | None = None,
    skip_tasks: set[str] | frozenset[str] = frozenset(),
    *,
    provenance: Provenance | None,
    identity: dict[str, Any] | None = None,
    model_name: str = "",
    force: bool = False,
) -> UnitPlan:
    """Units to decode (grouped by task, then config), rows to rescore and rows to promote.

    `finished` maps each stored key to its [(id, provenance), ...], oldest first. With a
    `provenance`, a stored row is reused only when its provenance equals this run's; when only
    its scoring half differs it is rescored without decoding; otherwise its unit decodes again.
    `force` decodes every unit again. Without a `provenance`, any stored key counts as done.
    """
    from parallelbench.tasks import task_source

    cache = samples_cache if samples_cache is not None else {}
    out = UnitPlan()
    bs = plan.spec.batch_size
    identity = identity or {}
    scoring = plan.spec.scoring
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
            prefix = ""
            common: dict[str, Any] = {}
            if provenance is not None:
                code = provenance.strategy_code(config.strategy)
                prefix = provenance.decoding_prefix(identity, config.strategy, config.params, code, version)
                common = {"model_spec": model, "model_options": identity.get("options", {}),
                          "code": {"strategy": code, **({"factory": identity["factory"]} if identity.get("factory") else {})},
                          "scoring": scoring}
            for seed in plan.spec.seeds:
                for start in range(0, len(samples), bs):
                    chunk = samples[start : start + bs]
                    keys = [(config.strategy, config.params, task.id, s.id, seed) for s in chunk]
                    provs: list[str] = []
                    details: list[dict[str, Any]] = []
                    if provenance is not None:
                        for s in chunk:
                            sample_fp = provenance.sample(s)
                            decoding = provenance.decoding(prefix, sample_fp)
                            provs.append(join(decoding, provenance.scoring(s.scorer)))
                            details.append({**common, "sample": sample_fp,
                                            "scorer_version": provenance.scorer_version(s.scorer)})
                    status = [_status(finished.get(k), provs[i] if provs else None) for i, k in enumerate(keys)]
                    if not force and all(st[0] != "decode" for st in status):
                        for i in range(len(chunk)):
                            _settle(out, status[i], chunk[i], provs[i] if provs else "", details[i] if details else {})
                        continue
                    anchor = ""
                    if model_kind in PER_SAMPLE_KINDS and provenance is not None and not force:
                        # one request per sample: send only what is missing (a re-run retries just the failed)
                        missing = [i for i, st in enumerate(status) if st[0] == "decode"]
                        for i in range(len(chunk)):
                            if status[i][0] != "decode":
                                _settle(out, status[i], chunk[i], provs[i], details[i])
                        anchor = chunk[0].id
                        chunk, keys = [chunk[i] for i in missing], [keys[i] for i in missing]
                        provs, details = [provs[i] for i in missing], [details[i] for i in missing]
                    out.units.append(
                        WorkUnit(model, config, task.id, task.category, task.max_new_tokens, seed, chunk, version, keys,
                                 anchor, provs, details, model_name, scoring, task_source(task.id))
                    )
    return out


def _settle(out: UnitPlan, status: tuple[str, int, bool], sample: "Sample", prov: str,
            detail: dict[str, Any]) -> None:
    """Book a row that needs no decoding: reused as it is (made current if an older version is),
    or its stored output scored again."""
    what, row_id, current = status
    if what == "reuse":
        out.skipped += 1
        if not current:
            out.promote.append(row_id)
    else:
        out.rescore.append(Rescore(row_id, sample, prov, detail))


def _status(stored: list[tuple[int, str]] | None, wanted: str | None) -> tuple[str, int, bool]:
    """("reuse" | "rescore" | "decode", stored row id, whether that row is its key's current version)."""
    if not stored:
        return "decode", 0, False
    if wanted is None:  # keyed without provenance: any finished row will do
        return "reuse", stored[-1][0], True
    for i in range(len(stored) - 1, -1, -1):
        if stored[i][1] == wanted:
            return "reuse", stored[i][0], i == len(stored) - 1
    head = decoding_part(wanted)
    for i in range(len(stored) - 1, -1, -1):
        if decoding_part(stored[i][1]) == head:
            return "rescore", stored[i][0], i == len(stored) - 1
    return "decode", 0, False


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


def _score_all(samples: Sequence["Sample"], outputs: Sequence[str], mode: str = "default"):
    """Scores of outputs[i] against samples[i] under scoring `mode` (BERTScore batched)."""
    from parallelbench.scoring import score_many

    return list(score_many(list(samples), list(outputs), mode=mode))


def _score_fields(sc: Any) -> dict[str, Any]:
    return {"score": float(sc.score),
            "scores": canonical_json({k: float(v) for k, v in sc.components.items()})}


def repair_columns(gen: "Generation", rewrites: bool) -> dict[str, Any]:
    """The repair columns of a decoded row but `unmask_score` (docs/report.md, "Does editing repair
    parallel decoding?"): from the decode's repair record when it kept one (`unmask_output` None
    when the answer at unmasking is the final one); zero counts for a strategy that never changes
    a written token; unknown (None) for an editing strategy whose decode kept no record."""
    extra = gen.extra or {}
    if "unmask_text" in extra:
        unmask = str(extra["unmask_text"])
        return {"edits": int(extra.get("edits", 0)), "inserts": int(extra.get("inserts", 0)),
                "deletes": int(extra.get("deletes", 0)), "changed_tokens": int(extra.get("changed_tokens", 0)),
                "unmask_output": None if unmask == gen.text else unmask, "_unmask_known": True}
    if rewrites:
        edits = extra.get("edits")
        return {"edits": None if edits is None else int(edits), "inserts": None, "deletes": None,
                "changed_tokens": None, "unmask_output": None, "_unmask_known": False}
    return {"edits": 0, "inserts": 0, "deletes": 0, "changed_tokens": 0, "unmask_output": None,
            "_unmask_known": True}


def _unmask_scores(samples: Sequence["Sample"], unmask: Sequence[str | None],
                   known: Sequence[bool], scores: Sequence[float], mode: str) -> list[float | None]:
    """Each row's `unmask_score`: its score when the answer at unmasking is the final one, the
    score of that answer when it differs (scored in one batch), None when unknown."""
    todo = [i for i, (u, k) in enumerate(zip(unmask, known)) if k and u is not None]
    scored = _score_all([samples[i] for i in todo], [unmask[i] or "" for i in todo], mode) if todo else []
    out: list[float | None] = [float(s) if k else None for s, k in zip(scores, known)]
    for i, sc in zip(todo, scored):
        out[i] = float(sc.score)
    return out


def rescore_rows(items: Sequence[Rescore], stored: dict[int, dict[str, Any]], mode: str) -> list[dict[str, Any]]:
    """New rows for stored outputs whose decoding still matches: the same output and decoding
    statistics, scored now (scorer version and mode of this run), with the new provenance. The
    answer at unmasking is scored again too (unknown stays unknown)."""
    usable = [it for it in items if it.row_id in stored]
    if not usable:
        return []
    scored = _score_all([it.sample for it in usable], [stored[it.row_id]["output"] or "" for it in usable], mode)
    unmask = _unmask_scores([it.sample for it in usable], [stored[it.row_id].get("unmask_output") for it in usable],
                            [stored[it.row_id].get("unmask_score") is not None for it in usable],
                            [sc.score for sc in scored], mode)
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    rows = []
    for it, sc, unmask_score in zip(usable, scored, unmask):
        old = stored[it.row_id]
        try:
            versions = json.loads(old.get("versions") or "{}")
        except (TypeError, ValueError):
            versions = {}
        versions = versions if isinstance(versions, dict) else {}
        versions.update({**it.row_versions, "scorer": dict(sc.meta), "rescored_from": old.get("provenance")})
        rows.append({**old, **_score_fields(sc), "unmask_score": unmask_score, "versions": canonical_json(versions),
                     "created_at": now, "status": "ok", "error": None, "provenance": it.provenance})
    return rows


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
        except Exception as exc:  # noqa: BLE001 - the user's own code: one line, not its traceback
            if not self.model_spec.startswith("py:"):
                raise
            raise user_model_crash(self.model_spec, unit.task, unit.config.label, exc) from None
        elapsed = time.perf_counter() - t0
        if len(gens) != len(unit.samples):
            raise RuntimeError(
                f"model {unit.model} returned {len(gens)} generations for {len(unit.samples)} samples"
            )
        ok = [i for i, g in enumerate(gens) if not getattr(g, "error", None)]
        scored = _score_all([unit.samples[i] for i in ok], [gens[i].text for i in ok], unit.scoring) if ok else []
        scores: list[Any] = [None] * len(gens)
        for i, sc in zip(ok, scored):
            scores[i] = sc
        rewrites = bool(getattr(strategy, "rewrites", False))
        repairs = [repair_columns(g, rewrites) for g in gens]
        unmask_scores: list[float | None] = [None] * len(gens)
        for i, value in zip(ok, _unmask_scores([unit.samples[i] for i in ok], [repairs[i]["unmask_output"] for i in ok],
                                               [repairs[i]["_unmask_known"] for i in ok],
                                               [sc.score for sc in scored], unit.scoring)):
            unmask_scores[i] = value
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        share = elapsed / len(gens)
        name = unit.model_name or unit.model
        provs = unit.provenances or [""] * len(gens)
        details = unit.row_versions or [{}] * len(gens)
        rows = []
        for sample, gen, sc, prov, detail, repair, unmask_score in zip(unit.samples, gens, scores, provs, details,
                                                                       repairs, unmask_scores):
            if sc is None:  # failed: stored with its reason, not scored, retried by a re-run
                rows.append(self._failed_row(unit, sample, gen, now, prov, detail))
                continue
            versions = {**self.versions, **detail, "data": unit.data_version, "scorer": dict(sc.meta)}
            rows.append(
                {
                    "model": name,
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
                    **_score_fields(sc),
                    "nfe": int(gen.nfe),
                    "num_tokens": int(gen.num_tokens),
                    "tps": (gen.num_tokens / gen.nfe) if gen.nfe else 0.0,
                    "tokens_per_step": json.dumps([int(x) for x in gen.tokens_per_step]),
                    "order": json.dumps([int(x) for x in gen.order]),
                    "pad_order": (gen.extra or {}).get("pad_order"),  # not stored: feeds the order metrics (store.py)
                    "token_texts": json.dumps(list(gen.token_texts), ensure_ascii=False),
                    "wall_time": float(gen.wall_time) if gen.wall_time else share,
                    "versions": canonical_json(versions),
                    "created_at": now,
                    "unmask_score": unmask_score,
                    **{k: v for k, v in repair.items() if not k.startswith("_")},
                    "status": "ok",
                    "provenance": prov,
                }
            )
        return rows

    def _failed_row(self, unit: WorkUnit, sample: "Sample", gen: "Generation", now: str, prov: str,
                    detail: dict[str, Any]) -> dict[str, Any]:
        reason = " ".join(str(gen.error).split())[:500]
        return {
            "model": unit.model_name or unit.model, "model_kind": self.kind, "strategy": unit.config.strategy,
            "strategy_kind": unit.config.kind, "params": unit.config.params, "config": unit.config.label,
            "task": unit.task, "category": unit.category, "sample_id": sample.id, "seed": unit.seed,
            "output": "", "score": None, "scores": "{}", "nfe": None, "num_tokens": None, "tps": None,
            "tokens_per_step": "[]", "order": "[]", "token_texts": "[]",
            "wall_time": float(gen.wall_time or 0.0),
            "versions": canonical_json({**self.versions, **detail, "data": unit.data_version}),
            "created_at": now, "status": "failed", "error": reason, "provenance": prov,
        }
