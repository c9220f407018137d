"""Run specs: what to evaluate, from a YAML file or command-line flags, checked before any work.

A run is models x strategy configs x tasks x samples (``limit`` per task) x seeds.
`RunSpec.plan()` resolves and validates everything that can be checked without loading
a model (model specs, task ids, strategy names and parameters, parameter combinations
against each task's generation length) and raises `SpecError` with one line naming the
problem and the valid forms. Nothing is written anywhere until the plan exists.

Generation length: a strategy is validated against ``task.max_new_tokens`` (32 for
Waiting Line, 64 for Puzzles and Text Writing) for every model, the ideal model
included: that is the canvas a diffusion model decodes, and the ideal model is handed
the same budget (how it lays out its own answer inside it is its business).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from parallelbench.runner.store import DEFAULT_DB, canonical_json
from parallelbench.scoring.base import SCORING_MODES
from parallelbench.runner.sweeps import BASELINE_THRESHOLDS, SWEEPS, StrategyGrid, get_sweep

if TYPE_CHECKING:
    from parallelbench.tasks.base import Task

# The main job's model: the bundled `tiny` dLLM (docs/model-card.md: where it is strong and
# where it still misses its targets); if it cannot be loaded the job falls back to the exact
# ideal model with a note. `parallelbench run --model ideal` measures decoding alone.
DEFAULT_MODEL = "tiny"
FALLBACK_MODEL = "ideal"
DEFAULT_CATEGORIES = ("waiting_line", "puzzle")  # the main job: the paper's Waiting Line 10 and Puzzles
EXECUTORS = ("local", "ray")
AUTOREGRESSIVE = "autoregressive"  # the strategy name recorded for models that do not diffuse
# Flags that map to a strategy parameter, and how their values parse.
PARAM_FLAGS: dict[str, type] = {
    "k": int,
    "threshold": float,
    "factor": float,
    "block_length": int,
    "temperature": float,
}
SPEC_KEYS = {
    "model", "models", "tasks", "strategy", "strategies", "sweep", "sweeps", "baselines", "limit",
    "seed", "seeds", "batch_size", "db", "out", "executor", "workers", "ray_address", "model_options",
    "gpus_per_worker", "threads", "scoring",
}


class SpecError(ValueError):
    """A run spec that cannot run; the message is one line meant for the user."""


@dataclass(frozen=True)
class Config:
    """One strategy configuration as recorded in the database."""

    strategy: str  # the name it was built from ("confidence-topk", "my_mod:MyStrategy", "autoregressive")
    kwargs: str  # canonical JSON of the constructor keyword arguments (to rebuild it anywhere)
    params: str  # canonical JSON of `strategy.params` (the database key)
    label: str  # "confidence-topk[k=2]"
    kind: str  # "topk" | "adaptive" | "autoregressive"

    def build(self):
        """The decoding strategy object (None for autoregressive models)."""
        if self.strategy == AUTOREGRESSIVE:
            return None
        from parallelbench.decoding import build_strategy

        return build_strategy(self.strategy, **json.loads(self.kwargs))


AUTOREGRESSIVE_CONFIG = Config(AUTOREGRESSIVE, "{}", "{}", AUTOREGRESSIVE, AUTOREGRESSIVE)


@dataclass
class RunSpec:
    """Everything a run needs; `models is None` means the main job's default model."""

    models: list[str] | None = None
    tasks: list[str] | None = None
    sweeps: list[str] = field(default_factory=list)
    strategies: list[StrategyGrid] = field(default_factory=list)
    baselines: bool = False
    limit: int | None = None
    seeds: list[int] = field(default_factory=lambda: [0])
    batch_size: int = 8
    db: str = DEFAULT_DB
    out: str | None = None  # the report folder; None: beside the database (`report_out`)
    executor: str = "local"
    workers: int | None = None  # processes (local) or actors (ray); None: every usable core (runner.resources)
    ray_address: str | None = None
    gpus_per_worker: float = 0.0  # Ray: GPUs each actor reserves (1 = one actor per GPU)
    # torch CPU threads per decoding process (local run or each Ray actor). 1 by default:
    # on a busy machine more threads than free cores slow decoding down many times over.
    threads: int = 1
    model_options: dict[str, Any] = field(default_factory=dict)
    scoring: str = "default"  # one of SCORING_MODES
    force: bool = False  # recompute rows even where stored ones match (the new rows become current)
    # --k values no named strategy takes, kept for the --baselines' confidence top-k
    baseline_k: Any = None

    @property
    def report_out(self) -> str:
        """The report folder: `out`, else beside the database (`tour.db` -> `tour-out`)."""
        from parallelbench.outputs import report_folder

        return self.out or str(report_folder(self.db))

    # -- construction --------------------------------------------------------------------
    @classmethod
    def from_yaml(cls, path: str | Path) -> "RunSpec":
        import yaml

        p = Path(path)
        if not p.exists():
            raise SpecError(f"spec file {p} does not exist; pass a YAML file (see docs/runner.md)")
        try:
            data = yaml.safe_load(p.read_text()) or {}
        except yaml.YAMLError as exc:
            first = str(exc).splitlines()[0] if str(exc) else "syntax error"
            raise SpecError(f"spec file {p} is not valid YAML: {first}") from None
        if not isinstance(data, dict):
            raise SpecError(f"spec file {p} must be a mapping of keys such as models, tasks, strategies")
        return cls.from_dict(data, source=str(p))

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "spec") -> "RunSpec":
        unknown = sorted(set(data) - SPEC_KEYS)
        if unknown:
            raise SpecError(f"{source}: unknown key(s) {', '.join(unknown)}; valid keys: {', '.join(sorted(SPEC_KEYS))}")
        spec = cls()
        models = data.get("models", data.get("model"))
        if models is not None:
            spec.models = _str_list(models, "models")
        if data.get("tasks") is not None:
            spec.tasks = _str_list(data["tasks"], "tasks")
        sweeps = data.get("sweeps", data.get("sweep"))
        if sweeps is not None:
            spec.sweeps = _str_list(sweeps, "sweep")
        strategies = data.get("strategies", data.get("strategy"))
        if strategies is not None:
            spec.strategies = _parse_strategies(strategies)
        spec.baselines = bool(data.get("baselines", False))
        if data.get("limit") is not None:
            spec.limit = _int(data["limit"], "limit")
        seeds = data.get("seeds", data.get("seed"))
        if seeds is not None:
            spec.seeds = [_int(s, "seed") for s in (seeds if isinstance(seeds, list) else _split(str(seeds)))]
        for key in ("batch_size", "workers", "threads"):
            if data.get(key) is not None:
                setattr(spec, key, _int(data[key], key))
        for key in ("db", "out", "executor", "ray_address", "scoring"):
            if data.get(key) is not None:
                setattr(spec, key, str(data[key]))
        if data.get("gpus_per_worker") is not None:
            spec.gpus_per_worker = _number(data["gpus_per_worker"], "gpus_per_worker")
        if data.get("model_options") is not None:
            if not isinstance(data["model_options"], dict):
                raise SpecError("model_options must be a mapping, e.g. {device: cuda}")
            spec.model_options = dict(data["model_options"])
        return spec

    def apply_flags(
        self,
        *,
        model: str | None = None,
        tasks: str | None = None,
        strategy: str | None = None,
        sweep: str | None = None,
        params: dict[str, str | None] | None = None,
        extra_params: Iterable[str] = (),
        baselines: bool | None = None,
        limit: int | None = None,
        seed: str | None = None,
        batch_size: int | None = None,
        db: str | None = None,
        out: str | None = None,
        executor: str | None = None,
        workers: int | None = None,
        ray_address: str | None = None,
        gpus_per_worker: float | None = None,
        threads: int | None = None,
        model_options: Iterable[str] = (),
        scoring: str | None = None,
        force: bool | None = None,
    ) -> "RunSpec":
        """Command-line flags over this spec (flags win). Returns self."""
        if model is not None:
            self.models = _split(model)
        if tasks is not None:
            self.tasks = _split(tasks)
        if sweep is not None:
            self.sweeps = _split(sweep)
        axes: dict[str, Any] = {}
        for name, raw in (params or {}).items():
            if raw is not None:
                axes[name] = _parse_axis(raw, PARAM_FLAGS.get(name), f"--{name.replace('_', '-')}")
        for item in extra_params:
            if "=" not in item:
                raise SpecError(f"--param {item!r} must look like NAME=V1,V2 (e.g. --param steps=8,16)")
            name, raw = item.split("=", 1)
            axes[name.strip().replace("-", "_")] = _parse_axis(raw, None, f"--param {name}")
        if baselines is not None:
            self.baselines = baselines
        if strategy is not None:
            self.strategies = [StrategyGrid(name, {}) for name in _split(strategy)]
            self._spread_axes(axes)
        elif axes:
            if not self.strategies:
                flags = ", ".join(f"--{a.replace('_', '-')}" for a in axes)
                raise SpecError(f"{flags} given without --strategy; name the strategy, e.g. --strategy confidence-topk --k 1,2,4")
            self._spread_axes(axes)
        if limit is not None:
            self.limit = limit
        if seed is not None:
            self.seeds = [_int(s, "--seed") for s in _split(seed)]
        for key, value in (("batch_size", batch_size), ("workers", workers), ("threads", threads)):
            if value is not None:
                setattr(self, key, value)
        for key, value in (("db", db), ("out", out), ("executor", executor), ("ray_address", ray_address),
                           ("scoring", scoring)):
            if value is not None:
                setattr(self, key, value)
        if force is not None:
            self.force = force
        if gpus_per_worker is not None:
            self.gpus_per_worker = gpus_per_worker
        for item in model_options:
            if "=" not in item:
                raise SpecError(f"--model-opt {item!r} must look like KEY=VALUE (e.g. --model-opt device=cuda)")
            key, raw = item.split("=", 1)
            self.model_options[key.strip()] = _auto(raw.strip())
        return self

    def _spread_axes(self, axes: dict[str, Any]) -> None:
        """Give each flag's values to every named strategy that has that parameter.

        A flag fails only when no named strategy has it; --k with --baselines also sets the
        baselines' k, so a custom strategy without k still runs beside them.
        """
        if not axes:
            return
        grids = []
        used: set[str] = set()
        for grid in self.strategies:
            known = _strategy_param_names(grid.name)
            mine = {}
            for name, values in axes.items():
                if known is None or name in known:
                    mine[name] = values
                    used.add(name)
            grids.append(StrategyGrid(grid.name, {**grid.params, **mine}))
        if self.baselines and "k" in axes:
            self.baseline_k = axes["k"]
            used.add("k")
        unused = sorted(set(axes) - used)
        if unused:
            bad = ", ".join(map(repr, unused))
            if len(self.strategies) == 1:
                name = self.strategies[0].name
                known = _strategy_param_names(name)
                mine = f"; its parameters: {', '.join(sorted(known))}" if known else ""
                raise SpecError(f"strategy {name!r} has no parameter {bad}{mine}")
            names = ", ".join(g.name for g in self.strategies)
            raise SpecError(f"none of the strategies {names} has parameter {bad}")
        self.strategies = grids

    # -- validation ----------------------------------------------------------------------
    def plan(self) -> "Plan":
        """Resolve and validate everything; raises `SpecError` (one line) on the first problem."""
        self._check_scalars()
        models = list(self.models) if self.models is not None else [DEFAULT_MODEL]
        for m in models:
            check_model(m)
            check_model_options(m, self.model_options)
        tasks = _resolve_tasks(self.tasks) if self.tasks is not None else default_tasks()
        _check_user_tasks(tasks, self._limit())
        grids = self._grids()
        configs = {t.id: _expand(grids, t) for t in tasks}
        return Plan(spec=self, models=models, tasks=tasks, configs=configs, limit=self._limit())

    def _check_workers(self) -> None:
        """At least 1, and no more than the cores this process may use (a remote Ray cluster aside)."""
        if self.workers is None:
            return
        from parallelbench.runner.resources import usable_cores

        cores = usable_cores()
        if self.workers < 1:
            raise SpecError(f"--workers must be at least 1 (got {self.workers}); leave it out to use every core this "
                            f"process may use ({cores})")
        if self.workers > cores and not (self.executor == "ray" and self.ray_address):
            raise SpecError(f"--workers {self.workers} is more than the {cores} core{'s' if cores != 1 else ''} this "
                            f"process may use; pass --workers 1 to {cores}, or leave it out to use them all")

    def _check_scalars(self) -> None:
        if self.executor not in EXECUTORS:
            raise SpecError(f"unknown executor {self.executor!r}; valid executors: {', '.join(EXECUTORS)}")
        if self.limit is not None and self.limit < 1:
            raise SpecError(f"limit must be at least 1 (got {self.limit}); leave it out for every sample")
        if self.batch_size < 1:
            raise SpecError(f"batch size must be at least 1 (got {self.batch_size})")
        self._check_workers()
        if self.threads < 1:
            raise SpecError(f"threads must be at least 1 (got {self.threads})")
        if self.gpus_per_worker < 0:
            raise SpecError(f"gpus per worker must be >= 0 (got {self.gpus_per_worker})")
        if not self.seeds:
            raise SpecError("give at least one seed, e.g. --seed 0")
        if self.models is not None and not self.models:
            raise SpecError("give at least one model, e.g. --model tiny")
        for s in self.sweeps:
            if s not in SWEEPS:
                raise SpecError(f"unknown sweep {s!r}; valid sweeps: {', '.join(SWEEPS)}")
        if self.scoring not in SCORING_MODES:
            raise SpecError(f"unknown scoring mode {self.scoring!r}; valid modes: {', '.join(SCORING_MODES)}")

    def _grids(self) -> list[StrategyGrid]:
        grids = list(self.strategies)
        sweeps = self.sweeps or ([] if grids else ["quick"])
        for s in sweeps:
            grids += list(get_sweep(s).grids)
        if self.baselines:
            ks: list[Any] = list(_flat_values(self.baseline_k))
            for g in self.strategies:
                for v in _flat_values(g.params.get("k")):
                    if v not in ks:
                        ks.append(v)
            k_axis: Any = "pow2" if "pow2" in ks else (ks or [1, 2, 4])
            grids += [
                StrategyGrid("confidence-topk", {"k": k_axis}),
                StrategyGrid("confidence-threshold", {"threshold": list(BASELINE_THRESHOLDS)}),
            ]
        return grids

    def _limit(self) -> int | None:
        if self.limit is not None:
            return self.limit
        limits = [get_sweep(s).default_limit for s in (self.sweeps or ([] if self.strategies else ["quick"]))]
        if not limits or any(v is None for v in limits):
            return None
        return max(v for v in limits if v is not None)


@dataclass
class Plan:
    """A validated run: every (task, config) the grid holds, per model."""

    spec: RunSpec
    models: list[str]
    tasks: list["Task"]
    configs: dict[str, list[Config]]
    limit: int | None

    @property
    def num_configs(self) -> int:
        return len({c for cs in self.configs.values() for c in cs})


# -- helpers -----------------------------------------------------------------------------
def check_model(spec: str) -> None:
    """Reject a model spec that is malformed or whose loader is not in this install."""
    import importlib.util

    from parallelbench.models.registry import ModelSpecError, check_spec

    try:
        check_spec(spec)
    except ModelSpecError as exc:
        raise SpecError(str(exc)) from None
    try:  # the loader module must exist (loading the weights waits until the run)
        from parallelbench.models import registry

        target, _ = registry._loader_for(spec)
        module = target.split(":")[0]
        found = importlib.util.find_spec(module) is not None
    except (ImportError, AttributeError, ValueError):
        found = True  # cannot tell without loading; the run will say
    if not found:
        raise SpecError(
            f"model spec {spec!r} is not available in this install yet (no module {module}); "
            f"valid forms: {registry.VALID_FORMS}"
        )


def check_model_options(spec: str, options: dict[str, Any]) -> None:
    """Unknown `--model-opt` keys fail here, in one line naming the valid ones, before anything loads."""
    from parallelbench.models.registry import ModelSpecError, check_options

    try:
        check_options(spec, options)
    except ModelSpecError as exc:
        raise SpecError(str(exc)) from None


def default_tasks() -> list["Task"]:
    """The main job's tasks: the paper's Waiting Line and Puzzle tasks (12)."""
    return [t for t in _resolve_tasks(["paper"]) if t.category in DEFAULT_CATEGORIES]


def _resolve_tasks(items: list[str]) -> list["Task"]:
    from parallelbench.tasks import resolve_tasks

    try:
        tasks = resolve_tasks(items)
    except KeyError as exc:
        raise SpecError(exc.args[0] if exc.args else str(exc)) from None
    except ImportError as exc:
        raise SpecError(f"the task registry cannot load in this install ({exc})") from None
    if not tasks:
        raise SpecError(f"no tasks match {', '.join(items)}; run `parallelbench tasks list` for every id")
    return tasks


def _check_user_tasks(tasks: list["Task"], limit: int | None) -> None:
    """Run the generators of tasks from user modules now, so a bad sample is one line before any work."""
    from parallelbench.tasks import TaskSourceError, task_source

    for task in tasks:
        if task_source(task.id) is not None:
            try:
                task.samples(limit)
            except TaskSourceError as exc:
                raise SpecError(str(exc)) from None


_PARAM_NAME_CACHE: dict[str, frozenset[str] | None] = {}
_DEFAULT_PARAMS: dict[str, dict[str, Any] | None] = {}


def _build(name: str, kwargs: dict[str, Any]):
    try:
        from parallelbench.decoding import build_strategy
    except ImportError as exc:
        raise SpecError(f"the decoding engine is not available in this install ({exc})") from None
    return build_strategy(name, **kwargs)


def _default_params(name: str) -> dict[str, Any] | None:
    if name not in _DEFAULT_PARAMS:
        try:
            _DEFAULT_PARAMS[name] = dict(_build(name, {}).params)
        except SpecError:
            raise
        except Exception:  # noqa: BLE001 - a strategy may need arguments; then there are no defaults
            _DEFAULT_PARAMS[name] = None
    return _DEFAULT_PARAMS[name]


def _strategy_param_names(name: str) -> frozenset[str] | None:
    if name not in _PARAM_NAME_CACHE:
        try:
            defaults = _default_params(name)
        except Exception:  # noqa: BLE001 - unknown strategies are reported by plan()
            defaults = None
        _PARAM_NAME_CACHE[name] = frozenset(defaults) if defaults is not None else None
    return _PARAM_NAME_CACHE[name]


def _strategy_names() -> str:
    try:
        from parallelbench.decoding import strategy_names

        return ", ".join(strategy_names())
    except Exception:  # noqa: BLE001
        return "see `parallelbench run --help`"


def _one_line(exc: BaseException) -> str:
    text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    return " ".join(text.split()) or type(exc).__name__


def _expand(grids: list[StrategyGrid], task: "Task") -> list[Config]:
    gen_length = task.max_new_tokens
    out: dict[tuple[str, str], Config] = {}
    for grid in grids:
        known = _strategy_param_names(grid.name)
        if known is not None:
            bad = sorted(set(grid.params) - known)
            if bad:
                raise SpecError(
                    f"strategy {grid.name!r} has no parameter {', '.join(map(repr, bad))}; "
                    f"its parameters: {', '.join(sorted(known))}"
                )
        try:
            combos = grid.expand(gen_length)
        except ValueError as exc:
            raise SpecError(f"strategy {grid.name!r}: {exc}") from None
        for kwargs in combos:
            cfg = _config(grid.name, kwargs, task, gen_length)
            out.setdefault((cfg.strategy, cfg.params), cfg)
    return list(out.values())


def _config(name: str, kwargs: dict[str, Any], task: "Task", gen_length: int) -> Config:
    shown = f"{name}[{', '.join(f'{k}={v}' for k, v in sorted(kwargs.items()))}]"
    try:
        strategy = _build(name, kwargs)
    except SpecError:
        raise
    except Exception as exc:  # noqa: BLE001 - the decoding layer's own message, on one line
        from parallelbench.decoding.strategy import StrategyLoadError  # imported by _build already

        if isinstance(exc, StrategyLoadError):  # module:Class that cannot load: its line says which part
            raise SpecError(_one_line(exc)) from None
        if _strategy_param_names(name) is None and ":" not in name:
            inner = _one_line(exc)
            if name in inner and "valid" in inner:  # the decoding layer already lists the strategies
                raise SpecError(inner) from None
            head = inner if name in inner else f"unknown strategy {name!r} ({inner})"
            raise SpecError(f"{head}; valid strategies: {_strategy_names()}, or module:Class") from None
        raise SpecError(f"cannot build {shown}: {_one_line(exc)}") from None
    try:
        strategy.validate(gen_length)
    except Exception as exc:  # noqa: BLE001
        raise SpecError(
            f"{shown} is invalid for task {task.id} (generation length {gen_length}): {_one_line(exc)}"
        ) from None
    params = dict(strategy.params)
    return Config(
        strategy=name,
        kwargs=canonical_json(kwargs),
        params=canonical_json(params),
        label=config_label(name, params, _default_params(name)),
        kind=str(getattr(strategy, "kind", "topk")),
    )


PRIMARY_PARAMS = ("k", "threshold", "factor")  # always shown in a label, even at their defaults


def config_label(name: str, params: dict[str, Any], defaults: dict[str, Any] | None) -> str:
    """"confidence-topk[k=2]": the main knob plus every parameter that differs from the defaults."""
    shown = {
        k: v for k, v in sorted(params.items())
        if v is not None and (k in PRIMARY_PARAMS or defaults is None or k not in defaults or defaults[k] != v)
    }
    if not shown:
        return name
    return f"{name}[{','.join(f'{k}={_fmt(v)}' for k, v in shown.items())}]"


def _fmt(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return f"{v:.1f}"
    if isinstance(v, (list, dict)):
        return canonical_json(v)
    return str(v)


def _split(text: str) -> list[str]:
    return [s.strip() for s in str(text).split(",") if s.strip()]


def _str_list(value: Any, what: str) -> list[str]:
    if isinstance(value, str):
        return _split(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v.strip() for v in value]
    raise SpecError(f"{what} must be a string or a list of strings (got {value!r})")


def _int(value: Any, what: str) -> int:
    try:
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError
        return int(value)
    except (TypeError, ValueError):
        raise SpecError(f"{what} must be an integer (got {value!r})") from None


def _number(value: Any, what: str) -> float:
    try:
        if isinstance(value, bool):
            raise ValueError
        return float(value)
    except (TypeError, ValueError):
        raise SpecError(f"{what} must be a number (got {value!r})") from None


def _auto(raw: str) -> Any:
    """"2" -> 2, "0.9" -> 0.9, "true" -> True, "none" -> None, else the string."""
    low = raw.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    for cast in (int, float):
        try:
            return cast(raw)
        except ValueError:
            pass
    return raw


def _parse_axis(raw: str, typ: type | None, flag: str) -> list[Any] | str:
    if raw.strip() == "pow2":
        return "pow2"
    out = []
    for item in _split(raw):
        if typ is None:
            out.append(_auto(item))
            continue
        try:
            out.append(typ(item))
        except ValueError:
            kind = "integers" if typ is int else "numbers"
            raise SpecError(f"{flag} takes comma-separated {kind} or pow2 (got {item!r})") from None
    if not out:
        raise SpecError(f"{flag} needs at least one value")
    return out


def _flat_values(values: Any) -> list[Any]:
    if values is None or isinstance(values, str) or callable(values):
        return [] if values is None else [values]
    return list(values)


def _parse_strategies(value: Any) -> list[StrategyGrid]:
    """YAML: a name, a list of names, or a list of {name: ..., param: value-or-list}."""
    if isinstance(value, str):
        return [StrategyGrid(n, {}) for n in _split(value)]
    if not isinstance(value, list):
        raise SpecError("strategies must be a list, e.g. [{name: confidence-topk, k: [1, 2, 4]}]")
    grids = []
    for item in value:
        if isinstance(item, str):
            grids.append(StrategyGrid(item, {}))
            continue
        if not isinstance(item, dict) or "name" not in item:
            raise SpecError(f"strategy entry {item!r} needs a name, e.g. {{name: confidence-topk, k: [1, 2]}}")
        params: dict[str, Any] = {}
        for k, v in item.items():
            if k == "name":
                continue
            if v == "pow2":
                params[k] = "pow2"
            elif isinstance(v, list):
                params[k] = list(v)
            else:
                params[k] = [v]
        grids.append(StrategyGrid(str(item["name"]), params))
    return grids
