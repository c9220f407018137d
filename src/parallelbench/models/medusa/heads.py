"""Medusa-1 heads and their checkpoint format.

Each head is `num_layers` residual blocks (h + SiLU(W h + b)) followed by a projection to
the vocabulary. The published Medusa-1 format is a folder with `config.json`
(`medusa_num_heads`, `medusa_num_layers`, `base_model_name_or_path`) and
`medusa_lm_head.pt` (or `.safetensors`), a state dict keyed `"{head}.{layer}.linear.weight"`
/ `".bias"` for the blocks and `"{head}.{num_layers}.weight"` for the head's own projection.
A folder without the projections (Medusa's earlier layout, and what `medusa train` writes by
default to keep files small) reuses the backbone's output layer, frozen.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from torch import nn

WEIGHTS_PT = "medusa_lm_head.pt"
WEIGHTS_ST = "medusa_lm_head.safetensors"


class MedusaError(ValueError):
    """One line saying what is wrong with a heads folder and what to do."""


class _Residual(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.linear = nn.Linear(hidden, hidden)
        nn.init.zeros_(self.linear.weight)  # starts as the identity: the head begins as the backbone's head

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h + nn.functional.silu(self.linear(h))


class MedusaHeads(nn.Module):
    """`num_heads` heads over the backbone's last hidden state; logits [heads, ..., V]."""

    def __init__(self, num_heads: int, hidden_size: int, vocab_size: int, *, num_layers: int = 1,
                 own_projection: bool = False):
        super().__init__()
        if not 1 <= num_heads <= 16:
            raise MedusaError(f"--heads {num_heads} is invalid: use 1 to 16 heads")
        self.num_heads, self.num_layers = num_heads, num_layers
        self.hidden_size, self.vocab_size = hidden_size, vocab_size
        self.own_projection = own_projection
        self.heads = nn.ModuleList()
        for _ in range(num_heads):
            parts: list[nn.Module] = [_Residual(hidden_size) for _ in range(num_layers)]
            if own_projection:
                parts.append(nn.Linear(hidden_size, vocab_size, bias=False))
            self.heads.append(nn.Sequential(*parts))

    def forward(self, hidden: torch.Tensor, backbone_head: nn.Module, count: int | None = None) -> torch.Tensor:
        """Logits of the first `count` heads (all by default) at every position of `hidden`."""
        used = self.heads[: self.num_heads if count is None else count]
        if self.own_projection:
            return torch.stack([head(hidden) for head in used])
        return torch.stack([backbone_head(head(hidden)) for head in used])

    def init_projections_from(self, backbone_head: nn.Module) -> None:
        if self.own_projection:
            for head in self.heads:
                head[-1].weight.data.copy_(backbone_head.weight.data)

    # --------------------------------------------------------------- format
    def state_for_file(self) -> dict[str, torch.Tensor]:
        """Keys exactly as the published Medusa-1 files name them ("0.0.linear.weight", "0.1.weight")."""
        return {k.removeprefix("heads."): v.detach().cpu().contiguous() for k, v in self.state_dict().items()}


def save_heads(heads: MedusaHeads, folder: str | Path, *, base_model: str, extra: dict[str, Any] | None = None) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "medusa_num_heads": heads.num_heads,
        "medusa_num_layers": heads.num_layers,
        "base_model_name_or_path": base_model,
        "hidden_size": heads.hidden_size,
        "vocab_size": heads.vocab_size,
        "own_projection": heads.own_projection,
        **(extra or {}),
    }
    tmp = folder / (WEIGHTS_PT + ".tmp")
    torch.save(heads.state_for_file(), tmp)
    tmp.replace(folder / WEIGHTS_PT)  # never a half-written weights file
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    return folder


def read_config(folder: str | Path) -> dict[str, Any]:
    folder = Path(folder)
    if not folder.is_dir():
        raise MedusaError(f"medusa heads folder {str(folder)!r} not found; train heads with `parallelbench medusa train`")
    path = folder / "config.json"
    try:
        config = json.loads(path.read_text())
    except FileNotFoundError:
        raise MedusaError(f"{path}: missing; a Medusa heads folder needs config.json with medusa_num_heads") from None
    except (OSError, ValueError) as exc:
        raise MedusaError(f"{path}: not readable JSON ({exc}); re-train or re-download the heads") from None
    if not isinstance(config, dict) or not isinstance(config.get("medusa_num_heads"), int):
        raise MedusaError(f"{path}: no integer medusa_num_heads; is this a Medusa heads folder?")
    return config


def _read_state(folder: Path) -> dict[str, torch.Tensor]:
    if (folder / WEIGHTS_ST).is_file():
        from safetensors.torch import load_file

        return load_file(str(folder / WEIGHTS_ST))
    path = folder / WEIGHTS_PT
    if not path.is_file():
        raise MedusaError(f"{folder}: neither {WEIGHTS_PT} nor {WEIGHTS_ST} found; re-train or re-download the heads")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the same user error
        raise MedusaError(f"{path}: not a tensor state dict ({str(exc).splitlines()[0][:120]})") from None


def load_heads(folder: str | Path, *, hidden_size: int, vocab_size: int) -> tuple[MedusaHeads, dict[str, Any]]:
    """Heads from a Medusa-1 folder, checked against the backbone's hidden size and vocabulary."""
    folder = Path(folder)
    config = read_config(folder)
    state = _read_state(folder)
    n_heads = int(config["medusa_num_heads"])
    n_layers = int(config.get("medusa_num_layers", 1))
    block = state.get("0.0.linear.weight")
    if block is None:
        raise MedusaError(f"{folder}: tensor '0.0.linear.weight' missing; not a Medusa-1 heads file")
    if tuple(block.shape) != (hidden_size, hidden_size):
        raise MedusaError(
            f"{folder}: heads have hidden size {block.shape[-1]}, the backbone {hidden_size}; "
            f"these heads belong to another model ({config.get('base_model_name_or_path', 'unknown base')})"
        )
    proj = state.get(f"0.{n_layers}.weight")
    if proj is not None and proj.shape[0] != vocab_size:
        raise MedusaError(
            f"{folder}: heads predict a vocabulary of {proj.shape[0]}, the backbone has {vocab_size}; "
            f"use heads trained for this model"
        )
    if proj is None and config.get("vocab_size") not in (None, vocab_size):
        raise MedusaError(
            f"{folder}: heads were trained for a vocabulary of {config['vocab_size']}, the backbone has {vocab_size}; "
            f"use heads trained for this model"
        )
    heads = MedusaHeads(n_heads, hidden_size, vocab_size, num_layers=n_layers, own_projection=proj is not None)
    wanted = {f"heads.{k}": v for k, v in state.items() if k.split(".")[0].isdigit() and int(k.split(".")[0]) < n_heads}
    missing, unexpected = heads.load_state_dict(wanted, strict=False)
    if missing:
        raise MedusaError(f"{folder}: tensors missing for {len(missing)} parameters (first: {missing[0]}); the file is incomplete")
    return heads, config
