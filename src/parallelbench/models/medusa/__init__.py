"""Medusa-style parallel decoding of autoregressive models (the paper's appendix on Medusa).

A frozen causal LM gets extra heads; head i reads the last hidden state at position t and
guesses the token at t + 2 + i (the backbone's own head guesses t + 1). Decoding commits a
fixed k tokens per forward call (`--strategy medusa`, the paper's study: no verification)
or keeps only the prefix the backbone agrees with (`--strategy medusa-verified`, Medusa's
greedy acceptance).

    parallelbench medusa train --model hf:smollm2 --heads 4 --out heads/
    parallelbench run --model hf:smollm2 --model-opt medusa=heads/ --strategy medusa --k 1,2,3
"""

from parallelbench.models.medusa.heads import MedusaError, MedusaHeads, load_heads, save_heads

__all__ = ["MedusaError", "MedusaHeads", "load_heads", "save_heads"]
