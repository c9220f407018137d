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
gets the same logits alone and in any padded batch. `forward_window` runs a span of columns
against the per-row prefix/dual cache of LLaDA and Dream (`cache.py`), `forward_cached` a
window against the exact block-causal KV cache (`block_cache.BlockKV`) of block-diffusion
families; neither reads a device value on the host, and `compile=true` compiles each whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from parallelbench.models.native.block_cache import BlockKV, prefix_and_window, store_window
from parallelbench.models.native.cache import restore_kv, window_kv
from parallelbench.models.native.moe import MixtureOfExperts, MoESpec


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

    def qkv(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
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

    def mlp(self, x: torch.Tensor, att: torch.Tensor) -> torch.Tensor:
        b, length = x.shape[:2]
        x = x + self.o(att.transpose(1, 2).reshape(b, length, -1))
        y = self.mlp_norm(x)
        if self.moe is not None:
            return x + self.moe(y)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))



RECOMPILE_LIMIT = 128  # compiled graphs per forward of a compile=true model (see enable_compile)


class DiffusionTransformer(nn.Module):
    """Raw logits of a bidirectional masked-diffusion transformer (no logit shift: the net applies it).

    Three whole forwards, each a pure function of tensors and host integers (no device value is
    read on the host): `forward` (plain or with an attention bias), `forward_window` (a span of
    columns against the per-row prefix/dual cache, `cache.py`) and `forward_cached` (a window
    against the exact block KV cache, `block_cache.py`). `enable_compile()` runs each through
    `torch.compile(fullgraph=True)` (a graph break is an error), on CUDA as CUDA graphs.
    """

    supports_attention_bias = True

    def __init__(self, spec: ArchSpec):
        super().__init__()
        self.spec = spec
        self.embed = Embedding(spec.embed_rows, spec.hidden)
        self.layers = nn.ModuleList(Block(spec, i) for i in range(spec.layers))
        self.norm = RMSNorm(spec.hidden, spec.eps, spec.norm_bias, spec.norm_weight_fp32)
        self.head = None if spec.tie else Linear(spec.hidden, spec.out_size, bias=spec.other_bias)
        self.rotary = Rotary(spec.rope_dims or spec.head_dim, spec.rope_theta, spec.rope_fp32)
        self._compiled: dict[str, Callable] | None = None  # eager until enable_compile()
        self._cuda_graphs = False

    # ------------------------------------------------------------------ compile=true
    @property
    def compiled(self) -> bool:
        return self._compiled is not None

    def enable_compile(self, *, dynamic: bool | None = None, backend: str = "inductor") -> None:
        """compile=true: each whole forward through torch.compile(fullgraph=True); on CUDA with
        mode="reduce-overhead", i.e. replayed as CUDA graphs (one per shape; the KV buffers are
        marked static so a replay reads and writes them in place). The first calls of each
        shape compile; outputs are copied out of the graph's memory before they are returned.
        `dynamic` / `backend` go to torch.compile (tests: dynamic=True compiles each path once)."""
        if self._compiled is not None:
            return
        # a decode meets a few dozen shapes per forward (rows finishing, the cache window's start and
        # width, storing or not); under fullgraph=True torch's default of 8 recompiles is a hard error
        dynamo_config = torch._dynamo.config
        dynamo_config.recompile_limit = max(dynamo_config.recompile_limit, RECOMPILE_LIMIT)
        dynamo_config.accumulated_recompile_limit = max(dynamo_config.accumulated_recompile_limit, 8 * RECOMPILE_LIMIT)
        self._cuda_graphs = self.embed.weight.device.type == "cuda" and backend == "inductor"
        options: dict = {"fullgraph": True, "dynamic": dynamic, "backend": backend}
        if self._cuda_graphs:
            options["mode"] = "reduce-overhead"
        self._compiled = {name: torch.compile(getattr(self, name), **options)
                          for name in ("_run", "_run_window", "_run_cached")}

    def mark_static(self, tensors: list[torch.Tensor]) -> None:
        """Cache buffers a CUDA graph reads and writes in place (their addresses must not change)."""
        if self._cuda_graphs:
            for t in tensors:
                torch._dynamo.mark_static_address(t)

    def _call(self, name: str, *args):
        if self._compiled is None:
            return getattr(self, name)(*args)
        if self._cuda_graphs:
            torch.compiler.cudagraph_mark_step_begin()
            return self._compiled[name](*args).clone()  # the graph's output buffer is reused by its next replay
        return self._compiled[name](*args)

    # ------------------------------------------------------------------ the three forwards
    def forward(self, ids: torch.Tensor, attention_mask: torch.Tensor | None = None, *,
                position_ids: torch.Tensor | None = None, attention_bias: torch.Tensor | None = None,
                bias_as_given: bool = False) -> torch.Tensor:
        """Raw logits [B, L, out_size] for `ids` [B, L].

        attention_mask [B, L] (True = real token, False = left pad; None: no padding): pads are
        hidden as keys and, unless position_ids are given, positions count from each row's first
        real token. attention_bias [B, L, L] is added to every head's scores. With `bias_as_given`,
        the bias alone decides who sees whom (the block-causal contract: the caller folds padding in).
        """
        b, length = ids.shape
        if attention_mask is not None:
            attention_mask = attention_mask.bool()
        if position_ids is None:
            position_ids = default_positions(attention_mask, ids)
        if attention_bias is not None and attention_bias.shape != (b, length, length):
            raise ValueError(f"attention_bias must have shape {[b, length, length]}, got {list(attention_bias.shape)}")
        keys = None if bias_as_given and attention_bias is not None else attention_mask
        return self._call("_run", ids, keys, position_ids, attention_bias)

    def forward_window(self, ids: torch.Tensor, attention_mask: torch.Tensor | None, position_ids: torch.Tensor,
                       keys: list[torch.Tensor], values: list[torch.Tensor], slots: torch.Tensor | None,
                       own: torch.Tensor, keep: torch.Tensor | None, start: int) -> torch.Tensor:
        """Raw logits [b, W, out_size] of canvas columns [start, start + W) under a per-row cache
        (the prefix/dual cache, `cache.py`; the delayed prefix cache, `delayed_cache.py`).

        Each row attends to all L columns: its stored keys/values (`keys[l][slots]`; slots None:
        rows 0..b-1 of the buffers) except at its `own` [b, W] columns, where the fresh ones are
        used. `attention_mask` [b, L] masks pad keys (None: no padding). Afterwards the buffers
        keep the fresh keys/values at the `keep` [b, W] columns (None: none).
        """
        if attention_mask is not None:
            attention_mask = attention_mask.bool()
        return self._call("_run_window", ids, attention_mask, position_ids, keys, values, slots, own, keep, start)

    def forward_cached(self, ids: torch.Tensor, kv: BlockKV, rows: torch.Tensor, start: int,
                       position_ids: torch.Tensor, attention_bias: torch.Tensor,
                       store: torch.Tensor | None = None) -> torch.Tensor:
        """Raw logits [b, W, out_size] of canvas columns [start, start + W) of the kv rows `rows`.

        The window's queries attend to the stored keys/values of columns [0, start) and to the
        window's own, with `attention_bias` [b, W, start + W] added as given; afterwards the
        keys/values of the positions where `store` [b, W] is True are written into `kv`.
        `rows` are distinct and increasing (the engine's); all `kv.batch` of them read the
        buffers in place.
        """
        b, width = ids.shape
        if attention_bias.shape != (b, width, start + width):
            raise ValueError(f"attention_bias must have shape {[b, width, start + width]}, "
                             f"got {list(attention_bias.shape)}")
        kv.check_window(rows, start, width)
        index: torch.Tensor | None = rows
        if b == kv.batch:
            torch._assert_async((rows == torch.arange(b, device=rows.device)).all(), "rows must be 0..batch-1")
            index = None
        return self._call("_run_cached", ids, kv.keys, kv.values, index, start, position_ids, attention_bias, store)

    # ------------------------------------------------------------------ their bodies (compiled whole)
    def _start(self, ids: torch.Tensor, position_ids: torch.Tensor):
        x = self.embed(ids)
        if self.spec.input_scale != 1.0:
            x = x * self.spec.input_scale
        cos, sin = self.rotary.tables(position_ids, x.dtype)
        return x, cos, sin

    def _run(self, ids, keys, position_ids, attention_bias):
        x, cos, sin = self._start(ids, position_ids)
        mask = attention_mask_for(keys, attention_bias, x.dtype)
        for layer in self.layers:
            q, k, v = layer.qkv(x, cos, sin)
            x = layer.mlp(x, attend(q, k, v, mask))
        return self._logits(x)

    def _run_window(self, ids, attention_mask, position_ids, keys, values, slots, own, keep, start):
        x, cos, sin = self._start(ids, position_ids)
        mask = None if attention_mask is None else attention_mask[:, None, None, :]
        for i, layer in enumerate(self.layers):
            q, k, v = layer.qkv(x, cos, sin)
            all_k, saved_k = window_kv(keys[i], slots, k, own, start)
            all_v, saved_v = window_kv(values[i], slots, v, own, start)
            att = attend(q, all_k, all_v, mask)
            restore_kv(keys[i], slots, k, start, saved_k, keep)
            restore_kv(values[i], slots, v, start, saved_v, keep)
            x = layer.mlp(x, att)
        return self._logits(x)

    def _run_cached(self, ids, keys, values, rows, start, position_ids, attention_bias, store):
        x, cos, sin = self._start(ids, position_ids)
        mask = attention_bias.to(x.dtype)[:, None]
        for i, layer in enumerate(self.layers):
            q, k, v = layer.qkv(x, cos, sin)
            all_k = prefix_and_window(keys[i], rows, start, k)
            all_v = prefix_and_window(values[i], rows, start, v)
            if store is not None:
                store_window(keys[i], rows, start, k, store)
                store_window(values[i], rows, start, v, store)
            x = layer.mlp(x, attend(q, all_k, all_v, mask))
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
        kv = BlockKV.zeros(len(self.layers), batch, self.spec.kv_heads, length, self.spec.head_dim,
                           dtype=w.dtype, device=w.device)
        self.mark_static(kv.keys + kv.values)
        return kv


def default_positions(attention_mask: torch.Tensor | None, ids: torch.Tensor | None = None) -> torch.Tensor:
    """[B, L] position ids counting from each row's first real token (pads get 0); 0..L-1 without a mask."""
    if attention_mask is None:
        b, length = ids.shape
        return torch.arange(length, device=ids.device).unsqueeze(0).expand(b, length)
    return (attention_mask.long().cumsum(-1) - 1).clamp(min=0)


def attention_mask_for(keys: torch.Tensor | None, bias: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    """SDPA mask: None when nothing is hidden, a boolean key mask for padding, a float mask with a bias."""
    if bias is None:
        return None if keys is None else keys[:, None, None, :]
    out = bias.to(dtype)
    if keys is not None:
        out = out.masked_fill(~keys[:, None, :], float("-inf"))
    return out[:, None]
