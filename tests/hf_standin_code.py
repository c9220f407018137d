"""Stand-ins for remote-code dLLMs (LLaDA, Dream), saved into test checkpoints as their model code.

No tests here: `test_models_hf.py` copies this file next to tiny random weights so the
`hf:` loader goes through its remote-code adapters (explicit `family=` and
`trust_remote_code=true`: the real model_types "llada" and "Dream" load natively).
The forward mimics each family's signature: LLaDA takes a 2-D 0/1 mask and places new
tokens right after `past_key_values`; Dream takes "full" or a 4-D boolean mask and
explicit `position_ids`. Attention is bidirectional; positions are learned embeddings
added to the input, so in a one-layer model a position's keys/values depend only on
its own token and position (what makes cached and uncached decoding agree exactly).
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutputWithPast


class _StandInConfig(PretrainedConfig):
    vocab_size: int = 64
    hidden_size: int = 32
    num_hidden_layers: int = 1
    num_attention_heads: int = 2
    max_position_embeddings: int = 512
    mask_token_id: int = 1


class LLaDAStandInConfig(_StandInConfig):
    model_type = "llada_standin"  # not "llada": that model_type loads natively, never through remote code


class DreamStandInConfig(_StandInConfig):
    model_type = "dream_standin"  # not "Dream", for the same reason


class _Layer(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)
        self.mlp = nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, 2 * hidden), nn.GELU(), nn.Linear(2 * hidden, hidden))

    def forward(self, h, key_mask, past):
        b, q, d = h.shape
        qkv = self.qkv(self.norm(h)).view(b, q, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        query, key, value = qkv[0], qkv[1], qkv[2]
        if past is not None:
            key = torch.cat([past[0], key], dim=-2)
            value = torch.cat([past[1], value], dim=-2)
        attn = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=key_mask)
        h = h + self.out(attn.transpose(1, 2).reshape(b, q, d))
        return h + self.mlp(h), (key, value)


class _StandInLM(PreTrainedModel):
    base_model_prefix = "model"

    def __init__(self, config):
        super().__init__(config)
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.pos = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.layers = nn.ModuleList(
            [_Layer(config.hidden_size, config.num_attention_heads) for _ in range(config.num_hidden_layers)]
        )
        self.head = nn.Linear(config.hidden_size, config.vocab_size)
        self.post_init()

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.5)

    def get_input_embeddings(self):
        return self.embed

    def _run(self, input_ids, key_mask, positions, past, use_cache):
        h = self.embed(input_ids) + self.pos(positions)
        new = []
        for i, layer in enumerate(self.layers):
            h, kv = layer(h, key_mask, None if past is None else past[i])
            new.append(kv)
        return CausalLMOutputWithPast(logits=self.head(h), past_key_values=new if use_cache else None)


def _legacy(past):
    if past is None or isinstance(past, (list, tuple)):
        return past
    return [(layer.keys, layer.values) for layer in past.layers]


class LLaDAStandInLM(_StandInLM):
    config_class = LLaDAStandInConfig

    def forward(self, input_ids, attention_mask=None, past_key_values=None, use_cache=False, **kwargs):
        past = _legacy(past_key_values)
        cached = past[0][0].shape[-2] if past else 0
        q = input_ids.shape[1]
        positions = torch.arange(cached, cached + q, device=input_ids.device).unsqueeze(0)
        key_mask = None
        if attention_mask is not None:
            key_mask = attention_mask.bool()[:, None, None, :].expand(-1, 1, q, -1)
        return self._run(input_ids, key_mask, positions.expand(input_ids.shape[0], -1), past, use_cache)


class DreamStandInLM(_StandInLM):
    config_class = DreamStandInConfig

    def forward(self, input_ids, attention_mask=None, position_ids=None, past_key_values=None, use_cache=False, **kwargs):
        past = _legacy(past_key_values)
        cached = past[0][0].shape[-2] if past else 0
        if position_ids is None:
            position_ids = torch.arange(cached, cached + input_ids.shape[1], device=input_ids.device).unsqueeze(0)
            position_ids = position_ids.expand(input_ids.shape[0], -1)
        key_mask = None if isinstance(attention_mask, str) or attention_mask is None else attention_mask.bool()
        return self._run(input_ids, key_mask, position_ids, past, use_cache)
