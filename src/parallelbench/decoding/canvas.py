"""Batch set-up shared by the decoding loops: the model's device, left-padded prompts, templates."""

from __future__ import annotations

from typing import Any, Sequence

import torch

def model_device(model: Any) -> torch.device:
    """Where the model's parameters live (its `device` attribute when it has one; else the CPU)."""
    dev = getattr(model, "device", None)
    if dev is not None:
        return torch.device(dev)
    params = getattr(model, "parameters", None)
    if callable(params):
        for p in params():
            return p.device
    return torch.device("cpu")


def left_pad(
    prompts: "Sequence[Sequence[int]] | torch.Tensor", pad_id: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """Ragged prompts -> (ids [B, P] left-padded with pad_id, attention mask [B, P])."""
    if torch.is_tensor(prompts):
        ids = prompts.to(device=device, dtype=torch.long)
        if ids.dim() != 2:
            raise ValueError(f"prompts tensor must be [B, P], got shape {tuple(ids.shape)}")
        return ids, torch.ones_like(ids, dtype=torch.bool)
    rows = [list(map(int, p)) for p in prompts]
    width = max((len(r) for r in rows), default=0)
    # built on the host and moved in one copy (every copy to a GPU waits for it)
    both = torch.tensor([[pad_id] * (width - len(r)) + r for r in rows] + [[0] * (width - len(r)) + [1] * len(r)
                                                                          for r in rows], dtype=torch.long)
    both = both.view(2, len(rows), width).to(device)
    return both[0], both[1].bool()


def make_template(template: Any, batch: int, gen_length: int, mask_id: int, device: torch.device) -> torch.Tensor:
    """[B, gen_length] ids to start from: all mask_id, or the given template (infilling)."""
    if template is None:
        return torch.full((batch, gen_length), mask_id, dtype=torch.long, device=device)
    t = torch.as_tensor(template, dtype=torch.long, device=device)
    if t.dim() == 1:
        t = t.unsqueeze(0).expand(batch, -1)
    if tuple(t.shape) != (batch, gen_length):
        raise ValueError(f"template must be [B={batch}, gen_length={gen_length}] ids, got {tuple(t.shape)}")
    return t.clone()
