"""Fast-dLLM block-wise approximate KV caches (prefix and dual), kept per row.

When a row enters a new semi-AR block, a *refresh* pass computes every position and keeps
all keys/values. Until that row's block changes, a step recomputes only the row's *window*
and reads every other position's keys/values from its cache:

- prefix: window = [block start, end of sequence); prompt and earlier blocks are cached;
- dual: window = the active block; prefix and suffix are cached.

The approximation: cached keys/values are those of the last refresh, although the
tokens inside the window (and so, through attention, every deeper layer's states elsewhere)
have changed since. Logits outside the window are those of the last pass that computed them.
Shifted families (Dream) start the window one position early so the block's first logit is fresh.

Everything is per row, so a row's logits never depend on its batch: the pass runs over the
union of the rows' windows, but each row mixes fresh keys/values only inside its own window
and keeps its cached ones (and cached logits) elsewhere; a row refreshes only when its own
block changes (a refresh pass then covers the whole sequence for the batch, and the rows
that did not need one still use their own caches).

The bookkeeping stays on the device. Keys/values live in buffers of a fixed shape per
(batch, length), one slot per row of the session's first call (plus a scratch slot for rows
it never saw); which rows refresh, and the span of columns a pass computes, are worked out
on the device. The host needs three numbers per call (does any row refresh, the span's first
and last column): `plan(...)` computes them for the *next* call so that the decoding loop
reads them together with its own per-step check (one transfer), and `forward(..., plan=)`
takes them back; without a plan, `forward` reads them itself (one transfer per call).

Rows of later calls are rows of the session's first call, each at most once, in the first
call's order (what the engine does: it only drops finished rows). A call with more rows than
that (WINO's leave-one-out rows on a model without attention bias) switches the session to
looking every row up, which is exact but copies the rows' keys/values per call.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class _State:
    length: int  # canvas columns L
    prompt_len: int  # P
    cap: int  # slots: the first call's rows (slot `cap` is scratch)
    slot_rows: torch.Tensor  # [cap] original row id of each slot
    filled: torch.Tensor  # [cap + 1] slot holds a refreshed row
    prompt: torch.Tensor  # [cap + 1, P] each slot's prompt at its last refresh
    blocks: torch.Tensor  # [cap + 1] each slot's block at its last refresh
    keys: list[torch.Tensor]  # per layer [cap + 1, Hkv, L, D] (after RoPE)
    values: list[torch.Tensor]
    refreshes: torch.Tensor  # [cap + 1] refresh passes per slot
    last_rows: torch.Tensor | None = None  # rows of the last call (its logits are `raw`)
    raw: torch.Tensor | None = None  # [b_last, L, V] latest raw logits of those rows
    irregular: bool = False  # a call broke the row contract: always look rows up


def active_blocks(gen: torch.Tensor, mask_id: int, block_len: int) -> torch.Tensor:
    """[b] leftmost block of the generation region that still holds a masked position."""
    g = gen.shape[1]
    idx = torch.arange(g, device=gen.device).unsqueeze(0)
    first = torch.where(gen == mask_id, idx, g).min(dim=1).values
    return torch.clamp(first, max=g - 1) // block_len


def lookup(rows: torch.Tensor, table: torch.Tensor, missing: int) -> torch.Tensor:
    """[b] index of each row in `table` (its last occurrence), `missing` where absent: on the device."""
    hit = rows.unsqueeze(1) == table.unsqueeze(0)
    found = torch.where(hit, torch.arange(table.shape[0], device=rows.device), -1).amax(dim=1)
    return torch.where(found >= 0, found, missing)


@dataclass
class Flags:
    """One call's per-row decisions, on the device."""

    slots: torch.Tensor  # [b] state slot of each row
    refresh: torch.Tensor  # [b] the row needs a refresh pass
    blocks: torch.Tensor  # [b] active block
    start: torch.Tensor  # [b] first column of the row's window
    end: torch.Tensor  # [b] end of the row's window


class RowBlockCache:
    def __init__(self, model: torch.nn.Module, mode: str, *, mask_id: int, shift: int):
        if mode not in ("prefix", "dual"):
            raise ValueError(f"cache mode {mode!r} is invalid: use prefix or dual")
        self.model, self.mode, self.mask_id, self.shift = model, mode, int(mask_id), int(shift)
        self.state: _State | None = None
        self._spare: _State | None = None  # buffers of the previous session, reused for the same shape

    def reset(self) -> None:
        if self.state is not None:
            self._spare = self.state
        self.state = None

    @property
    def refreshes(self) -> dict[int, int]:
        """Refresh passes per original row in the current session (reads the device)."""
        st = self.state
        if st is None:
            return {}
        counts = st.refreshes[: st.cap].tolist()
        return {int(r): int(n) for r, n in zip(st.slot_rows.tolist(), counts) if n}

    # ------------------------------------------------------------------ state
    def _new_state(self, canvas: torch.Tensor, rows: torch.Tensor, prompt_len: int) -> _State:
        b, length = canvas.shape
        spec = self.model.spec
        dev, dtype = canvas.device, self.model.embed.weight.dtype
        spare, self._spare = self._spare, None
        shape = (b + 1, spec.kv_heads, length, spec.head_dim)
        if spare is not None and spare.keys and tuple(spare.keys[0].shape) == shape and spare.keys[0].dtype == dtype \
                and spare.prompt.shape[1] == prompt_len and spare.keys[0].device == dev:
            keys, values = spare.keys, spare.values  # the same buffers: a replayed CUDA graph keeps its addresses
        else:
            keys = [torch.zeros(shape, dtype=dtype, device=dev) for _ in self.model.layers]
            values = [torch.zeros(shape, dtype=dtype, device=dev) for _ in self.model.layers]
            self.model.mark_static(keys + values)
        return _State(length, prompt_len, b, rows.clone(), torch.zeros(b + 1, dtype=torch.bool, device=dev),
                      torch.zeros((b + 1, prompt_len), dtype=torch.long, device=dev),
                      torch.zeros(b + 1, dtype=torch.long, device=dev), keys, values,
                      torch.zeros(b + 1, dtype=torch.long, device=dev))

    def _state_for(self, canvas: torch.Tensor, rows: torch.Tensor, prompt_len: int) -> _State:
        st = self.state
        if st is None or st.length != canvas.shape[1] or st.prompt_len != prompt_len:
            self.reset()
            st = self.state = self._new_state(canvas, rows, prompt_len)
        if rows.shape[0] > st.cap:
            st.irregular = True
        return st

    def _windows(self, blocks: torch.Tensor, prompt_len: int, length: int, block_len: int):
        start = (prompt_len + blocks * block_len - self.shift).clamp(0, length - 1)
        if self.mode == "prefix":
            end = torch.full_like(start, length)
        else:
            end = (prompt_len + (blocks + 1) * block_len).clamp(1, length)
        return start, end

    def flags(self, st: _State, canvas: torch.Tensor, rows: torch.Tensor, block_len: int) -> Flags:
        p = st.prompt_len
        blocks = active_blocks(canvas[:, p:], self.mask_id, block_len)
        slots = lookup(rows, st.slot_rows, st.cap)
        seen = lookup(rows, st.last_rows, -1) >= 0 if st.last_rows is not None else torch.zeros_like(slots, dtype=torch.bool)
        same = seen & st.filled[slots] & (st.blocks[slots] == blocks)
        if p:
            same = same & (st.prompt[slots] == canvas[:, :p]).all(dim=1)
        start, end = self._windows(blocks, p, canvas.shape[1], block_len)
        return Flags(slots, ~same, blocks, start, end)

    # ------------------------------------------------------------------ the host plan
    def plan(self, canvas: torch.Tensor, rows: torch.Tensor, keep: torch.Tensor, gen_length: int,
             block_length: int | None) -> torch.Tensor | None:
        """[any refresh, first column, end column] of the next call, on the device, for the rows
        `keep` [b] of this canvas (the next call's canvas is canvas[keep]); None without a state."""
        st = self.state
        p = canvas.shape[1] - gen_length
        if st is None or st.length != canvas.shape[1] or st.prompt_len != p or st.irregular:
            return None
        f = self.flags(st, canvas, rows, block_length or gen_length)
        length = canvas.shape[1]
        return torch.stack([(f.refresh & keep).any().long(), torch.where(keep, f.start, length).amin(),
                            torch.where(keep, f.end, 0).amax()])

    # ------------------------------------------------------------------ one call
    def forward(self, canvas: torch.Tensor, attention_mask: torch.Tensor | None, positions: torch.Tensor,
                rows: torch.Tensor, gen_length: int, block_length: int | None,
                plan: list[int] | None = None) -> torch.Tensor:
        """Raw logits [b, L, V] for the canvas, from the cache where each row's block allows."""
        b, length = canvas.shape
        prompt_len = length - gen_length
        if prompt_len < 0:
            raise ValueError(f"canvas of length {length} is shorter than the session's gen_length={gen_length}")
        block_len = block_length or gen_length
        st = self._state_for(canvas, rows, prompt_len)
        first = st.raw is None
        f = self.flags(st, canvas, rows, block_len)
        if first:
            refresh_any, s, e = True, 0, length
        elif plan is not None and not st.irregular:
            refresh_any, s, e = bool(plan[0]), int(plan[1]), int(plan[2])
            # the plan was computed from this very canvas; a stale one would be wrong, not slow
            fits = (f.refresh.any() == refresh_any) & (f.start.amin() >= s) & (f.end.amax() <= e)
            torch._assert_async(fits | refresh_any, "the host plan does not match this canvas")
        else:
            refresh_any, s, e = torch.stack([f.refresh.any().long(), f.start.min(), f.end.max()]).tolist()
        if refresh_any:
            s, e = 0, length
        ar = torch.arange(length, device=canvas.device)
        own = (ar >= f.start[:, None]) & (ar < f.end[:, None]) | f.refresh[:, None]
        identity = b == st.cap and not st.irregular
        if identity:
            torch._assert_async((rows == st.slot_rows).all())
        keep = f.refresh[:, None].expand(b, length) if refresh_any else None  # refreshed rows keep every column
        span_raw = self.model.forward_window(canvas[:, s:e], attention_mask, positions[:, s:e], st.keys, st.values,
                                             None if identity else f.slots, own[:, s:e], keep, s)
        if first:
            raw = span_raw
        else:
            prev = st.raw.index_select(0, lookup(rows, st.last_rows, 0)).to(span_raw.dtype)
            prev[:, s:e] = torch.where(own[:, s:e, None], span_raw, prev[:, s:e])
            raw = prev
        if refresh_any:
            st.blocks[f.slots] = torch.where(f.refresh, f.blocks, st.blocks[f.slots])
            st.prompt[f.slots] = canvas[:, :prompt_len]
            st.filled[f.slots] = True
            st.filled[st.cap] = False  # the scratch slot never holds a row
            st.refreshes.index_add_(0, f.slots, f.refresh.long())
        st.last_rows, st.raw = rows.clone(), raw
        return raw


def window_kv(buf: torch.Tensor, slots: torch.Tensor | None, fresh: torch.Tensor, own: torch.Tensor,
              s: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Keys (or values) a window pass attends to: each row's stored ones [b, H, L, D] (`buf[slots]`;
    slots None: rows 0..b-1 of `buf`, worked on in place), with the fresh `fresh` [b, H, W, D] at
    its `own` [b, W] columns of [s, s + W). Returns (those, what `restore_kv` must put back)."""
    width = fresh.shape[2]
    sel = own[:, None, :, None]
    if slots is None:  # the session's rows, in order: write into the buffer, restore after attention
        rows = buf.narrow(0, 0, fresh.shape[0])
        window = rows.narrow(2, s, width)
        saved = window.clone()
        window.copy_(torch.where(sel, fresh.to(buf.dtype), saved))
        return rows, saved
    out = buf.index_select(0, slots)
    window = out.narrow(2, s, width)
    window.copy_(torch.where(sel, fresh.to(buf.dtype), window))
    return out, None


def restore_kv(buf: torch.Tensor, slots: torch.Tensor | None, fresh: torch.Tensor, s: int, saved: torch.Tensor | None,
               keep: torch.Tensor | None) -> None:
    """After a layer's attention: put back what `window_kv` overwrote, except at the columns `keep`
    [b, W] marks (None: none), whose fresh keys/values the buffer keeps from now on."""
    width = fresh.shape[2]
    if slots is None:
        window = buf.narrow(0, 0, fresh.shape[0]).narrow(2, s, width)
        window.copy_(saved if keep is None else torch.where(keep[:, None, :, None], fresh.to(buf.dtype), saved))
    elif keep is not None:
        window = buf.narrow(2, s, width)
        old = window.index_select(0, slots)
        window.index_copy_(0, slots, torch.where(keep[:, None, :, None], fresh.to(buf.dtype), old))
