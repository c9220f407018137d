"""Native PyTorch implementations of the dLLM families the benchmark runs (no checkpoint code).

    module, config = load_native("/path/to/LLaDA-8B-Instruct", device="cuda", dtype="bfloat16")
    logits = module(ids, attention_mask=mask)        # raw logits [B, L, V] (Dream: not yet shifted)

`family_of(config)` says which implementation a config.json belongs to ("llada", "lladamoe" for
LLaDA-MoE, "dream", "sdar" for SDAR / TraDo, "llada2" for LLaDA 2.x MoE, or None). Only config.json, the
safetensors files and (for a mask id the config does not state) the tokenizer's JSON files are
read; no `.py` file of the checkpoint is imported or executed. Every checkpoint problem is one
`NativeCheckpointError` line. Block-diffusion families' modules carry `block_causal = True`,
`block_size` (the config's, or None) and `default_block_length`.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

from parallelbench.models.hf.detect import native_family as family_of  # one rule for both: read from config.json
from parallelbench.models.native.errors import NativeCheckpointError

__all__ = ["BLOCK_CAUSAL_FAMILIES", "FAMILIES", "NativeCheckpointError", "family_of", "family_module", "load_native"]

FAMILIES = ("llada", "lladamoe", "dream", "sdar", "llada2")
BLOCK_CAUSAL_FAMILIES = ("sdar", "llada2")


def family_module(family: str) -> Any:
    """The module describing one family: `spec_from_config`, `published_name`, `MASK_ID`, `SHIFT`
    (block-diffusion families also `block_size`, `default_block_length`, `optional`; a family whose
    layers differ from the shared ones, `build_module(spec)`)."""
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


def mask_id_of(config: dict[str, Any], family: str, path: Path | str, folder: Path | None = None) -> int:
    """The config's mask_token_id, else the tokenizer's mask token (read from `folder`'s tokenizer
    JSON files), else the family's published one (LLaDA, Dream); checked against the vocabulary."""
    from parallelbench.models.native.config_fields import Fields

    f = Fields(config, path)
    mask_id = config.get("mask_token_id")
    if mask_id is None and folder is not None:
        mask_id = tokenizer_mask_id(folder)
    if mask_id is None:
        mask_id = family_module(family).MASK_ID
    if mask_id is None:
        raise f.bad("no mask_token_id, and the tokenizer files declare no mask token; use the checkpoint's "
                    "published tokenizer files (tokenizer_config.json names its mask_token)")
    if isinstance(mask_id, bool) or not isinstance(mask_id, int):
        raise f.bad(f"mask_token_id must be an integer, got {mask_id!r}")
    vocab = f.int("vocab_size")
    if not 0 <= mask_id < vocab:
        raise f.bad(f"mask_token_id={mask_id} is outside the vocabulary (vocab_size={vocab})")
    return mask_id


def tokenizer_mask_id(folder: Path) -> int | None:
    """The id of the mask token that tokenizer_config.json (or special_tokens_map.json) names, looked
    up in tokenizer.json / tokenizer_config.json's added tokens; None when nothing declares one."""
    name = None
    tables: list[dict[str, int]] = []
    for fname in ("tokenizer_config.json", "special_tokens_map.json"):
        try:
            data = json.loads((folder / fname).read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        token = data.get("mask_token")
        if isinstance(token, dict):
            token = token.get("content")
        if name is None and isinstance(token, str):
            name = token
        decoder = data.get("added_tokens_decoder")
        if isinstance(decoder, dict):
            tables.append({str(v.get("content")): int(k) for k, v in decoder.items()
                           if isinstance(v, dict) and str(k).isdigit()})
    if name is None:
        return None
    try:
        tok = json.loads((folder / "tokenizer.json").read_text())
        tables.insert(0, {str(a.get("content")): int(a["id"]) for a in tok.get("added_tokens") or []
                          if isinstance(a, dict) and "id" in a})
        vocab = (tok.get("model") or {}).get("vocab")
        if isinstance(vocab, dict):
            tables.append({str(k): int(v) for k, v in vocab.items() if isinstance(v, int)})
    except (OSError, ValueError, TypeError, AttributeError):
        pass
    for table in tables:
        if name in table:
            return table[name]
    return None


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

    fam = family_module(family)
    spec = fam.spec_from_config(config, "config")
    torch.manual_seed(seed)
    with torch.device(device):
        module = getattr(fam, "build_module", DiffusionTransformer)(spec)
    module.to(dtype=_torch_dtype(dtype, device))
    for name, p in module.named_parameters():
        if "norm" in name:
            continue
        with torch.no_grad():
            if name.endswith("expert_bias"):
                p.zero_()
            else:
                p.normal_(0.0, 0.02)
    _describe(module, family, config, mask_id_of(config, family, "config"), "config")
    return module.eval()


def _describe(module: Any, family: str, config: dict[str, Any], mask_id: int, path: Path | str) -> None:
    """What the nets read off a loaded module: mask id, family, logit shift, block layout."""
    fam = family_module(family)
    module.mask_id = mask_id
    module.family = family
    module.logit_shift = fam.SHIFT
    module.block_causal = bool(getattr(fam, "BLOCK_CAUSAL", False))
    if module.block_causal:
        module.block_size = fam.block_size(config, path)
        module.default_block_length = fam.default_block_length(config, path)


def load_native(path: str | Path, device: str = "cpu", dtype: Any = None) -> tuple[Any, dict[str, Any]]:
    """(module, config) for a local checkpoint folder: config.json plus safetensors weights.

    `module(ids, attention_mask=...)` gives raw logits; it also carries `mask_id`, `family`
    and `logit_shift` (1 for Dream: the prediction for position i is read at i - 1).
    """
    import torch

    from parallelbench.models.native.layers import DiffusionTransformer
    from parallelbench.models.native.weights import read_tensors, tensor_files

    folder = Path(path)
    config = read_config(folder)
    family = family_of(config)
    if family is None:
        raise NativeCheckpointError(
            f"{folder / 'config.json'}: model_type {config.get('model_type')!r} has no native implementation "
            "(native: 'llada' for LLaDA / LLaDA 1.5, 'lladamoe' for LLaDA-MoE, 'Dream' for Dream / DiffuCoder, "
            "'sdar' for SDAR / TraDo, "
            "'llada2_moe' for LLaDA 2.x); check that this is a checkpoint of one of these families")
    fam = family_module(family)
    spec = fam.spec_from_config(config, folder / "config.json")
    mask_id = mask_id_of(config, family, folder / "config.json", folder)
    torch_dtype = _torch_dtype(dtype, str(device))
    with torch.device("meta"):
        module = getattr(fam, "build_module", DiffusionTransformer)(spec)
    params = dict(module.named_parameters())
    sources = {n: fam.published_name(n, tuple(p.shape)) for n, p in params.items()}
    optional = getattr(fam, "optional", lambda name: False)
    present = set(tensor_files(folder)) if any(optional(n) for n in params) else set()
    skipped = {n for n in params if optional(n) and sources[n] not in present}
    shapes: dict[str, tuple[int, ...]] = {}
    for n, src in sources.items():
        if n in skipped:
            continue
        if isinstance(src, tuple):  # per-expert tensors stacked on dim 0
            shapes.update({part: tuple(params[n].shape[1:]) for part in src})
        else:
            shapes[src] = tuple(params[n].shape)
    tensors = read_tensors(folder, shapes, dtype=torch_dtype, device=device)
    state = {}
    for n, src in sources.items():
        if n in skipped:
            state[n] = torch.zeros(params[n].shape, dtype=torch_dtype, device=device)
        elif isinstance(src, tuple):
            state[n] = torch.stack([tensors.pop(part) for part in src])
        else:
            state[n] = tensors[src]
    module.load_state_dict(state, strict=True, assign=True)
    module.rotary.to(device)
    _describe(module, family, config, mask_id, folder / "config.json")
    return module.eval(), config
