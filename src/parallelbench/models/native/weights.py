"""Read a checkpoint's safetensors files (one file or shards listed in an index) without its code.

Shapes are checked from the files' headers before any tensor is read, so a wrong checkpoint
fails in one line naming the file and the tensor, not deep inside `load_state_dict`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

import torch

from parallelbench.models.native.errors import NativeCheckpointError

INDEX = "model.safetensors.index.json"
SINGLE = "model.safetensors"


def tensor_files(folder: Path) -> dict[str, Path]:
    """Published tensor name -> the safetensors file holding it."""
    index = folder / INDEX
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text())["weight_map"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise NativeCheckpointError(f"{index}: unreadable shard index ({exc}); re-download the checkpoint") from None
        out = {}
        for name, shard in weight_map.items():
            path = folder / shard
            if not path.is_file():
                raise NativeCheckpointError(
                    f"{path}: shard listed in {INDEX} is missing; re-download the checkpoint (all shards)")
            out[name] = path
        return out
    single = folder / SINGLE
    if single.is_file():
        return {name: single for name in _names(single)}
    shards = sorted(folder.glob("*.safetensors"))
    if not shards:
        raise NativeCheckpointError(
            f"{folder}: no {SINGLE} or {INDEX}; download the checkpoint's safetensors weights")
    return {name: path for path in shards for name in _names(path)}


def _names(path: Path) -> list[str]:
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as f:
            return list(f.keys())
    except Exception as exc:  # noqa: BLE001 - a truncated or foreign file
        raise NativeCheckpointError(f"{path}: not a readable safetensors file ({exc}); re-download it") from None


def read_tensors(folder: Path, expected: Mapping[str, tuple[int, ...]], *, dtype: torch.dtype,
                 device: str | torch.device) -> dict[str, torch.Tensor]:
    """The `expected` tensors (published name -> shape), cast to `dtype` on `device`.

    Tensors the model does not use (e.g. rotary buffers) are ignored; a missing tensor or
    a wrong shape is one `NativeCheckpointError` naming the file.
    """
    from safetensors import safe_open

    files = tensor_files(folder)
    missing = [n for n in expected if n not in files]
    if missing:
        where = folder / INDEX if (folder / INDEX).is_file() else folder
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise NativeCheckpointError(
            f"{where}: tensor {missing[0]!r}{more} is missing; the config does not match these weights "
            "(re-download the checkpoint or fix config.json)")
    by_file: dict[Path, list[str]] = {}
    for name in expected:
        by_file.setdefault(files[name], []).append(name)
    out: dict[str, torch.Tensor] = {}
    for path, names in by_file.items():
        with safe_open(str(path), framework="pt") as f:
            for name in names:
                shape = tuple(f.get_slice(name).get_shape())
                if shape != tuple(expected[name]):
                    raise NativeCheckpointError(
                        f"{path}: tensor {name!r} has shape {list(shape)}, config.json implies "
                        f"{list(expected[name])}; the config does not match these weights (fix config.json "
                        "or re-download the checkpoint)")
                out[name] = f.get_tensor(name).to(device=device, dtype=dtype)
    return out


def moe_tensor_name(internal: str, shape: tuple[int, ...], *, top: Mapping[str, str], block: Mapping[str, str],
                    moe: Mapping[str, str], experts: Mapping[str, str]) -> str | tuple[str, ...]:
    """Our parameter name -> the tensor name of a Qwen-style MoE checkpoint (LLaDA 2, LLaDA-MoE): `top`
    maps embed / norm / head, `block` a layer's parts, `moe` the mixture's router, bias and shared
    expert; our stacked expert weights (`shape[0]` experts) map to a tuple of the per-expert tensors
    `model.layers.{i}.mlp.experts.{j}.{experts[part]}.weight`, stacked on dim 0."""
    parts = internal.split(".")
    if parts[0] != "layers":
        return f"{top[parts[0]]}.{'.'.join(parts[1:])}"
    layer = f"model.layers.{parts[1]}."
    if parts[2] == "moe":
        if parts[3] in experts:
            return tuple(f"{layer}mlp.experts.{j}.{experts[parts[3]]}.weight" for j in range(shape[0]))
        return layer + moe[parts[3]]
    return f"{layer}{block[parts[2]]}.{'.'.join(parts[3:])}"
