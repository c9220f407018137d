"""The exact KV cache of block-causal decoding: per-layer key/value buffers, one row per sequence.

Under block-causal attention the keys/values of a finished block depend only on that block and
the blocks before it, so once stored they are exactly what a full recomputation would give.
`decode()` owns the layout (which columns are stored, which rows still decode); this buffer only
reads the prefix [0, start) of the rows it is asked for and writes the columns it is told to store.

Nothing here reads a device value on the host: which rows and columns a call touches comes from
the caller's host integers (`start`, the window width, the number of rows), the rest is indexing
on the device, so a cached step can be replayed as a CUDA graph. The buffers have a fixed shape
per (batch, length) and the net hands the same ones out again for the next decode of that shape.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class BlockKV:
    keys: list[torch.Tensor]  # per layer [batch, kv_heads, length, head_dim] (after RoPE)
    values: list[torch.Tensor]

    @classmethod
    def zeros(cls, layers: int, batch: int, kv_heads: int, length: int, head_dim: int, *,
              dtype: torch.dtype, device: torch.device | str) -> "BlockKV":
        shape = (batch, kv_heads, length, head_dim)
        return cls([torch.zeros(shape, dtype=dtype, device=device) for _ in range(layers)],
                   [torch.zeros(shape, dtype=dtype, device=device) for _ in range(layers)])

    @property
    def batch(self) -> int:
        return self.keys[0].shape[0] if self.keys else 0

    @property
    def length(self) -> int:
        return self.keys[0].shape[2] if self.keys else 0

    def zero_(self) -> "BlockKV":
        for t in (*self.keys, *self.values):
            t.zero_()
        return self

    def check_window(self, rows: torch.Tensor, start: int, width: int) -> None:
        """Host-side checks of a cached call (shapes only: no device value is read)."""
        if start + width > self.length:
            raise ValueError(f"window [{start}, {start + width}) runs past the cache length {self.length}")
        if rows.shape[0] > self.batch:
            raise ValueError(f"{rows.shape[0]} rows given for a cache of {self.batch} rows")


def prefix_and_window(buf: torch.Tensor, rows: torch.Tensor | None, start: int, fresh: torch.Tensor) -> torch.Tensor:
    """Stored columns [0, start) of `rows` (None: every row, in order) followed by the window's `fresh` [b, H, W, D]."""
    if start == 0:
        return fresh
    old = buf.narrow(2, 0, start)
    if rows is not None:
        old = old.index_select(0, rows)
    return torch.cat([old, fresh.to(old.dtype)], dim=2)


def store_window(buf: torch.Tensor, rows: torch.Tensor | None, start: int, fresh: torch.Tensor,
                 store: torch.Tensor) -> None:
    """Write `fresh` [b, H, W, D] into columns [start, start + W) of `rows` where `store` [b, W] is True."""
    width = fresh.shape[2]
    keep = store[:, None, :, None]
    window = buf.narrow(2, start, width)  # narrow, not a slice: its width is exactly W (no clamping to reason about)
    if rows is None:
        window.copy_(torch.where(keep, fresh.to(buf.dtype), window))
    else:
        window.index_copy_(0, rows, torch.where(keep, fresh.to(buf.dtype), window.index_select(0, rows)))
