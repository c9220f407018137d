"""Types shared by the HF dLLM net (`net.py`) and its KV cache (`cache.py`).

They live apart so that neither of those two modules has to import the other's
internals: `net.py` builds a cache, and the cache only needs these types plus the
few net methods listed in `cache.CachedNet`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

KV = list[tuple[torch.Tensor, torch.Tensor]]  # per layer (keys, values), [B, heads, T, head_dim]


@dataclass
class Session:
    """One decode call: its generation length and semi-AR block length (None = one block)."""

    gen_length: int
    block_length: int | None = None
    seed: int = 0
