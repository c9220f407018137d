"""A tiny LLaDA-shaped dLLM saved as remote code into the LoRA fine-tuning tests' checkpoints.

No tests here: `test_finetune.py` copies this file next to random weights. The layout names
its attention projections like the published LLaDA checkpoints (`transformer.blocks.N.q_proj`,
`k_proj`, `v_proj`), which is what LoRA targets; the forward has LLaDA's signature (a 2-D
0/1 attention mask, no position ids). model_type is not "llada", so it loads through the
remote-code adapter with explicit family=llada and trust_remote_code=true.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutputWithPast


class FtStandInConfig(PretrainedConfig):
    model_type = "llada_ftstandin"

    def __init__(self, vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                 max_position_embeddings=512, mask_token_id=1, **kwargs):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.max_position_embeddings = max_position_embeddings
        self.mask_token_id = mask_token_id
        super().__init__(**kwargs)


class _Block(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.attn_norm = nn.LayerNorm(d)
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, d, bias=False)
        self.v_proj = nn.Linear(d, d, bias=False)
        self.attn_out = nn.Linear(d, d, bias=False)
        self.ff = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, h, key_mask):
        b, q, d = h.shape
        x = self.attn_norm(h)

        def split(t):
            return t.view(b, q, self.heads, d // self.heads).transpose(1, 2)

        a = torch.nn.functional.scaled_dot_product_attention(split(self.q_proj(x)), split(self.k_proj(x)),
                                                             split(self.v_proj(x)), attn_mask=key_mask)
        h = h + self.attn_out(a.transpose(1, 2).reshape(b, q, d))
        return h + self.ff(h)


class _Transformer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.wte = nn.Embedding(config.vocab_size, config.hidden_size)
        self.wpe = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.blocks = nn.ModuleList(_Block(config.hidden_size, config.num_attention_heads)
                                    for _ in range(config.num_hidden_layers))
        self.ff_out = nn.Linear(config.hidden_size, config.vocab_size, bias=False)


class FtStandInLM(PreTrainedModel):
    config_class = FtStandInConfig
    base_model_prefix = "model"

    def __init__(self, config):
        super().__init__(config)
        self.transformer = _Transformer(config)
        self.post_init()

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.2)

    def get_input_embeddings(self):
        return self.transformer.wte

    def forward(self, input_ids, attention_mask=None, past_key_values=None, use_cache=False, **kwargs):
        t = self.transformer
        b, q = input_ids.shape
        positions = torch.arange(q, device=input_ids.device).unsqueeze(0).expand(b, q)
        h = t.wte(input_ids) + t.wpe(positions)
        key_mask = None if attention_mask is None else attention_mask.bool()[:, None, None, :].expand(b, 1, q, q)
        for block in t.blocks:
            h = block(h, key_mask)
        return CausalLMOutputWithPast(logits=t.ff_out(h))
