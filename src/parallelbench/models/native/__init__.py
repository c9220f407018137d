"""Native PyTorch implementations of the dLLM families the benchmark runs (no checkpoint code).

    module, config = load_native("/path/to/LLaDA-8B-Instruct", device="cuda", dtype="bfloat16")
    logits = module(ids, attention_mask=mask)        # raw logits [B, L, V] (Dream: not yet shifted)

`family_of(config)` says which implementation a config.json belongs to ("llada", "dream" or
None). Only config.json and the safetensors files are read; no `.py` file of the checkpoint is
imported or executed. Every checkpoint problem is one `NativeCheckpointError` line.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

from parallelbench.models.hf.detect import native_family as family_of  # one rule for both: read from config.json
from parallelbench.models.native.errors import NativeCheckpointError

__all__ = ["FAMILIES", "NativeCheckpointError", "family_of", "family_module", "load_native"]

FAMILIES = ("llada", "dream")


def family_module(family: str) -> Any:
    """The module describing one family: `spec_from_config`, `published_name`, `MASK_ID`, `SHIFT`."""
    return importlib.import_module(f"parallelbench.models.native.{family}")


def read_config(folder: Path) -> dict[str, Any]:
    path = folder / "config.json"
    try:
        config = json.loads(path.read_text())
    except FileNotFoundError:
        raise NativeCheckpointError(f"{path}: missing; give a checkpoint folder with config.json") from None
    except (OSError, ValueError) as exc:
        raise NativeCheckpointError(f"{path}: unreadable ({exc}); re-download the checkpoint") from None
    if not isinstance(config, dict):
        raise NativeCheckpointError(f"{path}: not a JSON object; re-download the checkpoint")
    return config


def mask_id_of(config: dict[str, Any], family: str, path: Path | str) -> int:
    """The config's mask_token_id (else the family's published one), checked against the vocabulary."""
    from parallelbench.models.native.config_fields import Fields

    f = Fields(config, path)
    mask_id = config.get("mask_token_id", family_module(family).MASK_ID)
    if isinstance(mask_id, bool) or not isinstance(mask_id, int):
        raise f.bad(f"mask_token_id must be an integer, got {mask_id!r}")
    vocab = f.int("vocab_size")
    if not 0 <= mask_id < vocab:
        raise f.bad(f"mask_token_id={mask_id} is outside the vocabulary (vocab_size={vocab})")
    return mask_id


def _torch_dtype(dtype: Any, device: str) -> Any:
    import torch

    if dtype is None:
        return torch.bfloat16 if str(device).startswith("cuda") else torch.float32
    if isinstance(dtype, torch.dtype):
        return dtype
    names = {"bfloat16": torch.bfloat16, "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16,
             "half": torch.float16, "float32": torch.float32, "fp32": torch.float32, "float": torch.float32}
    if str(dtype) not in names:
        raise NativeCheckpointError(f"dtype {dtype!r} is invalid; use float32, bfloat16 or float16")
    return names[str(dtype)]


def build_random(family: str, config: dict[str, Any], *, device: str = "cpu", dtype: Any = None, seed: int = 0):
    """A model of the config's shape with random weights (benchmarks, tests): no files read."""
    import torch

    from parallelbench.models.native.layers import DiffusionTransformer

    spec = family_module(family).spec_from_config(config, "config")
    torch.manual_seed(seed)
    with torch.device(device):
        module = DiffusionTransformer(spec)
    module.to(dtype=_torch_dtype(dtype, device))
    for name, p in module.named_parameters():
        if "norm" in name:
            continue
        with torch.no_grad():
            p.normal_(0.0, 0.02)
    module.mask_id = mask_id_of(config, family, "config")
    module.family = family
    module.logit_shift = family_module(family).SHIFT
    return module.eval()


def load_native(path: str | Path, device: str = "cpu", dtype: Any = None) -> tuple[Any, dict[str, Any]]:
    """(module, config) for a local checkpoint folder: config.json plus safetensors weights.

    `module(ids, attention_mask=...)` gives raw logits; it also carries `mask_id`, `family`
    and `logit_shift` (1 for Dream: the prediction for position i is read at i - 1).
    """
    import torch

    from parallelbench.models.native.layers import DiffusionTransformer
    from parallelbench.models.native.weights import read_tensors

    folder = Path(path)
    config = read_config(folder)
    family = family_of(config)
    if family is None:
        raise NativeCheckpointError(
            f"{folder / 'config.json'}: model_type {config.get('model_type')!r} has no native implementation "
            "(native: 'llada' for LLaDA / LLaDA 1.5, 'Dream' for Dream / DiffuCoder); "
            "check that this is a LLaDA or Dream checkpoint")
    fam = family_module(family)
    spec = fam.spec_from_config(config, folder / "config.json")
    mask_id = mask_id_of(config, family, folder / "config.json")
    torch_dtype = _torch_dtype(dtype, str(device))
    with torch.device("meta"):
        module = DiffusionTransformer(spec)
    shapes = {fam.published_name(n): tuple(p.shape) for n, p in module.named_parameters()}
    tensors = read_tensors(folder, shapes, dtype=torch_dtype, device=device)
    state = {n: tensors[fam.published_name(n)] for n, _ in module.named_parameters()}
    module.load_state_dict(state, strict=True, assign=True)
    module.rotary.to(device)
    module.mask_id = mask_id
    module.family = family
    module.logit_shift = fam.SHIFT
    return module.eval(), config
