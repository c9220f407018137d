"""A small block-causal transformer that implements the BlockCausalModel contract (a test double).

Random weights, a few layers, learned absolute positions (no RoPE), pre-norm attention + MLP.
Both paths of the contract: `forward` (uncached; the engine's position_ids / attention_bias
applied as given, or the plain default) and `new_kv_cache` / `forward_cached` (the exact KV
cache). The mask token is never predicted (its logit is pushed far down), as a trained net's.
Unstored cache columns hold large random values, so a bias that failed to block them would
change the logits.
"""

from __future__ import annotations

import math

import torch

NEG_INF = float("-inf")


class _Layer(torch.nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1 = torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.out = torch.nn.Linear(dim, dim)
        self.norm2 = torch.nn.LayerNorm(dim)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(dim, 2 * dim), torch.nn.GELU(), torch.nn.Linear(2 * dim, dim))

    def split(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        b, n, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        shape = (b, n, self.heads, d // self.heads)
        return (t.reshape(shape).transpose(1, 2) for t in (q, k, v))

    def finish(self, x: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor):
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]) + bias.unsqueeze(1)
        attn = torch.softmax(scores, dim=-1) @ v
        b, _, n, _ = attn.shape
        x = x + self.out(attn.transpose(1, 2).reshape(b, n, -1))
        return x + self.mlp(self.norm2(x))


class ToyBlockNet(torch.nn.Module):
    block_causal = True
    supports_attention_bias = True
    supports_kv_cache = True

    def __init__(self, vocab: int = 40, dim: int = 32, layers: int = 2, heads: int = 2, *, mask_id: int = 0,
                 eos_id: int = 1, block_size: int | None = None, default_block_length: int = 4,
                 cache_mode: str = "none", seed: int = 0, max_len: int = 512, scale: float = 3.0,
                 eos_boost: float = 0.0):
        super().__init__()
        torch.manual_seed(seed)
        self.vocab_size, self.mask_id, self.eos_id = vocab, mask_id, eos_id
        self.block_size, self.default_block_length, self.cache_mode = block_size, default_block_length, cache_mode
        self.scale, self.eos_boost = scale, eos_boost
        self.embed = torch.nn.Embedding(vocab, dim)
        self.pos = torch.nn.Embedding(max_len, dim)
        self.layers = torch.nn.ModuleList(_Layer(dim, heads) for _ in range(layers))
        self.norm = torch.nn.LayerNorm(dim)
        self.head = torch.nn.Linear(dim, vocab)
        self.calls = 0  # model calls of either path
        self.eval()

    def _logits(self, x: torch.Tensor) -> torch.Tensor:
        z = self.head(self.norm(x)) * self.scale
        z[..., self.eos_id] += self.eos_boost
        z[..., self.mask_id] = -1e4
        return z

    @torch.no_grad()
    def forward(self, canvas, *, attention_mask=None, rows=None, position_ids=None, attention_bias=None):
        self.calls += 1
        b, n = canvas.shape
        if attention_mask is None:
            attention_mask = torch.ones_like(canvas, dtype=torch.bool)
        if position_ids is None:
            position_ids = (attention_mask.long().cumsum(dim=1) - 1).clamp(min=0)
        if attention_bias is None:  # plain call: bidirectional over the non-pad keys
            see = attention_mask.bool().unsqueeze(1).expand(b, n, n) | torch.eye(n, dtype=torch.bool)
            attention_bias = torch.zeros(b, n, n).masked_fill(~see, NEG_INF)
        x = self.embed(canvas) + self.pos(position_ids)
        for layer in self.layers:
            q, k, v = layer.split(x)
            x = layer.finish(x, q, k, v, attention_bias.to(x.dtype))
        return self._logits(x)

    __call__ = forward

    def new_kv_cache(self, batch: int, length: int):
        g = torch.Generator().manual_seed(1234)
        heads = self.layers[0].heads
        dh = self.embed.embedding_dim // heads
        return [
            [torch.randn(batch, heads, length, dh, generator=g) * 100.0, torch.randn(batch, heads, length, dh, generator=g) * 100.0]
            for _ in self.layers
        ]

    @torch.no_grad()
    def forward_cached(self, ids, *, kv, rows, start, position_ids, attention_bias, store=None):
        self.calls += 1
        x = self.embed(ids) + self.pos(position_ids)
        for layer, (keys, values) in zip(self.layers, kv):
            q, k, v = layer.split(x)
            all_k = torch.cat([keys[rows, :, :start], k], dim=2)
            all_v = torch.cat([values[rows, :, :start], v], dim=2)
            x = layer.finish(x, q, all_k, all_v, attention_bias.to(x.dtype))
            if store is not None:
                r, j = store.nonzero(as_tuple=True)
                keys[rows[r], :, start + j] = k[r, :, j]
                values[rows[r], :, start + j] = v[r, :, j]
        return self._logits(x)


def block_causal_mask(length: int, block_length: int) -> torch.Tensor:
    """[length, length] additive bias of the official routines' single-row layout: position i sees j
    iff j // B <= i // B (the prompt from position 0, no padding)."""
    blk = torch.arange(length) // block_length
    see = blk.unsqueeze(0) <= blk.unsqueeze(1)
    return torch.zeros(length, length).masked_fill(~see, NEG_INF)


def official_forward(net: ToyBlockNet, x: torch.Tensor, block_length: int) -> torch.Tensor:
    """The official routines' model call on one row x [1, L]: positions 0..L-1, block-causal mask."""
    n = x.shape[1]
    return net.forward(x, position_ids=torch.arange(n).unsqueeze(0), attention_bias=block_causal_mask(n, block_length).unsqueeze(0))
