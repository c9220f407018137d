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

The bookkeeping stays on the device (rows map to slots of the first call's rows; the kinds of
call and refresh counts are logged as tensors and read when asked for). The host needs one
number per call, the first column of the pass: `plan(rows, progress)` works the call out
before it and returns that number on the device, for the caller to read with its own host
decision and hand back (`forward(..., start=)`); without it, `forward` reads it itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from parallelbench.models.native.cache import lookup
from parallelbench.models.protocols import BlockProgress

KINDS = ("store", "refresh", "window", "full")


@dataclass
class _Call:
    """One call's decisions, per row of the call (on the device)."""

    progress: BlockProgress
    slots: torch.Tensor  # [b] cache slot of each row
    start: torch.Tensor  # [b] first computed column
    store_from: torch.Tensor  # [b] the columns whose fresh keys/values are kept: [store_from, store_to)
    store_to: torch.Tensor
    full: torch.Tensor  # [b] a full pass for the row (refresh or no cache yet)
    cached_to: torch.Tensor  # [b] the row's cached prefix after the call
    done_at: torch.Tensor  # [b, units] the row's units' first finished call after it
    kinds: torch.Tensor  # [b] index into KINDS


class DelayedPrefixCache:
    def __init__(self, model: torch.nn.Module, *, delay: int, refresh_interval: int | None):
        self.model, self.delay, self.interval = model, int(delay), refresh_interval
        self.reset()

    def reset(self) -> None:
        self.keys: list[torch.Tensor] = []  # per layer [n + 1, Hkv, L, D] (slot n: scratch)
        self.values: list[torch.Tensor] = []
        self.slot_rows: torch.Tensor | None = None  # [n] original row of each slot (the first call's rows)
        self.length: torch.Tensor | None = None  # [n + 1] end of each slot's cached prefix
        self.done_at: torch.Tensor | None = None  # [n + 1, units] call at which a unit was first seen finished (-1: not yet)
        self._log: list[tuple[torch.Tensor, torch.Tensor]] = []  # (rows, kinds) of every call, on the device
        self._pending: _Call | None = None

    @property
    def kinds(self) -> dict[int, list[str]]:
        """The kind of every call per original row (store, refresh, window, full); reads the device."""
        out: dict[int, list[str]] = {}
        for rows, kinds in self._log:
            for r, k in zip(rows.tolist(), kinds.tolist()):
                out.setdefault(int(r), []).append(KINDS[k])
        return out

    @property
    def refreshes(self) -> dict[int, int]:
        """Full passes per original row; reads the device."""
        return {r: k.count("full") + k.count("refresh") for r, k in self.kinds.items()}

    def _start_decode(self, rows: torch.Tensor, progress: BlockProgress, device: torch.device) -> None:
        self.reset()
        n = rows.shape[0]
        units = progress.finished.shape[1] + 1
        self.slot_rows = rows.clone()
        self.length = torch.zeros(n + 1, dtype=torch.long, device=device)
        self.done_at = torch.full((n + 1, units), -1, dtype=torch.long, device=device)
        self.done_at[:, 0] = 0  # the prompt is finished before the first call

    def plan(self, rows: torch.Tensor, progress: BlockProgress, total: int) -> torch.Tensor:
        """[1] first column of the coming call (on the device), its decisions kept for `forward`."""
        if progress.step == 1 or self.length is None:  # a new decode: every row starts without a cache
            self._start_decode(rows, progress, rows.device)
        self._pending = self._decide(rows, progress, total)
        return self._pending.start.amin().view(1)

    def forward(self, canvas: torch.Tensor, attention_mask: torch.Tensor | None, positions: torch.Tensor,
                rows: torch.Tensor, progress: BlockProgress, start: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(raw logits [b, L, V], [b] first column each row computed). `start`: `plan`'s value."""
        b, total = canvas.shape
        device = canvas.device
        call, self._pending = self._pending, None
        if call is None or call.progress is not progress or call.slots.shape[0] != b:
            if progress.step == 1 or self.length is None:
                self._start_decode(rows, progress, device)
            call, start = self._decide(rows, progress, total), None
        s = int(call.start.amin()) if start is None else int(start)
        col = torch.arange(s, total, device=device).unsqueeze(0)
        own = col >= call.start.unsqueeze(1)  # [b, L - s] columns whose fresh keys/values this row uses
        store = (col >= call.store_from.unsqueeze(1)) & (col < call.store_to.unsqueeze(1))
        if not self.keys:
            spec, weight = self.model.spec, self.model.embed.weight
            shape = (self.length.shape[0], spec.kv_heads, total, spec.head_dim)
            self.keys = [torch.zeros(shape, dtype=weight.dtype, device=device) for _ in self.model.layers]
            self.values = [torch.zeros(shape, dtype=weight.dtype, device=device) for _ in self.model.layers]
            self.model.mark_static(self.keys + self.values)
        # each row's cached keys/values outside its own columns, fresh ones inside; `store` columns kept
        span = self.model.forward_window(canvas[:, s:], attention_mask, positions[:, s:], self.keys, self.values,
                                         call.slots, own, store, s)
        raw = span if s == 0 else torch.cat([span.new_zeros(b, s, span.shape[-1]), span], dim=1)
        self.length[call.slots] = call.cached_to
        self.done_at[call.slots] = call.done_at
        self._log.append((rows.clone(), call.kinds))
        real = torch.zeros_like(call.start) if attention_mask is None else torch.argmax(attention_mask.int(), dim=1)
        return raw, torch.maximum(call.start, real)

    def _decide(self, rows: torch.Tensor, progress: BlockProgress, total: int) -> _Call:
        """Per row: first computed column, the columns whose fresh keys/values are kept, full pass?"""
        device = rows.device
        step = progress.step
        b = rows.shape[0]
        slots = lookup(rows, self.slot_rows, self.slot_rows.shape[0])
        units = progress.finished.shape[1] + 1
        ends = (progress.prompt_length + torch.arange(units, device=device) * progress.block_length).clamp(max=total)
        finished = torch.cat([torch.ones((b, 1), dtype=torch.bool, device=device), progress.finished.bool()], dim=1)
        length = self.length.index_select(0, slots)
        done_at = self.done_at.index_select(0, slots)
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
        kinds = torch.where(entered, 0, torch.where(refresh, 1, torch.where(window, 2, 3)))
        return _Call(progress, slots, start, store_from, store_to, ~window, cached_to, done_at, kinds)
