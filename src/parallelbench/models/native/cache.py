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
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class _State:
    rows: torch.Tensor  # [b] original row ids
    prompt: torch.Tensor  # [b, P]
    blocks: torch.Tensor  # [b] each row's block at its last refresh
    keys: list[torch.Tensor]  # per layer [b, Hkv, L, D] (after RoPE)
    values: list[torch.Tensor]
    raw: torch.Tensor  # [b, L, V] latest raw logits


def active_blocks(gen: torch.Tensor, mask_id: int, block_len: int) -> torch.Tensor:
    """[b] leftmost block of the generation region that still holds a masked position."""
    g = gen.shape[1]
    idx = torch.arange(g, device=gen.device).unsqueeze(0)
    first = torch.where(gen == mask_id, idx, g).min(dim=1).values
    return torch.clamp(first, max=g - 1) // block_len


class RowBlockCache:
    def __init__(self, model: torch.nn.Module, mode: str, *, mask_id: int, shift: int):
        if mode not in ("prefix", "dual"):
            raise ValueError(f"cache mode {mode!r} is invalid: use prefix or dual")
        self.model, self.mode, self.mask_id, self.shift = model, mode, int(mask_id), int(shift)
        self.state: _State | None = None
        self.refreshes: dict[int, int] = {}

    def reset(self) -> None:
        self.state = None
        self.refreshes = {}

    def forward(self, canvas: torch.Tensor, attention_mask: torch.Tensor, positions: torch.Tensor,
                rows: torch.Tensor, gen_length: int, block_length: int | None) -> torch.Tensor:
        """Raw logits [b, L, V] for the canvas, from the cache where each row's block allows."""
        b, length = canvas.shape
        prompt_len = length - gen_length
        if prompt_len < 0:
            raise ValueError(f"canvas of length {length} is shorter than the session's gen_length={gen_length}")
        block_len = block_length or gen_length
        blocks = active_blocks(canvas[:, prompt_len:], self.mask_id, block_len)
        old, refresh = self._old(rows, canvas[:, :prompt_len], blocks, length)
        ar = torch.arange(length, device=canvas.device)
        start = (prompt_len + blocks * block_len - self.shift).clamp(0, length - 1)
        if self.mode == "prefix":
            end = torch.full_like(start, length)
        else:
            end = (prompt_len + (blocks + 1) * block_len).clamp(1, length)
        own = (ar >= start[:, None]) & (ar < end[:, None]) | refresh[:, None]
        s, e = (0, length) if bool(refresh.any()) else (int(start.min()), int(end.max()))
        whole = (s, e) == (0, length)
        own_span = own[:, s:e]
        mix = old is not None and not bool(own_span.all())
        fresh: list[tuple[torch.Tensor, torch.Tensor]] = []

        def hook(i: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            if whole:
                fresh.append((k, v))
            if mix:
                sel = own_span[:, None, :, None]
                k = torch.where(sel, k, old.keys[i][:, :, s:e])
                v = torch.where(sel, v, old.values[i][:, :, s:e])
            if whole:
                return k, v
            return _join(old.keys[i], k, s, e), _join(old.values[i], v, s, e)

        span_raw = self.model(canvas[:, s:e], attention_mask[:, s:e], position_ids=positions[:, s:e],
                              key_mask=attention_mask, kv_hook=hook)
        if old is None:
            raw = span_raw
        else:
            prev = old.raw.to(span_raw.dtype)
            mixed = torch.where(own_span[..., None], span_raw, prev[:, s:e]) if mix else span_raw
            raw = mixed if whole else torch.cat([prev[:, :s], mixed, prev[:, e:]], dim=1)
        if fresh:  # a refresh pass: refreshed rows take the new keys/values
            if old is None:
                keys, values = [k for k, _ in fresh], [v for _, v in fresh]
            else:
                r = refresh[:, None, None, None]
                keys = [torch.where(r, k, ok) for (k, _), ok in zip(fresh, old.keys)]
                values = [torch.where(r, v, ov) for (_, v), ov in zip(fresh, old.values)]
            new_blocks = blocks if old is None else torch.where(refresh, blocks, old.blocks)
        else:
            keys, values, new_blocks = old.keys, old.values, old.blocks
        self.state = _State(rows.clone(), canvas[:, :prompt_len].clone(), new_blocks, keys, values, raw)
        for r in rows[refresh].tolist():
            self.refreshes[int(r)] = self.refreshes.get(int(r), 0) + 1
        return raw

    def _old(self, rows: torch.Tensor, prompt: torch.Tensor, blocks: torch.Tensor, length: int):
        """(the cached state re-indexed to `rows`, or None; [b] rows that need a refresh)."""
        st = self.state
        b = rows.shape[0]
        everyone = torch.ones(b, dtype=torch.bool, device=rows.device)
        if st is None or st.raw.shape[1] != length or st.prompt.shape[1] != prompt.shape[1]:
            return None, everyone
        where = {int(r): i for i, r in enumerate(st.rows.tolist())}
        idx_list = [where.get(int(r), -1) for r in rows.tolist()]
        present = torch.tensor([i >= 0 for i in idx_list], device=rows.device)
        idx = torch.tensor([max(i, 0) for i in idx_list], device=rows.device, dtype=torch.long)
        if not bool(present.any()):
            return None, everyone
        identity = len(idx_list) == st.rows.numel() and idx_list == list(range(len(idx_list)))
        old = st if identity else _State(
            st.rows[idx], st.prompt[idx], st.blocks[idx], [k.index_select(0, idx) for k in st.keys],
            [v.index_select(0, idx) for v in st.values], st.raw.index_select(0, idx))
        same = present & (old.prompt == prompt).all(dim=1) & (old.blocks == blocks)
        return old, ~same


def _join(full: torch.Tensor, span: torch.Tensor, s: int, e: int) -> torch.Tensor:
    """`full` [b, H, L, D] with positions [s, e) replaced by `span` (a new tensor)."""
    if s == 0 and e == full.shape[2]:
        return span
    parts = [t for t in (full[:, :, :s], span, full[:, :, e:]) if t.shape[2]]
    return torch.cat(parts, dim=2)
