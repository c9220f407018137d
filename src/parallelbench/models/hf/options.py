"""Loader options of `hf:` models (`--model-opt KEY=VALUE`), parsed once with clear errors.

Values arrive as strings from the command line or as typed values from YAML/Python,
so each field is coerced here and an unknown key is named with the valid ones.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from parallelbench.models.hf.errors import HFModelError
from parallelbench.models.registry import compile_refusal

CACHE_MODES = ("none", "prefix", "dual", "block", "delayed")
DELAYED_CACHE_FAMILIES = ("llada", "lladamoe", "dream")  # the native nets with d3LLM's delayed prefix cache


@dataclass
class HFOptions:
    device: str | None = None  # cuda / cuda:1 / cpu / mps; default cuda when available, else cpu
    dtype: str | None = None  # bfloat16 / float16 / float32; default bf16 on GPU, fp32 on CPU
    cache: str | None = None  # KV cache: none, prefix or dual (Fast-dLLM; LLaDA, Dream), block (exact; SDAR, LLaDA 2), delayed (d3LLM, with multi-block; LLaDA, Dream); default none (DiffusionGemma prefix)
    batch_size: int = 8  # samples per forward batch
    trust_remote_code: bool | None = None  # run the checkpoint's own code: only if true and no native family
    force: bool = False  # run a large model on CPU anyway
    family: str | None = None  # override detection: llada, dream, diffusion_gemma, masked_lm, causal
    revision: str | None = None  # hub revision
    self_conditioning: bool = True  # DiffusionGemma: feed the previous step's logits back
    max_cpu_params: float = 3e9  # above this many parameters a CPU load needs device=cpu or force=true
    medusa: str | None = None  # causal LMs: a Medusa heads folder; decode with --strategy medusa / medusa-verified
    compile: bool = False  # native families: torch.compile each whole forward, CUDA graphs on a GPU (first calls compile)
    adapter: str | None = None  # dLLMs: a LoRA folder written by `parallelbench finetune` for this base
    # dLLMs: end-of-turn ids (<|eot_id|>, <|im_end|>) merged into EOS (one end token); false keeps the
    # checkpoint's own logits, as the families' reference generate() sees them
    merge_stops: bool = False  # LLaDA / Dream: merge end-of-turn ids into EOS (off: the checkpoint's own logits)
    cache_delay: int | None = None  # cache=delayed: calls a finished block waits before it enters the cache (default 2)
    refresh_interval: int | None = None  # cache=delayed: also refresh the cache at every M-th call (default never)

    def __post_init__(self) -> None:
        if self.cache is not None and self.cache not in CACHE_MODES:
            raise HFModelError(f"model option cache={self.cache!r} is invalid: use one of {', '.join(CACHE_MODES)}")
        for name in ("cache_delay", "refresh_interval"):
            if getattr(self, name) is not None and self.cache != "delayed":
                raise HFModelError(f"model option {name} applies to cache=delayed only (d3LLM's delayed prefix cache); "
                                   f"add --model-opt cache=delayed or drop {name}")
        if self.cache_delay is not None and self.cache_delay < 0:
            raise HFModelError(f"model option cache_delay={self.cache_delay} is invalid: use an integer >= 0 "
                               "(calls a finished block waits before it enters the cache)")
        if self.refresh_interval is not None and self.refresh_interval < 1:
            raise HFModelError(f"model option refresh_interval={self.refresh_interval} is invalid: use an integer "
                               ">= 1 (refresh the cache every M calls), or leave it out (never)")
        if self.batch_size < 1:
            raise HFModelError(f"model option batch_size={self.batch_size} is invalid: use an integer >= 1")
        if self.dtype is not None and self.dtype not in ("bfloat16", "float16", "float32", "bf16", "fp16", "fp32"):
            raise HFModelError(f"model option dtype={self.dtype!r} is invalid: use bfloat16, float16 or float32")


def compile_refused(name: str, what: str) -> HFModelError:
    """compile=true for a model without a compile path: one line naming those that have one."""
    return HFModelError(compile_refusal(name, what))


def _coerce(name: str, kind: type, value: Any) -> Any:
    if value is None:
        return None
    if kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise HFModelError(f"model option {name}={value!r} is invalid: use true or false")
    if kind in (int, float):
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise HFModelError(f"model option {name}={value!r} is invalid: use a number") from None
        if kind is int:
            if not number.is_integer():
                raise HFModelError(f"model option {name}={value!r} is invalid: use an integer")
            return int(number)
        return number
    text = str(value).strip()
    empty = ("", "null", "auto") if name == "cache" else ("", "none", "null", "auto")  # cache=none is a mode
    return None if text.lower() in empty else text


_KINDS = {"device": str, "dtype": str, "cache": str, "batch_size": int, "trust_remote_code": bool, "force": bool,
          "family": str, "revision": str, "self_conditioning": bool, "max_cpu_params": float,
          "medusa": str, "compile": bool, "adapter": str, "merge_stops": bool, "cache_delay": int,
          "refresh_interval": int}


# Whether each option can change outputs (a row's provenance holds those that can). Device,
# batching and load guards do not; `adapter` is covered by its weights hash in `versions()`.
OUTPUT_NEUTRAL = frozenset({"device", "batch_size", "force", "max_cpu_params", "adapter"})
OPTIONS = {f.name: f.name not in OUTPUT_NEUTRAL for f in dataclasses.fields(HFOptions)}


def parse_options(options: dict[str, Any]) -> HFOptions:
    """`HFOptions` from loader keyword options; unknown keys raise one line naming the valid keys."""
    valid = [f.name for f in dataclasses.fields(HFOptions)]
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise HFModelError(f"unknown hf model option(s) {', '.join(unknown)}; valid: {', '.join(valid)}")
    values = {k: _coerce(k, _KINDS[k], v) for k, v in options.items()}
    return HFOptions(**values)


def resolve_device(requested: str | None) -> str:
    import torch

    if requested:
        if requested.startswith("cuda") and not torch.cuda.is_available():
            raise HFModelError(f"device={requested} was requested but no CUDA GPU is visible; use --model-opt device=cpu")
        return requested
    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_dtype(requested: str | None, device: str):
    """bf16 on a GPU, fp32 on CPU (bf16 matmuls on CPU are slow and less exact), unless asked."""
    import torch

    names = {"bfloat16": torch.bfloat16, "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16,
             "float32": torch.float32, "fp32": torch.float32}
    if requested:
        return names[requested]
    return torch.bfloat16 if device.startswith("cuda") else torch.float32
