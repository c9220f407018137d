"""The absolute block grid of a block-causal decode (SDAR / TraDo, LLaDA 2.x).

A block-diffusion net was trained on blocks that start at multiples of the block length B
counted from the first real prompt token, so each row's blocks sit on its own grid:
position p is in block p // B, the first generation block is the partial block that holds
the prompt's tail, and the generation region ends on a block boundary.

The canvas puts every row's grid on the same columns: the prompt's whole blocks (its *head*)
are right-aligned before column H (left-padded), and the *region* that starts at column H
holds the prompt's tail (fixed, never decoded), the `gen_length` slots, and the extra slots up
to the row's last block boundary; columns past that boundary are off the row's grid. Region
block k is then canvas columns [H + kB, H + (k + 1)B) for every row, so all rows can work on
the same block with one window.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from parallelbench.models.protocols import ModelInputError

NEG_INF = float("-inf")


def block_length_for(model: Any, block_length: int | None) -> int:
    """The block length of a block-causal decode: the strategy's, else the model's default.
    Raises one ModelInputError line when it does not suit the model."""
    size = getattr(model, "block_size", None)
    if block_length is None:
        block_length = getattr(model, "default_block_length", None)
        if block_length is None:
            block_length = size
        if not isinstance(block_length, int) or isinstance(block_length, bool) or block_length < 1:
            raise ModelInputError(
                "this block-causal model states no default block length: give the strategy a block_length"
                + (f" (a multiple of its block size {size})" if size else "")
            )
    if size is not None and (block_length < 1 or block_length % int(size) != 0):
        raise ModelInputError(
            f"block_length={block_length} does not suit this model: it was trained on blocks of {size} tokens, "
            f"so block_length must be a positive multiple of {size} (e.g. {size} or {2 * int(size)})"
        )
    return int(block_length)


@dataclass
class BlockGrid:
    """Where each row's prompt and generation slots sit on a canvas of H + G columns."""

    block_length: int  # B
    gen_length: int  # g: slots returned per row
    head: torch.Tensor  # [n] prompt tokens in whole blocks (right-aligned before column H)
    tail: torch.Tensor  # [n] prompt tokens in the first generation block (region columns 0..tail-1)
    span: torch.Tensor  # [n] region columns on the row's grid: ceil((tail + g) / B) * B
    head_width: int  # H: the most head tokens of any row
    region_width: int  # G: the widest span (a multiple of B)

    @classmethod
    def build(cls, prompt_lengths: torch.Tensor, gen_length: int, block_length: int,
              host_lengths: "list[int] | None" = None) -> "BlockGrid":
        """The grid of prompts of `prompt_lengths` [n] tokens; `host_lengths`, the same lengths as
        Python ints when the caller has them, sizes the canvas without reading the device."""
        b = int(block_length)
        lengths = prompt_lengths.to(torch.long)
        head = torch.div(lengths, b, rounding_mode="floor") * b
        tail = lengths - head
        span = torch.div(tail + gen_length + b - 1, b, rounding_mode="floor") * b
        if host_lengths is not None:
            head_width = max((n // b * b for n in host_lengths), default=0)
            region_width = max((-(-(n % b + gen_length) // b) * b for n in host_lengths), default=0)
        else:
            head_width = int(head.max()) if head.numel() else 0
            region_width = int(span.max()) if span.numel() else 0
        return cls(b, int(gen_length), head, tail, span, head_width, region_width)

    @property
    def num_blocks(self) -> int:
        """Blocks of the region (the widest row's)."""
        return self.region_width // self.block_length

    @property
    def width(self) -> int:
        return self.head_width + self.region_width

    def region_columns(self, device: torch.device) -> torch.Tensor:
        return torch.arange(self.region_width, device=device).unsqueeze(0)

    def output_slots(self, device: torch.device) -> torch.Tensor:
        """[n, G] True at the `gen_length` slots each row returns."""
        j, tail = self.region_columns(device), self.tail.to(device).unsqueeze(1)
        return (j >= tail) & (j < tail + self.gen_length)

    def output_columns(self, device: torch.device) -> torch.Tensor:
        """[n, g] region column of each returned slot."""
        return self.tail.to(device).unsqueeze(1) + torch.arange(self.gen_length, device=device).unsqueeze(0)

    def layout(
        self, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor, template: torch.Tensor, pad_id: int, mask_id: int
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(canvas [n, H + G], editable [n, G], real [n, H + G], positions [n, H + G]).

        `prompt_ids` / `prompt_mask` are left-padded [n, P]; `template` [n, g] holds the slots'
        starting ids (mask_id where to generate). Region slots past g on the grid start masked;
        the prompt's tail and template-fixed slots are not editable. `real` is False on padding
        and off-grid columns; `positions` counts from each row's first real prompt token.
        """
        device = prompt_ids.device
        n, width = prompt_ids.shape
        h, g = self.head_width, self.region_width
        head, tail, span = self.head.to(device), self.tail.to(device), self.span.to(device)
        lengths = head + tail
        shift = (h - head) - (width - lengths)  # prompt column -> canvas column
        # each canvas column reads its prompt column (a gather: no nonzero, nothing read on the host)
        src = torch.arange(h + g, device=device).unsqueeze(0) - shift.unsqueeze(1)
        inside = (src >= 0) & (src < width)
        src = src.clamp(0, max(width - 1, 0))
        if width:
            real_prompt = inside & prompt_mask.gather(1, src)
            canvas = torch.where(real_prompt, prompt_ids.gather(1, src), int(pad_id))
        else:
            canvas = torch.full((n, h + g), int(pad_id), dtype=torch.long, device=device)
        j = self.region_columns(device)
        slots = self.output_slots(device)
        extra = (j >= tail.unsqueeze(1) + self.gen_length) & (j < span.unsqueeze(1))
        region = canvas[:, h:]
        region.copy_(torch.where(extra, int(mask_id), region))
        region.scatter_(1, self.output_columns(device), template.to(device=device, dtype=torch.long))
        editable = (slots & (region == int(mask_id))) | extra
        col = torch.arange(h + g, device=device).unsqueeze(0)
        start = (h - head).unsqueeze(1)  # canvas column of each row's first real token
        real = (col >= start) & (col < h + span.unsqueeze(1))
        positions = (col - start).clamp(min=0)
        return canvas, editable, real, positions

    def blocks_of(self, real: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """[n, H + G] absolute block of every column; -1 on left padding."""
        blk = torch.div(positions, self.block_length, rounding_mode="floor")
        pad = (~real) & (torch.arange(real.shape[1], device=real.device).unsqueeze(0) < self.head_width)
        return blk.masked_fill(pad, -1)


def block_causal_bias(real: torch.Tensor, blk: torch.Tensor, start: int, end: int, dtype=torch.float32) -> torch.Tensor:
    """[b, end - start, end] additive attention bias for queries at columns [start, end) over keys
    [0, end): 0 where key j is real and block(j) <= block(query), -inf elsewhere. Every query also
    sees itself, so padding and off-grid queries (whose outputs are never read) stay finite."""
    keys_real = real[:, :end].unsqueeze(1)
    see = keys_real & (blk[:, :end].unsqueeze(1) <= blk[:, start:end].unsqueeze(2))
    width = end - start
    q = torch.arange(width, device=real.device)
    see[:, q, start + q] = True
    return torch.zeros(see.shape, dtype=dtype, device=real.device).masked_fill_(~see, NEG_INF)
