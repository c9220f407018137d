"""Fast-dLLM KV caching (appendix E.2) behind the engine's plain `forward` calls.

At the start of each semi-AR block a *refresh* pass runs the whole sequence and keeps
every position's keys and values. Until the block changes, later steps recompute only
a window and read the rest from the cache:

- prefix cache: the window is [block start, end of sequence); the prompt and earlier
  blocks come from the cache;
- dual cache: the window is the active block only; the prefix *and* the suffix come
  from the cache.

Refreshes are ordinary forward calls, so the engine's NFE counts them (each step is one
NFE whether it refreshed or not); `refreshes` says how many of a row's NFEs were full
passes. Rows of a batch may sit in different blocks: the window spans from the
leftmost active block to the rightmost, and any row changing block triggers a refresh.
Positions outside the window get the logits of the latest pass that computed them.

Families with a logits shift (Dream) widen the window by the shift on the left, so
the first position of the block still gets a fresh logit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch

from parallelbench.models.hf.session import KV, Session


class CachedNet(Protocol):
    """What the cache needs of its net (`net.HFDiffusionNet` provides it)."""

    mask_id: int
    logit_shift: int

    def positions(self, attention_mask: torch.Tensor) -> torch.Tensor: ...

    def kv_forward(
        self, ids: torch.Tensor, *, positions: torch.Tensor, key_mask: torch.Tensor, past: KV | None, want_kv: bool
    ) -> tuple[torch.Tensor, KV | None]: ...


@dataclass
class _State:
    rows: torch.Tensor  # [b] original row ids the tensors below are aligned with
    prompt: torch.Tensor  # [b, P] prompt ids (a different prompt means a new decode)
    blocks: torch.Tensor  # [b] active block of each row at the last refresh
    positions: torch.Tensor  # [b, L]
    kv: KV  # every position's keys/values at the last refresh
    raw: torch.Tensor  # [b, L, V] latest raw logits
    start: int  # window [start, end)
    end: int


class BlockKVCache:
    def __init__(self, net: CachedNet, mode: str):
        if mode not in ("prefix", "dual"):
            raise ValueError(f"cache mode {mode!r} is invalid: use prefix or dual")
        self.net = net
        self.mode = mode
        self.state: _State | None = None
        self.refreshes: dict[int, int] = {}

    def reset(self) -> None:
        self.state = None
        self.refreshes = {}

    def forward(self, canvas: torch.Tensor, attention_mask: torch.Tensor, rows: torch.Tensor, session: Session) -> torch.Tensor:
        b, length = canvas.shape
        gen = session.gen_length
        prompt_len = length - gen
        if prompt_len < 0:
            raise ValueError(f"canvas of length {length} is shorter than the session's gen_length={gen}")
        block_len = session.block_length or gen
        blocks = active_blocks(canvas[:, prompt_len:], self.net.mask_id, block_len)
        idx = self._aligned(rows, canvas[:, :prompt_len], length)
        if idx is None or not torch.equal(self.state.blocks.index_select(0, idx), blocks):
            return self._refresh(canvas, attention_mask, rows, blocks, prompt_len, block_len)
        return self._step(canvas, attention_mask, idx)

    # ------------------------------------------------------------------ internals
    def _aligned(self, rows: torch.Tensor, prompt: torch.Tensor, length: int) -> torch.Tensor | None:
        """Indices of `rows` in the cached state, or None when the cache cannot serve them."""
        st = self.state
        if st is None or st.positions.shape[1] != length or st.prompt.shape[1] != prompt.shape[1]:
            return None
        where = {int(r): i for i, r in enumerate(st.rows.tolist())}
        if any(int(r) not in where for r in rows.tolist()):
            return None
        idx = torch.tensor([where[int(r)] for r in rows.tolist()], device=rows.device, dtype=torch.long)
        if not torch.equal(st.prompt.index_select(0, idx), prompt):
            return None
        return idx

    def _refresh(self, canvas, attention_mask, rows, blocks, prompt_len, block_len) -> torch.Tensor:
        positions = self.net.positions(attention_mask)
        raw, kv = self.net.kv_forward(canvas, positions=positions, key_mask=attention_mask, past=None, want_kv=True)
        length = canvas.shape[1]
        start = prompt_len + int(blocks.min()) * block_len - self.net.logit_shift
        end = length if self.mode == "prefix" else prompt_len + (int(blocks.max()) + 1) * block_len
        start, end = max(0, min(start, length - 1)), max(1, min(end, length))
        self.state = _State(rows.clone(), canvas[:, :prompt_len].clone(), blocks.clone(), positions, kv, raw, start, end)
        for r in rows.tolist():
            self.refreshes[int(r)] = self.refreshes.get(int(r), 0) + 1
        return raw

    def _step(self, canvas, attention_mask, idx) -> torch.Tensor:
        st = self.state
        if idx.numel() != st.rows.numel() or not torch.equal(idx, torch.arange(idx.numel(), device=idx.device)):
            st.rows, st.prompt, st.blocks = st.rows[idx], st.prompt[idx], st.blocks[idx]
            st.positions, st.raw = st.positions[idx], st.raw[idx]
            st.kv = [(k.index_select(0, idx), v.index_select(0, idx)) for k, v in st.kv]
        s, e = st.start, st.end
        past = [(_cut(k, s, e), _cut(v, s, e)) for k, v in st.kv]
        key_mask = torch.cat([attention_mask[:, :s], attention_mask[:, e:], attention_mask[:, s:e]], dim=1)
        window, _ = self.net.kv_forward(
            canvas[:, s:e], positions=st.positions[:, s:e], key_mask=key_mask, past=past, want_kv=False
        )
        st.raw = torch.cat([st.raw[:, :s], window.to(st.raw.dtype), st.raw[:, e:]], dim=1)
        return st.raw


def _cut(t: torch.Tensor, start: int, end: int) -> torch.Tensor:
    """Cached keys or values outside the window [start, end) along the sequence dim (-2)."""
    if end >= t.shape[-2]:
        return t[..., :start, :]
    return torch.cat([t[..., :start, :], t[..., end:, :]], dim=-2)


def active_blocks(gen: torch.Tensor, mask_id: int, block_len: int) -> torch.Tensor:
    """[b] leftmost block of the generation region that still holds a masked position."""
    g = gen.shape[1]
    idx = torch.arange(g, device=gen.device).unsqueeze(0)
    first = torch.where(gen == mask_id, idx, g).min(dim=1).values
    return torch.clamp(first, max=g - 1) // block_len
