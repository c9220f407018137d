"""A mixture-of-experts MLP with grouped routing and shared experts (LLaDA 2.0's layout).

Routing, per token, in float32: router logits -> scores (sigmoid or softmax) -> plus the expert
bias for the *choice* only -> group-limited top-k (experts are split into `groups`; a group's
score is the sum of its two best experts; only the `topk_groups` best groups compete) -> the
chosen experts' unbiased scores, normalised to sum 1 (when the config says so) and times the
routed scaling factor. Output: the weighted sum (float32) of the chosen experts' SwiGLU outputs,
cast back, plus the shared experts' SwiGLU output.

Dispatch has no Python loop over experts and reads nothing on the host: the (token, expert)
pairs are sorted by expert, each expert's share is found by a device-side search of the sorted
ids, and every expert's rows go through one grouped matrix multiply (`F.grouped_mm`, offsets
on the device), or, where that is not available (float32 on a GPU), one batched multiply over
an [experts, tokens, d] buffer of fixed capacity. No shape depends on the routing, so a MoE
forward can be captured as a CUDA graph.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

SCORE_FUNCTIONS = ("sigmoid", "softmax")


@dataclass(frozen=True)
class MoESpec:
    experts: int
    top_k: int
    ffn: int  # moe_intermediate_size (one routed expert)
    shared_ffn: int  # moe_intermediate_size * num_shared_experts (0: none)
    groups: int  # n_group
    topk_groups: int  # topk_group
    scaling: float  # routed_scaling_factor
    score: str  # "sigmoid" or "softmax"
    normalize: bool  # norm_topk_prob


class MixtureOfExperts(nn.Module):
    def __init__(self, hidden: int, spec: MoESpec):
        super().__init__()
        self.spec = spec
        e = spec.experts
        self.router = nn.Parameter(torch.empty(e, hidden))
        self.expert_bias = nn.Parameter(torch.zeros(e))  # checkpoints without one keep zeros
        self.gate_w = nn.Parameter(torch.empty(e, spec.ffn, hidden))
        self.up_w = nn.Parameter(torch.empty(e, spec.ffn, hidden))
        self.down_w = nn.Parameter(torch.empty(e, hidden, spec.ffn))
        if spec.shared_ffn:
            self.shared_gate = nn.Parameter(torch.empty(spec.shared_ffn, hidden))
            self.shared_up = nn.Parameter(torch.empty(spec.shared_ffn, hidden))
            self.shared_down = nn.Parameter(torch.empty(hidden, spec.shared_ffn))

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        shape = y.shape
        x = y.reshape(-1, shape[-1])
        idx, weight = self.route(x)
        out = self.experts(x, idx)  # [N, k, d] in x's dtype
        mixed = (out.float() * weight.unsqueeze(-1)).sum(dim=1).to(x.dtype)
        if self.spec.shared_ffn:
            mixed = mixed + F.linear(F.silu(F.linear(x, self.shared_gate)) * F.linear(x, self.shared_up),
                                     self.shared_down)
        return mixed.view(shape)

    def route(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(expert ids [N, top_k], float32 weights [N, top_k]) for tokens x [N, d]."""
        s = self.spec
        logits = F.linear(x.float(), self.router.float())
        scores = torch.sigmoid(logits) if s.score == "sigmoid" else torch.softmax(logits, dim=-1)
        choice = scores + self.expert_bias.float()
        if s.groups > 1 and s.topk_groups < s.groups:
            n = choice.shape[0]
            per = s.experts // s.groups
            grouped = choice.view(n, s.groups, per)
            group_score = grouped.topk(min(2, per), dim=-1).values.sum(dim=-1)  # [N, groups]
            keep = torch.zeros_like(group_score, dtype=torch.bool)
            keep.scatter_(1, group_score.topk(s.topk_groups, dim=-1).indices, True)
            choice = grouped.masked_fill(~keep.unsqueeze(-1), float("-inf")).view(n, s.experts)
        idx = choice.topk(s.top_k, dim=-1).indices
        weight = scores.gather(1, idx)
        if s.normalize and s.top_k > 1:
            weight = weight / (weight.sum(dim=-1, keepdim=True) + 1e-20)
        return idx, weight * s.scaling

    def experts(self, x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        """Each token's chosen experts' SwiGLU outputs [N, top_k, d], sorted-by-expert dispatch."""
        n, k = idx.shape
        flat = idx.reshape(-1)
        order = torch.argsort(flat, stable=True)
        by_expert = flat[order]
        rows = x[order // k]
        # where each expert's rows end in the sorted order: on the device, no bincount
        ends = torch.searchsorted(by_expert, torch.arange(self.spec.experts, device=x.device), right=True)
        hidden = F.silu(expert_matmul(rows, self.gate_w, by_expert, ends, n)) * \
            expert_matmul(rows, self.up_w, by_expert, ends, n)
        done = expert_matmul(hidden, self.down_w, by_expert, ends, n)
        out = torch.empty_like(done)
        out[order] = done
        return out.view(n, k, -1)


_GROUPED_MM_FAILED: set[str] = set()  # device types where F.grouped_mm refused to run


def expert_matmul(rows: torch.Tensor, weight: torch.Tensor, by_expert: torch.Tensor, ends: torch.Tensor,
                  capacity: int) -> torch.Tensor:
    """rows [A, in] sorted by expert (`by_expert` [A]; `ends` [E]: where each expert's rows end)
    times their expert's weight [E, out, in] -> [A, out].

    One grouped GEMM with device-side offsets; where that kernel is not available, one batched
    GEMM over an [experts, capacity, in] buffer of a fixed capacity (`capacity`: the tokens, as
    no token picks an expert twice), so no shape ever depends on the routing."""
    if _grouped_mm_ok(rows):
        if torch.compiler.is_compiling():
            if rows.dtype == torch.bfloat16:  # torch.compile's shape rule for the grouped kernel takes bf16 only
                return F.grouped_mm(rows, weight.transpose(1, 2), offs=ends.to(torch.int32))
        else:
            try:
                return F.grouped_mm(rows, weight.transpose(1, 2), offs=ends.to(torch.int32))
            except RuntimeError:  # a device / dtype the grouped kernel does not cover: pad instead
                _GROUPED_MM_FAILED.add(rows.device.type)
    starts = torch.cat([ends.new_zeros(1), ends[:-1]])
    slots = torch.arange(by_expert.shape[0], device=rows.device) - starts[by_expert]
    buf = rows.new_zeros(weight.shape[0], capacity, rows.shape[1])
    buf[by_expert, slots] = rows
    return torch.bmm(buf, weight.transpose(1, 2))[by_expert, slots]


def _grouped_mm_ok(rows: torch.Tensor) -> bool:
    if not hasattr(F, "grouped_mm") or rows.device.type in _GROUPED_MM_FAILED:
        return False
    if rows.device.type == "cpu":
        return True
    return rows.device.type == "cuda" and rows.dtype == torch.bfloat16
