"""DUS, the dilated unmasking scheduler: a fixed coarse-to-fine plan per block.

Within a block of size B the positions are split into about log2(B) groups of
non-adjacent positions (for B = 8: {0, 4}, {2, 6}, {1, 3, 5, 7}); one model call
commits one whole group, so a block costs O(log B) calls instead of O(B).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from parallelbench.decoding.strategy import DecodeOptions, Strategy, register_strategy
from parallelbench.decoding.view import Decision, StepView


def dus_levels(block_size: int) -> list[int]:
    """Group index of each offset in a block: offsets divisible by a coarser stride come first."""
    size = 1
    while size < block_size:
        size *= 2
    levels = []
    for offset in range(block_size):
        if size == 1 or offset % (size // 2) == 0:
            levels.append(0)
            continue
        stride, level = size // 2, 0
        while offset % stride:
            stride //= 2
            level += 1
        levels.append(level)
    return levels


def dus_plan(block_size: int) -> list[list[int]]:
    """The groups of offsets, in decoding order."""
    levels = dus_levels(block_size)
    return [[o for o, lv in enumerate(levels) if lv == g] for g in range(max(levels) + 1)]


@dataclass
class DusOptions(DecodeOptions):
    block_length: int | None = 8  # the DUS block B: each costs ceil(log2 B) calls


@register_strategy("dus")
class DilatedUnmasking(Strategy):
    description = "DUS: a fixed coarse-to-fine plan, about log2(block) groups of spread-out positions per block"
    Options = DusOptions
    focus = "candidates"
    commits_in_candidates = True

    def max_commits_per_row(self) -> int | None:
        size = self.options.block_length
        return max(len(group) for group in dus_plan(size)) if size else None

    def _level_of(self, view: StepView) -> tuple[torch.Tensor, int]:
        """[G] group of each position and the number of groups, built once per shape."""
        key = (view.block_length, view.gen_length, str(view.device))
        cache = self.__dict__.setdefault("_levels", {})
        if key not in cache:
            levels = dus_levels(view.block_length)
            offsets = torch.arange(view.gen_length) % view.block_length
            cache[key] = (torch.tensor(levels)[offsets].to(view.device), max(levels) + 1)
        return cache[key]

    def step(self, view: StepView) -> Decision:
        level_of, big = self._level_of(view)
        cand = view.candidates
        current = torch.where(cand, level_of.unsqueeze(0), big).amin(dim=1)
        return Decision(commit=cand & (level_of.unsqueeze(0) == current.unsqueeze(1)))
