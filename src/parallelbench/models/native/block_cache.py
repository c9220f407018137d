"""The exact KV cache of block-causal decoding: per-layer key/value buffers, one row per sequence.

Under block-causal attention the keys/values of a finished block depend only on that block and
the blocks before it, so once stored they are exactly what a full recomputation would give.
`decode()` owns the layout (which columns are stored, which rows still decode); this buffer only
reads the prefix [0, start) of the rows it is asked for and writes the columns it is told to store.
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

    def plan(self, rows: torch.Tensor, start: int, width: int, store: torch.Tensor | None) -> "WindowPlan":
        """What one cached call reads and writes, worked out once for all layers (one host sync)."""
        if start + width > self.length:
            raise ValueError(f"window [{start}, {start + width}) runs past the cache length {self.length}")
        everyone = rows.numel() == self.batch and bool((rows == torch.arange(self.batch, device=rows.device)).all())
        if store is None or not bool(store.any()):
            return WindowPlan(rows, start, everyone, None, None)
        if everyone and bool(store.all()):
            return WindowPlan(rows, start, everyone, "all", None)
        r, j = store.nonzero(as_tuple=True)
        return WindowPlan(rows, start, everyone, "some", (r, j, rows[r], j + start))

    def with_prefix(self, layer: int, plan: "WindowPlan", k: torch.Tensor,
                    v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Stored keys/values of columns [0, start) of the plan's rows, then the window's own `k`, `v`."""
        start = plan.start
        if start == 0:
            return k, v
        if plan.everyone:
            old_k, old_v = self.keys[layer][:, :, :start], self.values[layer][:, :, :start]
        else:
            old_k, old_v = self.keys[layer][plan.rows, :, :start], self.values[layer][plan.rows, :, :start]
        return torch.cat([old_k, k.to(old_k.dtype)], dim=2), torch.cat([old_v, v.to(old_v.dtype)], dim=2)

    def store(self, layer: int, plan: "WindowPlan", k: torch.Tensor, v: torch.Tensor) -> None:
        """Write the window's keys/values [b, H, W, D] where the plan says (per layer)."""
        if plan.mode is None:
            return
        if plan.mode == "all":
            width = k.shape[2]
            self.keys[layer][:, :, plan.start:plan.start + width] = k
            self.values[layer][:, :, plan.start:plan.start + width] = v
            return
        r, j, dest_rows, cols = plan.index
        # advanced indices on dims 0 and 2 around a slice: the indexed values are [n, H, D]
        self.keys[layer][dest_rows, :, cols] = k[r, :, j]
        self.values[layer][dest_rows, :, cols] = v[r, :, j]


@dataclass
class WindowPlan:
    rows: torch.Tensor  # [b] kv rows of the window's rows
    start: int  # first canvas column of the window
    everyone: bool  # rows is 0..batch-1: slices instead of gathers
    mode: str | None  # None: store nothing; "all": every position; "some": `index`
    index: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor] | None  # (r, j, kv row, column)
