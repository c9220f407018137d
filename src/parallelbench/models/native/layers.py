"""The bidirectional Llama-style transformer every native family shares.

LLaDA, Dream, SDAR and LLaDA 2.0 are the same computation under different names: pre-norm
blocks of RMSNorm -> q/k/v projections (optionally one fused matrix, optionally a per-head
RMSNorm of q and k) -> rotary embeddings (optionally on a leading part of each head) ->
attention -> output projection, then RMSNorm -> SiLU(gate) * up -> down (or a mixture of
such experts, `moe.MixtureOfExperts`), a final RMSNorm and a vocabulary head. What differs
(sizes, biases, grouped kv heads, RoPE precision, tied head, optional input/logit scaling,
experts) is an `ArchSpec`; the family modules map config fields and tensor names.

Attention goes through `scaled_dot_product_attention`. Padding is handled per row: left
pads are masked as keys and position ids count from each row's first real token, so a row
gets the same logits alone and in any padded batch. A `kv_hook` lets the block cache swap
in cached keys/values per layer without the transformer knowing about caches, and
`forward_cached` runs a window of columns against the exact block-causal KV cache
(`block_cache.BlockKV`) of block-diffusion families.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from parallelbench.models.native.block_cache import BlockKV
from parallelbench.models.native.moe import MixtureOfExperts, MoESpec

KVHook = Callable[[int, torch.Tensor, torch.Tensor], "tuple[torch.Tensor, torch.Tensor]"]


@dataclass(frozen=True)
class ArchSpec:
    family: str
    hidden: int
    heads: int
    kv_heads: int
    layers: int
    ffn: int
    embed_rows: int  # rows of the input embedding (LLaDA: embedding_size, may exceed vocab_size)
    out_size: int  # logits width
    eps: float
    rope_theta: float
    qkv_bias: bool
    other_bias: bool  # attention output, MLP and head biases (LLaDA include_bias)
    norm_bias: bool
    tie: bool
    rope_fp32: bool  # rotate in float32 (LLaDA rope_full_precision) or in the model dtype (Dream)
    input_scale: float = 1.0  # LLaDA input_emb_norm: embeddings times sqrt(d_model)
    logit_scale: float = 1.0  # LLaDA scale_logits: logits times 1/sqrt(d_model)
    explicit_head_dim: int | None = None  # config head_dim, when it is not hidden // heads (SDAR, LLaDA 2)
    qk_norm: bool = False  # RMSNorm over each head of q and k before RoPE (Qwen3 / SDAR, LLaDA 2)
    rope_dims: int | None = None  # rotate only the first rope_dims of each head (LLaDA 2 partial_rotary_factor)
    norm_weight_fp32: bool = False  # RMSNorm weight applied in float32 before the cast (SDAR's fused kernel)
    fused_qkv: bool = False  # one [q; k; v] projection (LLaDA 2 query_key_value)
    o_bias: bool | None = None  # attention output bias (None: other_bias)
    moe: MoESpec | None = None  # mixture-of-experts MLP in layers >= dense_layers
    dense_layers: int = 0  # LLaDA 2 first_k_dense_replace: the first layers keep a dense MLP

    @property
    def head_dim(self) -> int:
        return self.explicit_head_dim or self.hidden // self.heads


class Linear(nn.Linear):
    """nn.Linear without random init: weights always come from a checkpoint (or `build_random`),
    and init on the meta device would import torch's compiler stack for nothing."""

    def reset_parameters(self) -> None:
        pass


class Embedding(nn.Embedding):
    def reset_parameters(self) -> None:
        pass


class RMSNorm(nn.Module):
    """Normalise in float32, cast back, then scale (LLaDA's, Dream's, LLaDA 2's order of operations);
    with `weight_fp32`, scale in float32 and cast once (SDAR's fused kernel)."""

    def __init__(self, size: int, eps: float, bias: bool, weight_fp32: bool = False):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(size))
        self.bias = nn.Parameter(torch.zeros(size)) if bias else None
        self.weight_fp32 = weight_fp32

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.weight_fp32:
            return F.rms_norm(x.float(), (x.shape[-1],), self.weight.float(), eps=self.eps).to(x.dtype)
        return rms_norm(x, self.weight, self.bias, self.eps)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, eps: float) -> torch.Tensor:
    """x * rsqrt(mean(x^2) + eps) in float32, cast back, times weight (F.rms_norm: one fused op on GPUs)."""
    y = weight * F.rms_norm(x.float(), (x.shape[-1],), eps=eps).to(x.dtype)
    return y + bias if bias is not None else y


class Rotary(nn.Module):
    """Rotary embeddings (rotate-half layout) for explicit per-row position ids."""

    def __init__(self, head_dim: int, theta: float, fp32: bool):
        """`head_dim` here is the number of rotated dimensions (all of a head, or its leading part)."""
        super().__init__()
        # built on the CPU even inside a meta-device context; moved with the module
        inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32, device="cpu") / head_dim))
        self.register_buffer("inv_freq", inv, persistent=False)
        self.fp32 = fp32

    def tables(self, positions: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and signed sin [B, 1, L, head_dim] for positions [B, L] (float32, or `dtype` when not fp32).

        The sin table's first half is negated, so `rotate` needs only a roll of x (no negation)."""
        freqs = positions.to(torch.float32).unsqueeze(-1) * self.inv_freq.to(positions.device)
        cos = torch.cat((freqs, freqs), dim=-1).unsqueeze(1).cos()
        sin = freqs.sin().unsqueeze(1)
        sin = torch.cat((-sin, sin), dim=-1)  # the rotate-half sign folded in: see `rotate`
        if not self.fp32:
            cos, sin = cos.to(dtype), sin.to(dtype)
        return cos, sin


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """RoPE in the precision of `cos` (float32 tables rotate in float32), result in x's dtype.
    Tables narrower than the head rotate its leading dimensions and pass the rest through."""
    if cos.shape[-1] < x.shape[-1]:
        part = cos.shape[-1]
        return torch.cat([rotate(x[..., :part], cos, sin), x[..., part:]], dim=-1)
    xr = x.to(cos.dtype)
    # rotate-half: (x1, x2) -> (-x2, x1); the minus lives in the signed sin table, so a roll suffices
    return (xr * cos + torch.roll(xr, xr.shape[-1] // 2, dims=-1) * sin).to(x.dtype)


def qkv_part(x, norm_w, norm_b, eps: float, wq, bq, wk, bk, wv, bv, cos, sin, heads: int, kv_heads: int):
    """Pre-attention of one layer: RMSNorm, q/k/v projections, RoPE -> [B, heads, L, D] tensors.

    A free function of tensors (not a method) so one `torch.compile` serves every layer."""
    b, length, _ = x.shape
    y = rms_norm(x, norm_w, norm_b, eps)
    d = wq.shape[0] // heads
    q = F.linear(y, wq, bq).view(b, length, heads, d).transpose(1, 2)
    k = F.linear(y, wk, bk).view(b, length, kv_heads, d).transpose(1, 2)
    v = F.linear(y, wv, bv).view(b, length, kv_heads, d).transpose(1, 2)
    return rotate(q, cos, sin), rotate(k, cos, sin), v


def mlp_part(x, att, wo, bo, norm_w, norm_b, eps: float, wg, bg, wu, bu, wd, bd):
    """Post-attention of one layer: output projection + residual, RMSNorm, SiLU(gate) * up, down + residual."""
    b, length = x.shape[:2]
    x = x + F.linear(att.transpose(1, 2).reshape(b, length, -1), wo, bo)
    y = rms_norm(x, norm_w, norm_b, eps)
    return x + F.linear(F.silu(F.linear(y, wg, bg)) * F.linear(y, wu, bu), wd, bd)


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """SDPA over [B, H, Lq, D] queries and [B, Hkv, Lk, D] keys/values (grouped heads expanded lazily)."""
    groups = q.shape[1] // k.shape[1]
    if groups > 1:
        if mask is None:
            return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        b, hk, lk, d = k.shape
        k = k[:, :, None].expand(b, hk, groups, lk, d).reshape(b, hk * groups, lk, d)
        v = v[:, :, None].expand(b, hk, groups, lk, d).reshape(b, hk * groups, lk, d)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


class Block(nn.Module):
    def __init__(self, spec: ArchSpec, index: int = 0):
        super().__init__()
        h, d = spec.hidden, spec.head_dim
        self.heads, self.kv_heads, self.head_dim = spec.heads, spec.kv_heads, d
        self.attn_norm = RMSNorm(h, spec.eps, spec.norm_bias, spec.norm_weight_fp32)
        self.fused = spec.fused_qkv
        if spec.fused_qkv:
            self.qkv_proj = Linear(h, (spec.heads + 2 * spec.kv_heads) * d, bias=spec.qkv_bias)
        else:
            self.q = Linear(h, spec.heads * d, bias=spec.qkv_bias)
            self.k = Linear(h, spec.kv_heads * d, bias=spec.qkv_bias)
            self.v = Linear(h, spec.kv_heads * d, bias=spec.qkv_bias)
        self.q_norm = RMSNorm(d, spec.eps, False, spec.norm_weight_fp32) if spec.qk_norm else None
        self.k_norm = RMSNorm(d, spec.eps, False, spec.norm_weight_fp32) if spec.qk_norm else None
        self.o = Linear(spec.heads * d, h, bias=spec.other_bias if spec.o_bias is None else spec.o_bias)
        self.mlp_norm = RMSNorm(h, spec.eps, spec.norm_bias, spec.norm_weight_fp32)
        if spec.moe is not None and index >= spec.dense_layers:
            self.moe = MixtureOfExperts(h, spec.moe)
        else:
            self.moe = None
            self.gate = Linear(h, spec.ffn, bias=spec.other_bias)
            self.up = Linear(h, spec.ffn, bias=spec.other_bias)
            self.down = Linear(spec.ffn, h, bias=spec.other_bias)

    def qkv(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, fn=None):
        """Pre-attention through the submodules (so adapters wrapping q/k/v take part), or through
        `fn` (a compiled `qkv_part`) with the weights as arguments."""
        if fn is not None:
            n = self.attn_norm
            return fn(x, n.weight, n.bias, n.eps, self.q.weight, self.q.bias, self.k.weight, self.k.bias,
                      self.v.weight, self.v.bias, cos, sin, self.heads, self.kv_heads)
        b, length, _ = x.shape
        y = self.attn_norm(x)
        if self.fused:  # rows [q heads; k heads; v heads] of one projection
            qkv = self.qkv_proj(y).view(b, length, self.heads + 2 * self.kv_heads, self.head_dim)
            q, k, v = qkv.split([self.heads, self.kv_heads, self.kv_heads], dim=2)
        else:
            q = self.q(y).view(b, length, self.heads, self.head_dim)
            k = self.k(y).view(b, length, self.kv_heads, self.head_dim)
            v = self.v(y).view(b, length, self.kv_heads, self.head_dim)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        return rotate(q, cos, sin), rotate(k, cos, sin), v

    def mlp(self, x: torch.Tensor, att: torch.Tensor, fn=None) -> torch.Tensor:
        if fn is not None:
            n = self.mlp_norm
            return fn(x, att, self.o.weight, self.o.bias, n.weight, n.bias, n.eps, self.gate.weight,
                      self.gate.bias, self.up.weight, self.up.bias, self.down.weight, self.down.bias)
        b, length = x.shape[:2]
        x = x + self.o(att.transpose(1, 2).reshape(b, length, -1))
        y = self.mlp_norm(x)
        if self.moe is not None:
            return x + self.moe(y)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))


class DiffusionTransformer(nn.Module):
    """Raw logits of a bidirectional masked-diffusion transformer (no logit shift: the net applies it)."""

    supports_attention_bias = True

    def __init__(self, spec: ArchSpec):
        super().__init__()
        self.spec = spec
        self.embed = Embedding(spec.embed_rows, spec.hidden)
        self.layers = nn.ModuleList(Block(spec, i) for i in range(spec.layers))
        self.norm = RMSNorm(spec.hidden, spec.eps, spec.norm_bias, spec.norm_weight_fp32)
        self.head = None if spec.tie else Linear(spec.hidden, spec.out_size, bias=spec.other_bias)
        self.rotary = Rotary(spec.rope_dims or spec.head_dim, spec.rope_theta, spec.rope_fp32)
        self._qkv_fn = self._mlp_fn = None  # eager: through the submodules

    def compile_parts(self) -> None:
        """torch.compile the per-layer pre-attention and MLP parts (fuses norm, RoPE, SiLU * up);
        one compiled function serves every layer (weights are arguments, so projections wrapped
        by adapters such as LoRA would be bypassed: refused)."""
        s = self.spec
        if s.fused_qkv or s.qk_norm or s.moe is not None or s.rope_dims or s.norm_weight_fp32:
            raise ValueError(f"compile=true covers the LLaDA and Dream layouts only, not {s.family}; "
                             "leave compile off for this model")
        wrapped = [f"layers.{i}.{n}" for i, blk in enumerate(self.layers)
                   for n in ("q", "k", "v", "o", "gate", "up", "down") if type(getattr(blk, n)) is not Linear]
        if wrapped:
            raise ValueError(f"compile=true needs plain projections; {wrapped[0]} is wrapped (an adapter?)")
        self._qkv_fn = torch.compile(qkv_part, dynamic=True)
        self._mlp_fn = torch.compile(mlp_part, dynamic=True)

    def forward(self, ids: torch.Tensor, attention_mask: torch.Tensor | None = None, *,
                position_ids: torch.Tensor | None = None, attention_bias: torch.Tensor | None = None,
                key_mask: torch.Tensor | None = None, kv_hook: KVHook | None = None,
                bias_as_given: bool = False) -> torch.Tensor:
        """Raw logits [B, L, out_size] for `ids` [B, L].

        attention_mask [B, L] (True = real token, False = left pad): pads are hidden as keys and,
        unless position_ids are given, positions count from each row's first real token.
        attention_bias [B, L, L] is added to every head's scores. With `kv_hook`, each layer's
        fresh keys/values go through the hook, which returns the keys/values to attend to
        (`key_mask` [B, Lk] then describes those keys). With `bias_as_given`, the bias alone decides
        who sees whom (the block-causal contract: the caller folds padding into it).
        """
        b, length = ids.shape
        if attention_mask is None:
            attention_mask = torch.ones((b, length), dtype=torch.bool, device=ids.device)
        attention_mask = attention_mask.bool()
        if position_ids is None:
            position_ids = default_positions(attention_mask)
        keys = attention_mask if key_mask is None else key_mask.bool()
        if bias_as_given and attention_bias is not None:
            mask = attention_bias.to(self.embed.weight.dtype)[:, None]
        else:
            mask = attention_mask_for(keys, attention_bias, length, self.embed.weight.dtype)
        x = self.embed(ids)
        if self.spec.input_scale != 1.0:
            x = x * self.spec.input_scale
        cos, sin = self.rotary.tables(position_ids, x.dtype)
        for i, layer in enumerate(self.layers):
            q, k, v = layer.qkv(x, cos, sin, self._qkv_fn)
            if kv_hook is not None:
                k, v = kv_hook(i, k, v)
            x = layer.mlp(x, attend(q, k, v, mask), self._mlp_fn)
        return self._logits(x)

    def forward_cached(self, ids: torch.Tensor, kv: BlockKV, rows: torch.Tensor, start: int,
                       position_ids: torch.Tensor, attention_bias: torch.Tensor,
                       store: torch.Tensor | None = None) -> torch.Tensor:
        """Raw logits [b, W, out_size] of canvas columns [start, start + W) of the kv rows `rows`.

        The window's queries attend to the stored keys/values of columns [0, start) and to the
        window's own, with `attention_bias` [b, W, start + W] added as given; afterwards the
        keys/values of the positions where `store` [b, W] is True are written into `kv`.
        """
        b, width = ids.shape
        if attention_bias.shape != (b, width, start + width):
            raise ValueError(f"attention_bias must have shape {[b, width, start + width]}, "
                             f"got {list(attention_bias.shape)}")
        mask = attention_bias.to(self.embed.weight.dtype)[:, None]
        x = self.embed(ids)
        if self.spec.input_scale != 1.0:
            x = x * self.spec.input_scale
        cos, sin = self.rotary.tables(position_ids, x.dtype)
        plan = kv.plan(rows, start, width, store)
        for i, layer in enumerate(self.layers):
            q, k, v = layer.qkv(x, cos, sin)
            keys, values = kv.with_prefix(i, plan, k, v)
            kv.store(i, plan, k, v)
            x = layer.mlp(x, attend(q, keys, values, mask))
        return self._logits(x)

    def _logits(self, x: torch.Tensor) -> torch.Tensor:
        x = self.norm(x)
        logits = F.linear(x, self.embed.weight) if self.head is None else self.head(x)
        if self.spec.logit_scale != 1.0:
            logits = logits * self.spec.logit_scale
        return logits

    def new_kv_cache(self, batch: int, length: int) -> BlockKV:
        """Zeroed per-layer key/value buffers for `batch` rows x `length` columns (zeros, not
        empty memory: columns never stored are masked by the caller's bias, and masked zeros
        cannot turn into NaN the way uninitialised memory can)."""
        w = self.embed.weight
        return BlockKV.zeros(len(self.layers), batch, self.spec.kv_heads, length, self.spec.head_dim,
                             dtype=w.dtype, device=w.device)


def default_positions(attention_mask: torch.Tensor) -> torch.Tensor:
    """[B, L] position ids counting from each row's first real token (pads get 0)."""
    return (attention_mask.long().cumsum(-1) - 1).clamp(min=0)


def attention_mask_for(keys: torch.Tensor, bias: torch.Tensor | None, queries: int,
                       dtype: torch.dtype) -> torch.Tensor | None:
    """SDPA mask: None when nothing is hidden, a boolean key mask for padding, a float mask with a bias."""
    if bias is None:
        if bool(keys.all()):
            return None
        return keys[:, None, None, :]
    if bias.shape != (keys.shape[0], queries, keys.shape[1]):
        raise ValueError(f"attention_bias must have shape {[keys.shape[0], queries, keys.shape[1]]}, "
                         f"got {list(bias.shape)}")
    out = bias.to(dtype).masked_fill(~keys[:, None, :], float("-inf"))
    return out[:, None]
