"""d3LLM's delayed prefix cache (`cache=delayed`), kept per row, driven by a multi-block decode.

The canvas is read as units: the prompt, then the generation blocks. A unit is *finished* when
it has nothing left to decode (the prompt from the start; a block once the decode reports it
finished, `BlockProgress.finished`), and remembers the call at which it was first seen finished.
At every call, scanning the units left to right from the end of the cached prefix:
- a finished unit that has waited `delay` calls enters the cache (the scan goes on);
- a finished unit still waiting (stabilising), or one not finished, ends the scan.
Then the call is one of (d3LLM's `generate_multi_block_kv_cache`):
- *store*: some unit entered: the columns from the old cache end on attend to the cached prefix
  and to themselves; the keys/values of the units that entered are kept;
- *refresh*: the row has a cache and a finished unit is stabilising, or the call's number is a
  multiple of `refresh_interval`: one full pass, whose keys/values replace the cached prefix;
- *window*: otherwise the columns from the cache end on, against the cached prefix;
- *full*: no cache yet: one full pass.
Cached columns keep no logits (zeros here; a multi-block decode never reads them). Shifted
families (Dream) read position i from query i - 1 inside the computed columns only: the first
computed column of a window repeats itself, as d3LLM's Dream loop shifts each window alone.

Every row keeps its own cache, units and counters. A batch runs one pass over the union of its
rows' columns, and each row mixes in fresh keys/values only in its own columns, so a row gets
the same logits alone or in any batch.
"""

from __future__ import annotations

import torch

from parallelbench.models.protocols import BlockProgress


class DelayedPrefixCache:
    def __init__(self, model: torch.nn.Module, *, delay: int, refresh_interval: int | None):
        self.model, self.delay, self.interval = model, int(delay), refresh_interval
        self.keys: list[torch.Tensor] = []  # per layer [n, Hkv, L, D]
        self.values: list[torch.Tensor] = []
        self.length: torch.Tensor | None = None  # [n] end of each row's cached prefix
        self.done_at: torch.Tensor | None = None  # [n, units] call at which a unit was first seen finished (-1: not yet)
        self.refreshes: dict[int, int] = {}  # full passes per original row
        self.kinds: dict[int, list[str]] = {}  # the kind of every call per original row (store, refresh, window, full)

    def reset(self) -> None:
        self.keys, self.values, self.length, self.done_at = [], [], None, None
        self.refreshes, self.kinds = {}, {}

    def forward(self, canvas: torch.Tensor, attention_mask: torch.Tensor | None, positions: torch.Tensor,
                rows: torch.Tensor, progress: BlockProgress) -> tuple[torch.Tensor, torch.Tensor]:
        """(raw logits [b, L, V], [b] first column each row computed)."""
        b, total = canvas.shape
        device = canvas.device
        if progress.step == 1 or self.length is None:  # a new decode: every row starts without a cache
            self.reset()
            n = int(rows.max()) + 1
            units = progress.finished.shape[1] + 1
            self.length = torch.zeros(n, dtype=torch.long, device=device)
            self.done_at = torch.full((n, units), -1, dtype=torch.long, device=device)
            self.done_at[:, 0] = 0  # the prompt is finished before the first call
        start, store_from, store_to, full = self._plan(rows, progress, total, device)
        s = int(start.min())
        col = torch.arange(s, total, device=device).unsqueeze(0)
        own = col >= start.unsqueeze(1)  # [b, L - s] columns whose fresh keys/values this row uses
        store = (col >= store_from.unsqueeze(1)) & (col < store_to.unsqueeze(1))
        if not self.keys:
            spec, weight = self.model.spec, self.model.embed.weight
            shape = (self.length.shape[0], spec.kv_heads, total, spec.head_dim)
            self.keys = [torch.zeros(shape, dtype=weight.dtype, device=device) for _ in self.model.layers]
            self.values = [torch.zeros(shape, dtype=weight.dtype, device=device) for _ in self.model.layers]
        # each row's cached keys/values outside its own columns, fresh ones inside; `store` columns kept
        span = self.model.forward_window(canvas[:, s:], attention_mask, positions[:, s:], self.keys, self.values,
                                         rows, own, store, s)
        raw = span if s == 0 else torch.cat([span.new_zeros(b, s, span.shape[-1]), span], dim=1)
        for r, is_full in zip(rows.tolist(), full.tolist()):
            self.refreshes[r] = self.refreshes.get(r, 0) + int(is_full)
        real = torch.zeros_like(start) if attention_mask is None else torch.argmax(attention_mask.int(), dim=1)
        return raw, torch.maximum(start, real)

    def _plan(self, rows: torch.Tensor, progress: BlockProgress, total: int, device: torch.device):
        """Per row: first computed column, the columns whose fresh keys/values are kept, full pass?"""
        step = progress.step
        b = rows.shape[0]
        units = progress.finished.shape[1] + 1
        ends = (progress.prompt_length + torch.arange(units, device=device) * progress.block_length).clamp(max=total)
        finished = torch.cat([torch.ones((b, 1), dtype=torch.bool, device=device), progress.finished.bool()], dim=1)
        length = self.length.index_select(0, rows)
        done_at = self.done_at.index_select(0, rows)
        cached_to = length.clone()
        scanning = torch.ones(b, dtype=torch.bool, device=device)
        for u in range(units):
            here = scanning & (ends[u] > length)
            seen = here & finished[:, u]
            done_at[:, u] = torch.where(seen & (done_at[:, u] < 0), step, done_at[:, u])
            ready = seen & (step - done_at[:, u] >= self.delay)
            cached_to = torch.where(ready, ends[u], cached_to)
            scanning = scanning & ~(here & ~ready)
        stabilizing = ((done_at >= 0) & (ends.unsqueeze(0) > cached_to.unsqueeze(1))).any(dim=1)
        entered = cached_to > length
        periodic = self.interval is not None and step % self.interval == 0
        has_cache = length > 0
        refresh = ~entered & has_cache & (stabilizing | periodic)
        window = entered | (has_cache & ~refresh)
        start = torch.where(window, length, 0)
        store_from = torch.where(entered, length, 0)
        store_to = torch.where(entered, cached_to, torch.where(refresh, length, 0))
        self.length[rows] = cached_to
        self.done_at[rows] = done_at
        kinds = torch.where(entered, 0, torch.where(refresh, 1, torch.where(window, 2, 3)))
        for r, kind in zip(rows.tolist(), kinds.tolist()):
            self.kinds.setdefault(r, []).append(("store", "refresh", "window", "full")[kind])
        return start, store_from, store_to, ~window
