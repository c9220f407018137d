"""The `Strategy` base class, its options, and the registry of named strategies.

A strategy is one small class: an options dataclass (every sweepable knob is a
field, so a run is `(name, params)`) and a `step(view) -> Decision`. Most
strategies only override `score` and/or `select`; schedules with their own logic
override `step`, `init_state` or `forward`. Build one with
`build_strategy("confidence-threshold", threshold=0.9)` or, for a class of your
own, `build_strategy("my_module:MyStrategy", ...)`.
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import torch

from parallelbench.decoding import scores as scores_mod
from parallelbench.decoding.block_grid import block_length_for
from parallelbench.decoding.view import Decision, StepView
from parallelbench.models.protocols import is_block_causal, uses_delayed_cache
from parallelbench.typed_options import coerce, option_error  # noqa: F401  (option_error: the strategies' helper)

if TYPE_CHECKING:
    from parallelbench.models.protocols import MaskedDiffusionModel

StrategyKind = Literal["topk", "adaptive"]
Focus = Literal["all", "masked", "candidates"]


@dataclass
class DecodeOptions:
    """Options every strategy has."""

    temperature: float = 0.0  # 0 = greedy argmax; > 0 samples from softmax(logits / T)
    block_length: int | None = None  # semi-AR block size (must divide gen_length); None = one block
    stop_at_eos: bool = False  # stop a row once everything before its first committed EOS is committed


class Strategy:
    """Base class: override `score` / `select` (or `step`) in a subclass."""

    name: ClassVar[str] = "custom"
    #: what it does, in one line (`parallelbench strategies`); a class without one is described
    #: by the first line of its docstring
    description: ClassVar[str] = ""
    kind: ClassVar[StrategyKind] = "adaptive"
    Options: ClassVar[type] = DecodeOptions
    #: True for rules that compare confidences with a threshold (they read `decision_confidence`):
    #: only then does `forward` ask the model for its noise-free confidence.
    reads_decision_confidence: ClassVar[bool] = False
    # where the view computes x0 / confidence / margin / entropy: "candidates" (the active
    # block's masked positions: all a step can commit), "masked" (every masked position), or
    # "all" (every position, settled ones included). Off focus they read as 0 (x0: the canvas).
    focus: ClassVar[Focus] = "all"
    #: False for strategies that cannot run on a block-causal model (they draft or verify across
    #: the whole canvas); `check_model` then refuses such a model in one line.
    supports_block_causal: ClassVar[bool] = True
    #: True for strategies that only a block-causal model can run (they shift slots inside a block:
    #: `indel-threshold`); `check_model` refuses any other model in one line.
    requires_block_causal: ClassVar[bool] = False
    #: True for strategies whose decisions can change a written token (`Decision.edit` or
    #: `Decision.remask`): the engine then keeps the repair record (decoding/repair.py) from the
    #: first step. Others pay nothing; an undeclared strategy that edits anyway gets the record
    #: from its first such decision (exact, but then only decodes in which it edited carry the keys).
    rewrites: ClassVar[bool] = False
    #: True when `step` commits only among `view.candidates` (with focus "candidates"): the loop can
    #: then find the committed positions without reading the device (see `max_commits_per_row`).
    commits_in_candidates: ClassVar[bool] = False
    #: True for the one strategy that tells a net with `cache=delayed` which blocks are finished
    #: (`multi-block`); `check_model` refuses such a net for every other strategy.
    drives_delayed_cache: ClassVar[bool] = False

    def __init__(self, **params: Any) -> None:
        fields = {f.name: f for f in dataclasses.fields(self.Options)}
        unknown = sorted(set(params) - set(fields))
        if unknown:
            raise ValueError(
                f"unknown option(s) {unknown} for strategy {self.name!r}; valid options: {sorted(fields)}"
            )
        values = {k: coerce(k, fields[k].type, v) for k, v in params.items()}
        self.options = self.Options(**values)
        self.check_options()

    # ------------------------------------------------------------------ options
    @property
    def params(self) -> dict[str, Any]:
        """Canonical, JSON-able dict of every option including defaults."""
        return dataclasses.asdict(self.options)

    def check_options(self) -> None:
        """Raise ValueError for options that are invalid whatever the generation length."""
        o = self.options
        if o.temperature < 0:
            raise option_error("temperature", o.temperature, ">= 0 (0 = greedy)")
        if o.block_length is not None and o.block_length < 1:
            raise option_error("block_length", o.block_length, "an integer >= 1 dividing gen_length, or None")

    def validate(self, gen_length: int) -> None:
        """Raise ValueError if these options cannot decode `gen_length` tokens."""
        if gen_length < 1:
            raise option_error("gen_length", gen_length, "an integer >= 1")
        b = self.options.block_length
        if b is not None and gen_length % b != 0:
            raise option_error("block_length", b, f"a divisor of gen_length={gen_length}")

    def num_blocks(self, gen_length: int) -> int:
        return gen_length // (self.options.block_length or gen_length)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}({self.name!r}, {args})"

    # ------------------------------------------------------------------ engine hooks
    def begin(self, context: dict[str, Any]) -> None:
        """Called once per decode before any model call (context: model, verifier, prompt_length);
        raise here for anything missing so no work is wasted."""

    def check_model(self, model: Any) -> None:
        """Raise ValueError, one line naming the capability and the fix, if `model` (the
        MaskedDiffusionModel) lacks something these options need. The runner calls it for
        every configuration before any decoding; strategies with needs call it from `begin`.
        Subclasses that override it call `super().check_model(model)` (block-causal checks)."""
        check_block_causal(self, model)
        if uses_delayed_cache(model) and not self.drives_delayed_cache:
            raise ValueError(
                f"the model's cache=delayed (d3LLM's delayed prefix cache) is driven by strategy 'multi-block' only; "
                f"decode {getattr(self, 'name', type(self).__name__)!r} without it (cache=none, prefix or dual) "
                "or use --strategy multi-block")

    def init_state(self, batch_size: int, gen_length: int, device: torch.device) -> dict[str, torch.Tensor]:
        """Per-row tensors (dim 0 = row) the engine keeps aligned when rows finish."""
        return {}

    def forward(
        self,
        model: "MaskedDiffusionModel",
        canvas: torch.Tensor,
        attention_mask: torch.Tensor,
        rows: torch.Tensor,
        state: dict[str, Any],
        prompt_length: int,
    ) -> tuple[torch.Tensor, dict[str, Any]]:
        """One model call (counts one NFE per row); returns logits [b, L, V] and extras.

        A model that can tell its noise-free confidence apart from its tie-breaking noise
        (the ideal model's `forward_with_confidence`) hands it over as the extra
        "noise_free_confidence" [b, G]; threshold decisions read it (`StepView.decision_confidence`).
        """
        with_confidence = getattr(model, "forward_with_confidence", None) if self.reads_decision_confidence else None
        if with_confidence is None:
            return model.forward(canvas, attention_mask=attention_mask, rows=rows), {}
        logits, clean = with_confidence(canvas, attention_mask=attention_mask, rows=rows)
        return logits, ({} if clean is None else {"noise_free_confidence": clean[:, prompt_length:]})

    def step(self, view: StepView) -> Decision:
        return Decision(commit=self.select(view, self.score(view)))

    def max_commits_per_row(self) -> int | None:
        """The most tokens a step commits in one row, when the options fix it (top-k: k); None: unknown."""
        return None

    def score(self, view: StepView) -> torch.Tensor:
        return scores_mod.confidence(view)

    def select(self, view: StepView, scores: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError(f"{type(self).__name__} must override select() or step()")


def check_block_causal(strategy: Strategy, model: Any) -> int | None:
    """For a block-causal model: the block length this strategy decodes it with, after refusing
    (one ValueError line) a block length that does not suit the model or a strategy that cannot
    run block-causally; None for any other model."""
    name = getattr(strategy, "name", type(strategy).__name__)
    if not is_block_causal(model):
        if getattr(strategy, "requires_block_causal", False):
            raise ValueError(
                f"strategy {name!r} runs on block-diffusion models only (LLaDA 2.x, SDAR / TraDo, or a net with "
                "block_causal = True), whose blocks it edits one at a time; this model is not one")
        return None
    if not getattr(strategy, "supports_block_causal", True):
        raise ValueError(
            f"strategy {name!r} cannot decode a block-causal model (it works across the "
            "whole canvas, not one block at a time); use a block-wise strategy such as confidence-threshold"
        )
    if type(strategy).forward is not Strategy.forward:
        raise ValueError(
            f"strategy {name!r} makes its own model calls (it overrides forward), which cannot carry the "
            "block-causal layout of this model; use a strategy that lets the engine call the model"
        )
    return block_length_for(model, strategy.options.block_length)


def strategy_max_steps(strategy: Strategy, gen_length: int) -> int:
    """Steps after which a decode is stopped as stuck (the strategy's `max_steps` when it has one)."""
    custom = getattr(strategy, "max_steps", None)
    return int(custom(gen_length)) if callable(custom) else 8 * gen_length + 64


# ---------------------------------------------------------------------- registry
_REGISTRY: dict[str, type[Strategy]] = {}
_UNLISTED: set[str] = set()  # buildable by name, but not diffusion-engine strategies (Medusa modes)
_BUILTIN_MODULES = (
    "parallelbench.decoding.presets",
    "parallelbench.decoding.schedules.dus",
    "parallelbench.decoding.schedules.slowfast",
    "parallelbench.decoding.schedules.wino",
    "parallelbench.decoding.schedules.apd",
    "parallelbench.decoding.schedules.pc_sampler",
    "parallelbench.decoding.schedules.edit_threshold",
    "parallelbench.decoding.schedules.indel_threshold",
    "parallelbench.decoding.schedules.prophet",
    "parallelbench.decoding.schedules.credit",
    "parallelbench.decoding.schedules.multi_block",
    "parallelbench.decoding.remasking",
    "parallelbench.decoding.schedules.medusa",
)
_loaded = False


def register_strategy(name: str, *, listed: bool = True):
    """Class decorator: make a Strategy subclass buildable by `name`.

    `listed=False` keeps it out of `strategy_names()`, the strategies the diffusion engine
    decodes with; used for modes that only a particular model kind runs (Medusa heads).
    """

    def deco(cls: type[Strategy]) -> type[Strategy]:
        if not (isinstance(cls, type) and issubclass(cls, Strategy)):
            raise TypeError(f"register_strategy({name!r}) needs a Strategy subclass, got {cls!r}")
        cls.name = name
        _REGISTRY[name] = cls
        if not listed:
            _UNLISTED.add(name)
        return cls

    return deco


def _load_builtins() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for module in _BUILTIN_MODULES:
            importlib.import_module(module)


def describe(cls: type[Strategy]) -> str:
    """What a strategy does, in one line: its `description`, else the first line of its own
    docstring, else what the class it extends says."""
    for klass in cls.__mro__:
        if klass is Strategy or not (isinstance(klass, type) and issubclass(klass, Strategy)):
            break
        text = klass.__dict__.get("description") or ""
        doc = klass.__dict__.get("__doc__") or ""
        if not text and doc.strip():
            text = doc.strip().split("\n\n")[0].split(". ")[0].rstrip(".")
        if text.strip():
            return " ".join(text.split())
    return ""


def strategy_names() -> list[str]:
    """The diffusion engine's strategies (Medusa modes are built by name but not listed)."""
    _load_builtins()
    return [n for n in _REGISTRY if n not in _UNLISTED]


class StrategyLoadError(ValueError):
    """A `module:Class` strategy that cannot be loaded (no module, no class, not a Strategy): one line."""


def _is_strategy_class(obj: Any) -> bool:
    return isinstance(obj, type) and issubclass(obj, Strategy) and obj is not Strategy


def strategy_class(name: str) -> type[Strategy]:
    """The class behind a registered name or a "module:Class" path."""
    _load_builtins()
    if name in _REGISTRY:
        return _REGISTRY[name]
    if ":" in name:
        from parallelbench.userimport import UserCodeError, load_named

        module_name, _, class_name = name.rpartition(":")
        if not module_name or not class_name:
            raise StrategyLoadError(f"strategy {name!r} is not of the form module:ClassName (e.g. my_module:MyStrategy)")
        try:
            cls = load_named(name, f"cannot load strategy {name!r}", "Strategy classes", _is_strategy_class)
        except UserCodeError as exc:
            raise StrategyLoadError(str(exc)) from None
        if not _is_strategy_class(cls):
            raise StrategyLoadError(f"{name!r} is a {type(cls).__name__}, not a subclass of parallelbench.decoding.Strategy")
        return cls
    raise ValueError(f"unknown strategy {name!r}; valid: {', '.join(_REGISTRY)} or 'module:Class'")


def build_strategy(name: str, **params: Any) -> Strategy:
    """A configured strategy from a preset name or a "module:Class" path."""
    cls = strategy_class(name)
    strategy = cls(**params)
    if name not in _REGISTRY:
        strategy.name = name  # rebuildable from its run row
    return strategy


def as_strategy(strategy: "Strategy | str") -> Strategy:
    return build_strategy(strategy) if isinstance(strategy, str) else strategy
