"""Semi-autoregressive blocks: a row works only inside its leftmost unfinished block."""

from __future__ import annotations

import torch


def block_of_positions(gen_length: int, block_length: int | None, device: torch.device) -> torch.Tensor:
    """Block index of each generation position, [G]."""
    size = block_length or gen_length
    return torch.arange(gen_length, device=device) // size


def active_block(masked: torch.Tensor, block_of: torch.Tensor, num_blocks: int | None = None) -> torch.Tensor:
    """[b] index of the leftmost block that still holds a masked position (num_blocks if none).
    Pass `num_blocks` when known: it saves a device-to-host read per call."""
    if num_blocks is None:
        num_blocks = int(block_of.max().item()) + 1 if block_of.numel() else 0
    return torch.where(masked, block_of.unsqueeze(0), num_blocks).amin(dim=1)


def in_active_block(active: torch.Tensor, block_of: torch.Tensor) -> torch.Tensor:
    """[b, G] True at positions of each row's active block."""
    return block_of.unsqueeze(0) == active.unsqueeze(1)
